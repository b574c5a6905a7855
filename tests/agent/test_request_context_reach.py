"""The run's `RequestContext` reaches its processors (Mastra's ``requestContext`` in every
processor method) and its sub-agents, as one object for the whole run."""

from __future__ import annotations

from typing import Any

from agentstream import Agent, RequestContext
from agentstream.testing import ScriptedModel

USAGE = {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}


def _text(text: str) -> list[dict[str, Any]]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": text},
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": USAGE},
    ]


class Seeing:
    """A processor in every phase, recording the context each call got."""

    id = "seeing"

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    def _saw(self, phase: str, request_context: RequestContext) -> None:
        self.seen.append((phase, request_context))

    async def process_input(self, *, messages: Any, request_context: RequestContext, **_: Any) -> Any:
        self._saw("input", request_context)
        request_context.set("checked", True)  # what an input processor sets, later phases see
        return None

    async def process_input_step(self, *, request_context: RequestContext, **_: Any) -> Any:
        self._saw("input_step", request_context)

    async def process_output_stream(self, *, part: Any, request_context: RequestContext, **_: Any) -> Any:
        if part.type == "text-delta":
            self._saw("output_stream", request_context)
        return part

    async def process_output_step(self, *, request_context: RequestContext, **_: Any) -> Any:
        self._saw("output_step", request_context)

    async def process_output_result(self, *, request_context: RequestContext, **_: Any) -> Any:
        self._saw("output_result", request_context)


async def test_every_processor_phase_gets_the_run_s_context() -> None:
    seeing = Seeing()
    agent = Agent(
        id="a", model=ScriptedModel([_text("hi")]), input_processors=[seeing], output_processors=[seeing]
    )
    assert await agent.stream("q", request_context={"tenant": "acme"}).text == "hi"
    phases = [phase for phase, _ in seeing.seen]
    assert phases == ["input", "input_step", "output_stream", "output_step", "output_result"]
    contexts = [context for _, context in seeing.seen]
    assert all(c is contexts[0] for c in contexts)  # one object for the run
    assert contexts[0] == {"tenant": "acme", "checked": True}


async def test_error_processors_get_it_too() -> None:
    seen: list[Any] = []

    class Retry:
        id = "retry"

        async def process_api_error(self, *, request_context: RequestContext, **_: Any) -> Any:
            seen.append(request_context.get("tenant"))
            return {"retry": True}

    steps: list[Any] = [{"throws": {"name": "APICallError", "message": "busy"}}, _text("ok")]
    agent = Agent(id="a", model=ScriptedModel(steps), error_processors=[Retry()])
    assert await agent.stream("q", request_context={"tenant": "acme"}).text == "ok"
    assert seen == ["acme"]


async def test_a_sub_agent_runs_with_the_parent_s_context() -> None:
    seen: list[Any] = []

    def instructions(request_context: RequestContext) -> str:
        seen.append(request_context.get("tenant"))
        return "helper"

    helper = Agent(
        id="helper", description="helps", instructions=instructions, model=ScriptedModel([_text("done")])
    )
    call = [
        {"type": "stream-start", "warnings": []},
        {"type": "tool-call", "toolCallId": "c1", "toolName": "agent-helper", "input": '{"prompt": "go"}'},
        {"type": "finish", "finishReason": "tool-calls", "usage": USAGE},
    ]
    parent = Agent(id="p", model=ScriptedModel([call, _text("all done")]), agents={"helper": helper})
    assert await parent.stream("q", request_context={"tenant": "globex"}).text == "all done"
    assert seen == ["globex"]
