"""``POST /api/observability/traces/query`` over real HTTP, with the predicates Studio's traces
pages send (`_trace_where`): an agent's Traces tab asks for the traces whose root is an agent run
and some span of which is that agent (its exact body below); ``or``, ``not``, ``ne`` and ``in``
over the trace's row; a predicate we do not evaluate is Mastra's 501 naming it, a malformed one a
400 naming where; another user's traces never match."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentstream._app import create_app
from agentstream._demo import demo_mastra
from agentstream.server import RequestGuard
from agentstream.storage import SQLiteStore
from tests.mastra_api._flows_server import ALICE, BOB, auth
from tests.mastra_api.conftest import serving


@pytest.fixture
def traced(tmp_path: Path) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    """Alice's agent chat and workflow run, traced by the served app; clients for Alice and Bob."""
    storage = SQLiteStore(tmp_path / "query.db")
    app = create_app(demo_mastra(storage=storage), guard=RequestGuard(auth=auth), delay_in_ms=None)
    with (
        serving(app) as url,
        httpx.Client(base_url=f"{url}/api", headers=ALICE, timeout=30) as alice,
        httpx.Client(base_url=f"{url}/api", headers=BOB, timeout=30) as bob,
    ):
        said = alice.post(
            "/agents/demo/generate",
            json={"messages": "Explain how rainbows form", "memory": {"thread": "q1", "resource": "alice"}},
        )
        assert said.status_code == 200, said.text
        run = alice.post("/workflows/publish-article/start-async", json={"inputData": {"topic": "tides"}})
        assert run.status_code == 200, run.text
        yield alice, bob


def _week() -> dict[str, str]:
    now = datetime.now(UTC)
    return {"from": (now - timedelta(days=7)).isoformat(), "to": (now + timedelta(minutes=1)).isoformat()}


def _eq(path: str, value: Any) -> dict[str, Any]:
    return {"op": "eq", "left": {"path": path}, "right": {"literal": value}}


def _query(client: httpx.Client, where: Any) -> httpx.Response:
    body = {
        "timeRange": _week(),
        "where": where,
        "orderBy": [{"field": "startedAt", "direction": "desc"}],
        "page": {"limit": 25, "after": None},
    }
    return client.post("/observability/traces/query", json=body)


def _names(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 200, answer.text
    return sorted(t["name"] for t in answer.json()["traces"])


def test_the_agent_traces_tab_s_query_finds_the_agent_s_traces(
    traced: tuple[httpx.Client, httpx.Client],
) -> None:
    alice, bob = traced

    def tab(agent_id: str) -> dict[str, Any]:  # what Studio sent from /agents/:agentId/traces
        agent = _eq("entityType", "agent")
        return {"op": "and", "args": [agent, agent, {"spans": {"some": _eq("entityId", agent_id)}}]}

    assert _names(_query(alice, tab("demo-agent"))) == ["agent run: 'demo-agent'"]
    # the workflow's writer step runs the agent ``writer``: a span of the workflow's trace, whose
    # root is the workflow run (so not on the writer's tab)
    assert _names(_query(alice, {"spans": {"some": _eq("entityId", "writer")}})) == [
        "workflow run: 'publish-article'"
    ]
    assert _names(_query(alice, tab("writer"))) == []
    assert _names(_query(alice, tab("someone-else"))) == []
    assert _names(_query(bob, tab("demo-agent"))) == []  # Alice's traces are not Bob's


def test_or_not_ne_and_in_over_the_trace_s_row(traced: tuple[httpx.Client, httpx.Client]) -> None:
    alice, _ = traced
    both = ["agent run: 'demo-agent'", "workflow run: 'publish-article'"]
    either = {"op": "or", "args": [_eq("entityType", "agent"), _eq("entityType", "workflow_run")]}
    assert _names(_query(alice, either)) == both
    assert _names(_query(alice, {"op": "not", "arg": _eq("entityType", "agent")})) == both[1:]
    ne = {"op": "ne", "left": {"path": "entityId"}, "right": {"literal": "publish-article"}}
    assert _names(_query(alice, ne)) == both[:1]
    among = {"op": "in", "value": {"path": "entityName"}, "set": ["publish-article", "x"]}
    assert _names(_query(alice, among)) == both[1:]
    assert _names(_query(alice, {**among, "op": "notIn"})) == both[:1]
    assert _names(_query(alice, _eq("status", "success"))) == both
    assert _names(_query(alice, {"op": "exists", "path": "threadId"})) == both[:1]  # the chat's thread
    assert _names(_query(alice, {"op": "notExists", "path": "threadId"})) == both[1:]
    assert _names(_query(alice, {"spans": {"none": _eq("entityId", "writer")}})) == both[:1]


def test_what_we_do_not_evaluate_is_mastra_s_501_and_a_malformed_predicate_a_400(
    traced: tuple[httpx.Client, httpx.Client],
) -> None:
    alice, _ = traced
    like = {"op": "contains", "left": {"path": "name"}, "right": {"literal": "agent"}}
    refused = _query(alice, {"op": "and", "args": [_eq("entityType", "agent"), like]})
    assert refused.status_code == 501
    assert refused.json() == {
        "code": "TRACE_QUERY_UNSUPPORTED",
        "message": "where.args[1]: the operator 'contains' is not supported by this server",
    }
    nested = _query(alice, _eq("attributes.model", "demo"))
    assert nested.status_code == 501 and "nested fields" in nested.json()["message"]
    scores = _query(alice, {"scores": {"some": _eq("value", 1)}})
    assert scores.status_code == 501 and scores.json()["message"].startswith("where.scores:")
    malformed = _query(alice, {"op": "and", "args": "entityType"})
    assert malformed.status_code == 400 and "where.args: expected a list of predicates" in malformed.text
    bad_in = _query(alice, {"op": "in", "value": {"path": "status"}, "set": "success"})
    assert bad_in.status_code == 400 and "where.set: expected a non-empty list of values" in bad_in.text
    bad_side = _query(alice, {"op": "eq", "left": {"field": "status"}, "right": {"literal": "x"}})
    assert bad_side.status_code == 400 and "where.left: expected {path} or {literal}" in bad_side.text
