"""``chat_route`` continues the caller's trace: an incoming W3C ``traceparent`` parents the run's span."""

from __future__ import annotations

import httpx
import pytest
from starlette.applications import Starlette

from agentstream import Agent, Mastra, instrument
from agentstream._app import create_app
from agentstream.server import chat_route
from agentstream.testing import ScriptedModel

from .conftest import Spans
from .test_run_spans import text_step

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN_ID = "00f067aa0ba902b7"
USER = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}


def app(spans: Spans) -> Starlette:
    agent = Agent(
        id="helper",
        name="Helper",
        model=ScriptedModel([text_step("Hello.")] * 3),
        instrument=spans.settings(),
    )
    return Starlette(routes=[chat_route(Mastra(agents={"helper": agent}))])


async def post(app: Starlette, headers: dict[str, str]) -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        r = await client.post(
            "/chat/helper",
            json={"id": "c1", "messages": [USER], "trigger": "submit-message"},
            headers=headers,
        )
    assert r.status_code == 200 and '"delta":"Hello."' in r.text


async def test_traceparent_parents_the_run_span(spans: Spans) -> None:
    await post(app(spans), {"traceparent": f"00-{TRACE_ID}-{SPAN_ID}-01"})
    run = spans.named("invoke_agent Helper")
    assert run.parent is not None and run.parent.is_remote
    assert format(run.parent.span_id, "016x") == SPAN_ID
    assert {format(s.context.trace_id, "032x") for s in spans.finished if s.context} == {TRACE_ID}


async def test_without_or_with_a_malformed_traceparent_the_run_is_a_root(spans: Spans) -> None:
    served = app(spans)
    await post(served, {})
    await post(served, {"traceparent": "00-not-a-trace-01"})
    runs = [s for s in spans.finished if s.name == "invoke_agent Helper"]
    assert len(runs) == 2 and all(s.parent is None for s in runs)
    assert format(runs[0].context.trace_id, "032x") != TRACE_ID  # type: ignore[union-attr]


@pytest.mark.looptime  # the demo model paces its tokens with asyncio.sleep
async def test_serve_app_continues_the_callers_trace(spans: Spans) -> None:
    instrument(spans.provider)  # what an app served with `agentstream serve --app` would do
    app = create_app(delay_in_ms=None, heartbeat_ms=0)
    body = {
        "id": "c1",
        "trigger": "submit-message",
        "messages": [
            {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "What is the weather in Paris?"}]}
        ],
    }
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        response = await client.post(
            "/api/chat/demo", json=body, headers={"traceparent": f"00-{TRACE_ID}-{SPAN_ID}-01"}
        )
    assert response.status_code == 200
    assert spans.tree(spans.named("invoke_agent Demo Agent")) == (
        "invoke_agent Demo Agent",
        [("chat demo", []), ("execute_tool weather", []), ("chat demo", [])],
    )
    run = spans.named("invoke_agent Demo Agent")
    assert run.parent is not None and format(run.parent.span_id, "016x") == SPAN_ID
    assert {format(s.context.trace_id, "032x") for s in spans.finished if s.context} == {TRACE_ID}
