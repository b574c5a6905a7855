"""Background dispatch as ``LoopHooks``: installed on every run of an agent with a manager, chaining
to the agent's own hooks (``process_chunk``, ``execute_tool``, ``after_tools``, ``end_of_step``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from agentstream import Mastra
from agentstream.agent import Agent, LoopHooks, PendingToolCall, StepInfo
from agentstream.background import BackgroundTaskManager
from agentstream.chunks import chunk_to_dict
from agentstream.chunks._codec import Chunk
from agentstream.storage import BaseStore
from agentstream.testing import ScriptedModel
from agentstream.tools import Tool, ToolContext
from tests.background.test_until_idle import SCHEMA, _steps


class Recording(LoopHooks):
    def __init__(self) -> None:
        self.events: list[Any] = []
        self.process_chunk = self._process

    def _process(self, chunk: Chunk) -> Chunk | None:
        if chunk.type == "tool-result":
            self.events.append(("chunk", chunk_to_dict(chunk)["payload"]))
        return chunk

    async def execute_tool(
        self,
        call: PendingToolCall,
        tool: Tool,
        context: ToolContext,
        default: Callable[[], Awaitable[Any]],
    ) -> Any:
        result = await default()
        self.events.append(("execute", call.name, dict(call.args), result))
        return result

    async def after_tools(self, step: StepInfo, results: list[Any]) -> None:
        self.events.append(("after_tools", step.number))

    async def end_of_step(self, step: StepInfo) -> bool | None:
        self.events.append(("end_of_step", step.number))
        return None


async def _answer(args: dict[str, Any], ctx: ToolContext) -> Any:
    return {"answer": args["q"]}


async def test_dispatch_chains_to_the_agents_hooks(store: BaseStore) -> None:
    tool = Tool(id="lookup", description="d", input_schema=SCHEMA, execute=_answer, background=True)
    hooks = Recording()
    model = ScriptedModel(
        _steps(("c1", "lookup", {"q": "x", "_background": {"disposition": "awaited"}}), "Done.")
    )
    agent = Agent(id="a", instructions="sys", model=model, tools=[tool], hooks=hooks)
    on_chunk: list[str] = []
    async with BackgroundTaskManager(store) as manager:
        Mastra(agents={"a": agent}, background_tasks=manager)
        chunks = [
            c.type async for c in agent.stream("go", on_chunk=lambda c: on_chunk.append(c.type)).full_stream
        ]
    assert chunks.index("background-task-started") < chunks.index("tool-result")
    assert on_chunk.index("background-task-started") < on_chunk.index("tool-result")
    kinds = [e[0] for e in hooks.events]
    assert kinds == ["execute", "chunk", "after_tools", "end_of_step", "after_tools", "end_of_step"]
    # the agent's execute_tool sees the args without `_background` and the dispatch's result
    assert hooks.events[0] == ("execute", "lookup", {"q": "x"}, {"answer": "x"})
    # the agent's process_chunk runs after the dispatch added the task metadata
    meta = hooks.events[1][1]["providerMetadata"]["mastra"]["backgroundTask"]
    assert meta["status"] == "completed" and meta["taskId"]
    system = model.calls[0].prompt[0]["content"]
    assert system.startswith("sys\n\n") and "lookup" in system  # Mastra's background section
    assert agent.tools["lookup"] is tool and agent.instructions == "sys"  # nothing derived


async def test_agent_background_config_and_deferred_placeholder(store: BaseStore) -> None:
    plain = Tool(id="lookup", description="d", input_schema=SCHEMA, execute=_answer)  # no background
    hooks = Recording()
    model = ScriptedModel(_steps(("c1", "lookup", {"q": "y"}), "Started."))
    agent = Agent(id="a", model=model, tools=[plain], hooks=hooks, background_tasks={"tools": "all"})
    async with BackgroundTaskManager(store) as manager:
        Mastra(agents={"a": agent}, background_tasks=manager)
        out = agent.stream("go")
        await out.consume_stream()
        task = (await manager.list_tasks()).tasks[0]
        await manager.wait_for_completion(task.id)
    _, name, args, placeholder = hooks.events[0]
    assert (name, args) == ("lookup", {"q": "y"})
    assert placeholder.startswith(f"Background task started. Task ID: {task.id}.")
    assert "_background" in model.calls[0].options["tools"][0]["inputSchema"]["properties"]
    assert hooks.events[1][1]["providerMetadata"]["mastra"]["backgroundTask"] == {
        "taskId": task.id,
        "status": "running",
    }


async def test_processors_and_background_dispatch_compose(store: BaseStore) -> None:
    """Output processors wrap the background hooks: a dispatched tool's result (with its task
    metadata) reaches ``process_tool_result`` and ``process_output_stream``; the agent's own hooks
    still see every seam (``BackgroundHooks`` chains them all)."""
    from agentstream.processors import SecretRedactor

    tool = Tool(id="lookup", description="d", input_schema=SCHEMA, execute=_answer, background=True)
    hooks = Recording()
    seen: list[Any] = []

    class Watch:
        id = "watch"

        async def process_tool_result(self, *, result: Any, **_: Any) -> Any:
            seen.append(("tool", result))
            return result

        async def process_output_stream(self, *, part: Chunk, **_: Any) -> Chunk:
            if part.type == "tool-result":
                seen.append(
                    (
                        "stream",
                        chunk_to_dict(part)["payload"]["providerMetadata"]["mastra"]["backgroundTask"][
                            "status"
                        ],
                    )
                )
            return part

    model = ScriptedModel(
        _steps(
            ("c1", "lookup", {"q": "mail bob@example.com", "_background": {"disposition": "awaited"}}),
            "Done.",
        )
    )
    agent = Agent(
        id="a", model=model, tools=[tool], hooks=hooks, output_processors=[Watch(), SecretRedactor()]
    )
    async with BackgroundTaskManager(store) as manager:
        Mastra(agents={"a": agent}, background_tasks=manager)
        output = agent.stream("go")
        chunks = [c async for c in output.full_stream]
    assert seen == [("tool", {"answer": "mail bob@example.com"}), ("stream", "completed")]
    assert [e[0] for e in hooks.events][:2] == ["execute", "chunk"]
    assert await output.text == "Done."
    assert any(c.type == "background-task-started" for c in chunks)


async def test_a_background_tool_that_needs_approval_is_dispatched_only_once_approved(
    store: BaseStore,
) -> None:
    tool = Tool(
        id="lookup",
        description="d",
        input_schema=SCHEMA,
        execute=_answer,
        background=True,
        require_approval=True,
    )
    model = ScriptedModel(
        _steps(("c1", "lookup", {"q": "x", "_background": {"disposition": "awaited"}}), "Done.")
    )
    agent = Agent(id="a", model=model, tools=[tool])
    async with BackgroundTaskManager(store) as manager:
        Mastra(agents={"a": agent}, background_tasks=manager, storage=store)
        first = agent.stream("go", run_id="r1")
        chunks = [c.type async for c in first.full_stream]
        assert chunks[-1] == "tool-call-approval" and "background-task-started" not in chunks
        assert (await manager.list_tasks()).total == 0  # nothing was dispatched before approval
        second = agent.approve_tool_call(run_id="r1", tool_call_id="c1")
        chunks = [c.type async for c in second.full_stream]
        assert chunks.index("background-task-started") < chunks.index("tool-result")
        assert await second.text == "Done."
        assert (await manager.list_tasks()).total == 1
