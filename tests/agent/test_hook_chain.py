"""One chain of hooks (``agent/_hooks.py``, ``agent/_plan.py``): every link forwards every seam, and
every combination of a run's concerns runs each processor phase exactly once."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

from agentstream import Mastra
from agentstream.agent import Agent, ChainedHooks, LoopHooks, PendingToolCall, StepInfo, _checkpoints
from agentstream.agent._hooks import SEAMS, LoopSeams, compose_hooks
from agentstream.agent._plan import CONCERNS
from agentstream.background import BackgroundTaskManager
from agentstream.memory import Memory
from agentstream.models import LanguageModel
from agentstream.storage import InMemoryStore
from agentstream.testing import ScriptedModel
from agentstream.tools import Tool, ToolContext
from agentstream.tracing import InstrumentationSettings

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


def test_seams_are_the_protocols_and_the_hooks_defaults() -> None:
    public = {n for n in dir(LoopHooks) if not n.startswith("_")}
    assert (
        set(SEAMS)
        == public
        == {*LoopSeams.__annotations__, *(n for n in vars(LoopSeams) if not n.startswith("_"))}
    )
    assert len(SEAMS) == 11  # ten methods and process_chunk


class _Recorder(LoopHooks):
    """Records the seam each call reached (the inner end of a chain)."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.process_chunk = self._chunk

    def _chunk(self, chunk: Any) -> Any:
        self.seen.append("process_chunk")
        return chunk

    def __getattribute__(self, name: str) -> Any:
        value = object.__getattribute__(self, name)
        if name in SEAMS and name != "process_chunk" and callable(value):

            async def recorded(*args: Any) -> Any:
                object.__getattribute__(self, "seen").append(name)
                return await value(*args)

            return recorded
        return value


_ARGS: dict[str, tuple[Any, ...]] = {
    "process_input": ([],),
    "start_of_run": (),
    "prepare_step": (1, {}),
    "step_tools": (1, {}),
    "on_model_error": (StepInfo(1, "", "error", False, [], [], {}), RuntimeError("x")),
    "after_model": (StepInfo(1, "", "stop", False, [], [], {}),),
    "execute_tool": (PendingToolCall("c", "t", {}, {}, None), None, None, None),
    "after_tools": (StepInfo(1, "", "stop", False, [], [], {}), []),
    "end_of_step": (StepInfo(1, "", "stop", False, [], [], {}),),
    "end_of_run": ([],),
}


async def test_a_link_that_overrides_nothing_forwards_every_seam() -> None:
    inner = _Recorder()

    class Empty(ChainedHooks):
        pass

    hooks = compose_hooks(inner, [("one", Empty), ("none", None), ("two", Empty)])
    for name in SEAMS:
        if name == "process_chunk":
            assert hooks.process_chunk is not None
            hooks.process_chunk("chunk")
            continue
        args = _ARGS[name]
        if name == "execute_tool":

            async def default() -> str:
                return "ran"

            args = (*args[:3], default)
        await getattr(hooks, name)(*args)
    assert inner.seen == list(SEAMS)


# ------------------------------------------------------------------------------ every combination


class Phases:
    """A processor in every phase, counting the calls of each."""

    id = "phases"

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.deltas: list[str] = []

    async def process_input(self, **_: Any) -> None:
        self.calls["input"] += 1

    async def process_input_step(self, **_: Any) -> None:
        self.calls["input_step"] += 1

    async def process_llm_request(self, **_: Any) -> None:
        self.calls["llm_request"] += 1

    async def process_output_stream(self, *, part: Any, **_: Any) -> Any:
        if part.type == "text-delta":
            self.deltas.append(part.payload.text)
        return part

    async def process_output_step(self, **_: Any) -> None:
        self.calls["output_step"] += 1

    async def process_tool_result(self, *, result: Any, **_: Any) -> Any:
        self.calls["tool_result"] += 1
        return result

    async def process_output_result(self, **_: Any) -> None:
        self.calls["output_result"] += 1

    async def process_api_error(self, **_: Any) -> dict[str, bool]:
        self.calls["api_error"] += 1
        return {"retry": True}


class Passes:
    """A completion / goal scorer that always passes."""

    id = "passes"
    name = "Passes"

    async def run(self, context: Any) -> dict[str, Any]:
        return {"score": 1, "reason": "fine"}


class _CheckpointLink(ChainedHooks):
    def __init__(self, inner: LoopHooks, seen: list[str]) -> None:
        super().__init__(inner)
        self.seen = seen

    async def execute_tool(
        self, call: PendingToolCall, tool: Tool, context: ToolContext, default: Callable[[], Awaitable[Any]]
    ) -> Any:
        self.seen.append(call.name)
        return await self.inner.execute_tool(call, tool, context, default)


class _Checkpoint:
    def __init__(self, seen: list[str]) -> None:
        self.seen = seen
        self.count = 0

    def new_id(self) -> str:
        self.count += 1
        return f"id-{self.count}"

    def model(self, model: LanguageModel) -> LanguageModel:
        return model

    def hooks(self, inner: LoopHooks) -> LoopHooks:
        return _CheckpointLink(inner, self.seen)


class _Seam:
    def __init__(self, seen: list[str]) -> None:
        self.seen = seen

    def begin_run(self) -> _Checkpoint:
        return _Checkpoint(self.seen)


@pytest.fixture
def checkpoint_seam() -> Iterator[list[str]]:
    saved = list(_checkpoints._seams)
    seen: list[str] = []
    yield seen
    _checkpoints._seams[:] = saved


def _script() -> list[Any]:
    tool_call = [
        {"type": "stream-start", "warnings": []},
        {
            "type": "tool-call",
            "toolCallId": "c1",
            "toolName": "lookup",
            "input": json.dumps({"q": "x", "_background": {"disposition": "awaited"}}),
        },
        {"type": "finish", "finishReason": "tool-calls", "usage": {"inputTokens": 1, "outputTokens": 1}},
    ]
    answer = [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": "the "},
        {"type": "text-delta", "id": "t", "delta": "answer"},
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1, "outputTokens": 1}},
    ]
    return [{"throws": {"name": "APICallError", "message": "busy"}}, tool_call, answer]


# processors are always on (they count the phases); delegation is tools only, but must not disturb
OPTIONAL = sorted(set(CONCERNS) - {"processors"} | {"delegation"})
COMBINATIONS = [frozenset(c) for n in range(len(OPTIONAL) + 1) for c in itertools.combinations(OPTIONAL, n)]


@pytest.mark.parametrize("concerns", COMBINATIONS, ids=lambda c: "+".join(sorted(c)) or "plain")
async def test_every_processor_phase_runs_once_with_every_combination_of_concerns(
    concerns: frozenset[str], checkpoint_seam: list[str]
) -> None:
    async def lookup(args: dict[str, Any], ctx: ToolContext) -> Any:
        return {"answer": args["q"]}

    tool = Tool(id="lookup", description="d", input_schema=SCHEMA, execute=lookup, background=True)
    phases = Phases()
    model = ScriptedModel(_script())
    store = InMemoryStore()
    extra: dict[str, Any] = {}
    if "delegation" in concerns:
        extra["agents"] = {"helper": Agent(id="helper", description="helps", model=ScriptedModel([]))}
    if "goal" in concerns:
        extra["goal"] = {"scorer": Passes()}
    if "tracing" in concerns:
        extra["instrument"] = InstrumentationSettings(tracer_provider=TracerProvider())
    else:
        extra["instrument"] = False
    agent = Agent(
        id="a",
        model=model,
        tools=[tool],
        memory=Memory(store),
        input_processors=[phases],
        output_processors=[phases],
        error_processors=[phases],
        max_processor_retries=2,
        default_options={"clock": lambda: 0},
        **extra,
    )
    options: dict[str, Any] = {"memory": {"thread": "t1", "resource": "r1"}}
    if "is_task_complete" in concerns:
        options["is_task_complete"] = {"scorers": [Passes()]}
    if "prepare_step" in concerns:
        options["prepare_step"] = lambda *, step_number, **_: {"tool_choice": "auto"}
    if "goal" in concerns:
        await agent.set_objective("Answer", thread_id="t1", resource_id="r1")
    if "checkpoint" in concerns:
        _checkpoints.set_checkpoint_seam(_Seam(checkpoint_seam))
    else:
        _checkpoints.set_checkpoint_seam(None)

    async def run() -> Any:
        output = agent.stream("question", **options)
        types = [c.type async for c in output.full_stream]
        return output, types

    if "background" in concerns:
        async with BackgroundTaskManager(InMemoryStore()) as manager:
            Mastra(agents={"a": agent}, background_tasks=manager)
            output, types = await run()
    else:
        output, types = await run()

    assert phases.calls == {
        "input": 1,
        "input_step": 3,  # before each model call: the failed one, the tool call, the answer
        "llm_request": 3,
        "api_error": 1,
        "output_step": 2,  # after each model response
        "tool_result": 1,
        "output_result": 1,
    }, types
    assert phases.deltas == ["the ", "answer"]
    assert await output.text == "the answer" and output.status == "success"
    assert ("background-task-started" in types) == ("background" in concerns)
    assert ("is-task-complete" in types) == ("is_task_complete" in concerns)
    assert checkpoint_seam == (["lookup"] if "checkpoint" in concerns else [])


async def test_an_override_reaches_the_inner_link_with_super() -> None:
    inner = _Recorder()

    class Tweaks(ChainedHooks):
        async def prepare_step(self, step_number: int, options: Any) -> Any:
            return await super().prepare_step(step_number, {**options, "seen": True})

    hooks = Tweaks(inner)
    assert await hooks.prepare_step(1, {}) == {"seen": True}
    assert inner.seen == ["prepare_step"]
