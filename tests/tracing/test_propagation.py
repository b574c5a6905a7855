"""``chat_route`` continues the caller's trace: an incoming W3C ``traceparent`` parents the run's span."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.testclient import TestClient

from agentstream import Agent, Mastra
from agentstream.server import chat_route
from agentstream.testing import ScriptedModel

from .conftest import Spans
from .test_run_spans import text_step

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN_ID = "00f067aa0ba902b7"
USER = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}


def app(spans: Spans) -> Starlette:
    agent = Agent(id="helper", name="Helper", model=ScriptedModel([text_step("Hello.")] * 3),
                  instrument=spans.settings())
    return Starlette(routes=[chat_route(Mastra(agents={"helper": agent}))])


def post(client: TestClient, headers: dict[str, str]) -> None:
    r = client.post("/chat/helper", json={"id": "c1", "messages": [USER], "trigger": "submit-message"},
                    headers=headers)
    assert r.status_code == 200 and '"delta":"Hello."' in r.text


def test_traceparent_parents_the_run_span(spans: Spans) -> None:
    client = TestClient(app(spans))
    post(client, {"traceparent": f"00-{TRACE_ID}-{SPAN_ID}-01"})
    run = spans.named("invoke_agent Helper")
    assert run.parent is not None and run.parent.is_remote
    assert format(run.parent.span_id, "016x") == SPAN_ID
    assert {format(s.context.trace_id, "032x") for s in spans.finished if s.context} == {TRACE_ID}


def test_without_or_with_a_malformed_traceparent_the_run_is_a_root(spans: Spans) -> None:
    client = TestClient(app(spans))
    post(client, {})
    post(client, {"traceparent": "00-not-a-trace-01"})
    runs = [s for s in spans.finished if s.name == "invoke_agent Helper"]
    assert len(runs) == 2 and all(s.parent is None for s in runs)
    assert format(runs[0].context.trace_id, "032x") != TRACE_ID  # type: ignore[union-attr]
