"""The Mastra API's observability routes over real HTTP, on the spans a served ``create_app``
keeps in its storage by default (its lifespan's `record_spans_while_serving`): a workflow run (with an agent step) and an agent chat become traces in Mastra's
AI span shapes, listed (paged, filtered, light, delta), read whole and span by span; another
user's traces do not exist for them; refusals name the field."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentstream._app import create_app
from agentstream._demo import demo_mastra
from agentstream.server import RequestGuard
from agentstream.storage import SQLiteStore
from agentstream.tracing import global_settings, instrument
from tests.mastra_api._flows_server import ALICE, BOB, auth
from tests.mastra_api.conftest import serving


@pytest.fixture
def base(tmp_path: Path) -> Iterator[str]:
    storage = SQLiteStore(tmp_path / "traces.db")
    app = create_app(demo_mastra(storage=storage), guard=RequestGuard(auth=auth), delay_in_ms=None)
    with serving(app) as url:
        yield url
    assert global_settings() is None  # the app switched off the tracing it switched on


def test_an_app_built_with_record_traces_false_keeps_none(tmp_path: Path) -> None:
    storage = SQLiteStore(tmp_path / "untraced.db")
    app = create_app(
        demo_mastra(storage=storage), guard=RequestGuard(auth=auth), delay_in_ms=None, record_traces=False
    )
    with serving(app) as url, _client(url, ALICE) as alice:
        _run_workflow(alice)
        assert global_settings() is None
        assert alice.get("/observability/traces").json()["pagination"]["total"] == 0
        # what Studio is told (it enables an agent's Traces tab only when this is true)
        assert alice.get("/system/packages").json()["observabilityEnabled"] is False


def test_system_packages_says_observability_is_on_while_the_app_records_its_traces(tmp_path: Path) -> None:
    from agentstream.tracing import record_spans

    storage = SQLiteStore(tmp_path / "said.db")
    app = create_app(demo_mastra(storage=storage), guard=RequestGuard(auth=auth), delay_in_ms=None)
    with serving(app) as url, _client(url, ALICE) as alice:
        assert alice.get("/system/packages").json()["observabilityEnabled"] is True
    # the app stopped recording when it stopped serving: served again with record_traces=False
    # (no recorder writes into this storage any more), it says so; a recorder the caller makes says on
    quiet = create_app(
        demo_mastra(storage=storage), guard=RequestGuard(auth=auth), delay_in_ms=None, record_traces=False
    )
    with serving(quiet) as url, _client(url, ALICE) as alice:
        assert alice.get("/system/packages").json()["observabilityEnabled"] is False
        own = record_spans(storage)
        try:
            assert alice.get("/system/packages").json()["observabilityEnabled"] is True
        finally:
            own.shutdown()
            instrument(enabled=False)
        assert alice.get("/system/packages").json()["observabilityEnabled"] is False


def test_tracing_the_app_switched_on_itself_is_recorded_once_and_stays_on(tmp_path: Path) -> None:
    from opentelemetry.sdk.trace import TracerProvider

    from agentstream.tracing import record_spans

    saved: list[str] = []

    class Counting(SQLiteStore):
        async def save_spans(self, spans: Any) -> None:
            saved.extend(s.span_id for s in spans)  # the store upserts: a duplicate would not show
            await super().save_spans(spans)

    storage = Counting(tmp_path / "own.db")
    own = record_spans(storage)  # the app's own choice, made before serving
    settings = global_settings()
    try:
        app = create_app(demo_mastra(storage=storage), guard=RequestGuard(auth=auth), delay_in_ms=None)
        with serving(app) as url, _client(url, ALICE) as alice:
            _run_workflow(alice)
            trace = alice.get("/observability/traces").json()["spans"][0]["traceId"]
            spans = alice.get(f"/observability/traces/{trace}").json()["spans"]
            assert len(spans) > 3 and len(saved) == len(set(saved)) >= len(spans)  # each span saved once
        assert global_settings() is settings and isinstance(settings.tracer_provider, TracerProvider)
        assert not own._stopped  # the app stopped nothing it had not started
    finally:
        instrument(enabled=False)


def _client(base: str, headers: dict[str, str]) -> httpx.Client:
    return httpx.Client(base_url=f"{base}/api", headers=headers, timeout=30)


def _run_workflow(client: httpx.Client) -> str:
    started = client.post("/workflows/publish-article/start-async", json={"inputData": {"topic": "tides"}})
    assert started.status_code == 200 and started.json()["status"] == "suspended", started.text
    run_id: str = started.json()["runId"]
    return run_id


def _by_type(spans: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        out.setdefault(span["spanType"], []).append(span)
    return out


def test_a_workflow_run_is_a_trace_in_mastras_shape(base: str) -> None:
    with _client(base, ALICE) as alice:
        run_id = _run_workflow(alice)
        listed = alice.get("/observability/traces").json()
        assert listed["pagination"] == {"total": 1, "page": 0, "perPage": 10, "hasMore": False}
        root = listed["spans"][0]
        assert root["spanType"] == "workflow_run" and root["name"] == "workflow run: 'publish-article'"
        assert root["entityType"] == "workflow_run" and root["entityId"] == "publish-article"
        assert root["parentSpanId"] is None and root["status"] == "success" and root["runId"] == run_id
        assert root["resourceId"] == "alice" and root["startedAt"].endswith("Z") and root["endedAt"]

        trace = alice.get(f"/observability/traces/{root['traceId']}").json()
        assert trace["traceId"] == root["traceId"]
        kinds = _by_type(trace["spans"])
        steps = sorted(s["entityId"] for s in kinds["workflow_step"])
        assert steps == ["approve", "brief", "gather", "writer"], steps
        ids = {s["spanId"] for s in trace["spans"]}
        assert all(s["parentSpanId"] in ids for s in trace["spans"] if s is not kinds["workflow_run"][0])
        agent = kinds["agent_run"][0]
        assert agent["name"].startswith("agent run: '") and agent["entityType"] == "agent"
        model = kinds["model_generation"][0]
        assert model["parentSpanId"] == agent["spanId"] and model["attributes"]["model"] == "demo"
        assert model["attributes"]["usage"]["outputTokens"] > 0
        assert isinstance(model["input"], list) and model["input"][0]["role"] in ("system", "user")
        assert model["output"], model

        light = alice.get(f"/observability/traces/{root['traceId']}/light").json()
        assert {s["spanId"] for s in light["spans"]} == ids
        assert all("attributes" not in s and "input" not in s for s in light["spans"])
        one = alice.get(f"/observability/traces/{root['traceId']}/spans/{model['spanId']}").json()["span"]
        assert one["spanId"] == model["spanId"] and one["attributes"] == model["attributes"]
        rows = alice.get("/observability/traces/light").json()
        assert rows["spans"][0]["traceId"] == root["traceId"] and "attributes" not in rows["spans"][0]


def test_an_agent_chat_on_a_thread_is_its_resources_trace(base: str) -> None:
    with _client(base, ALICE) as alice, _client(base, BOB) as bob:
        said = alice.post(
            "/agents/demo/generate",
            json={"messages": "Explain how rainbows form", "memory": {"thread": "t1", "resource": "alice"}},
        )
        assert said.status_code == 200, said.text
        agents = alice.get(
            "/observability/traces", params={"entityType": "agent", "entityId": "demo-agent"}
        ).json()
        assert agents["pagination"]["total"] == 1, agents
        root = agents["spans"][0]
        assert root["spanType"] == "agent_run" and root["threadId"] == "t1" and root["resourceId"] == "alice"
        legacy = alice.get("/observability/traces", params={"name": "agent run: 'demo-agent'"}).json()
        assert [s["traceId"] for s in legacy["spans"]] == [root["traceId"]]
        assert bob.get("/observability/traces").json()["spans"] == []
        assert bob.get(f"/observability/traces/{root['traceId']}").status_code == 404


def test_filters_paging_delta_and_the_owner_rule(base: str) -> None:
    with _client(base, ALICE) as alice, _client(base, BOB) as bob:
        _run_workflow(alice)
        _run_workflow(alice)
        _run_workflow(bob)
        page = alice.get("/observability/traces", params={"perPage": 1, "page": 1}).json()
        assert page["pagination"] == {"total": 2, "page": 1, "perPage": 1, "hasMore": False}
        oldest = alice.get("/observability/traces", params={"direction": "ASC"}).json()["spans"]
        newest = alice.get("/observability/traces").json()["spans"]
        assert [s["traceId"] for s in oldest] == [s["traceId"] for s in reversed(newest)]
        assert alice.get("/observability/traces", params={"status": "error"}).json()["spans"] == []
        assert alice.get("/observability/traces", params={"spanType": "agent_run"}).json()["spans"] == []
        future = alice.get(
            "/observability/traces", params={"startedAt": '{"start": "2999-01-01T00:00:00Z"}'}
        ).json()
        assert future["spans"] == []
        first = alice.get("/observability/traces", params={"mode": "delta", "limit": 1}).json()
        assert len(first["spans"]) == 1 and first["delta"] == {"limit": 1, "hasMore": True}
        rest = alice.get(
            "/observability/traces", params={"mode": "delta", "after": first["deltaCursor"]}
        ).json()
        assert len(rest["spans"]) == 1 and rest["spans"][0]["traceId"] != first["spans"][0]["traceId"]
        theirs = bob.get("/observability/traces").json()
        assert theirs["pagination"]["total"] == 1
        for trace_id in (s["traceId"] for s in newest):
            assert bob.get(f"/observability/traces/{trace_id}").status_code == 404
            assert bob.get(f"/observability/traces/{trace_id}/light").status_code == 404
        assert bob.get("/observability/traces", params={"resourceId": "alice"}).status_code == 403
        assert httpx.get(f"{base}/api/observability/traces").status_code == 401


def test_refusals_name_the_field(base: str) -> None:
    with _client(base, ALICE) as alice:
        for params, field in [
            ({"perPage": "1000"}, "perPage"),
            ({"page": "x"}, "page"),
            ({"status": "weird"}, "status"),
            ({"spanType": "nope"}, "spanType"),
            ({"startedAt": "yesterday"}, "startedAt"),
            ({"startedAt": '{"start": "not a date"}'}, "startedAt.start"),
            ({"direction": "UP"}, "orderBy.direction"),
        ]:
            answer = alice.get("/observability/traces", params=params)
            assert answer.status_code == 400, (params, answer.text)
            assert answer.json()["issues"][0]["field"] == field, (params, answer.json())
        assert alice.get("/observability/traces/" + "f" * 300).status_code == 400
        missing = alice.get("/observability/traces/0123456789abcdef0123456789abcdef")
        assert missing.status_code == 404 and "not found" in missing.json()["error"]
