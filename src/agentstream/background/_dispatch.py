"""Background dispatch from the agent loop, through its ``LoopHooks.execute_tool`` seam.

When an agent runs with an enabled ``BackgroundTaskManager`` (``Mastra(background_tasks=...)``
or ``stream_until_idle(..., manager=...)``), ``background_run`` gives the run:

* the tools the model sees: each background-eligible tool's schema carries the optional
  ``_background`` override (the tool still runs with its own schema's validation);
* the instructions with Mastra's background-tasks section appended;
* ``BackgroundHooks``, wrapped around the agent's own hooks. ``execute_tool`` resolves the
  call's config, strips ``_background`` from the call's args (history and results included, as
  Mastra deletes it from the args object) and hands the agent's ``execute_tool`` a ``default`` that
  dispatches to the manager: ``background-task-started`` through ``context.writer.emit``, the
  placeholder string as the tool result, ``providerMetadata.mastra.backgroundTask`` added to the
  ``tool-result`` by ``process_chunk``. ``awaited`` blocks on the task and returns its real result;
  ``foreground`` / ``fallback-sync`` run the tool inline.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from ..agent import Agent, ChainedHooks, LoopHooks, PendingToolCall, RunSetup, StepDecision, StepInfo
from ..chunks import BackgroundTaskStarted, BackgroundTaskStartedPayload, Chunk, ChunkFrom, ToolResult
from ..storage import BackgroundTask
from ..tools import AgentBackgroundConfig, Tool, ToolBackgroundConfig, ToolContext, json_schema_of
from ._config import (
    ResolvedBackgroundConfig,
    background_system_prompt,
    inject_background_schema,
    is_background_eligible,
    placeholder_result_text,
    resolve_background_config,
)
from ._manager import BackgroundTaskManager, TaskHooks
from ._wait import tool_output, wait_for_next_task_chunks

if TYPE_CHECKING:
    from ..agent import MessageInput
    from ..models import CallOptions
    from ..stream import ModelOutput
    from ._agent_integration import UntilIdleOutput

__all__ = ["AgentBackground", "BackgroundHooks", "background_run", "register_background_tools"]


class AgentBackground:
    """``manager`` behind the agent's `BackgroundSeam`.

    ``Mastra(background_tasks=...)`` gives one to every agent it registers; until-idle turns pass
    one to ``Agent._stream_turn``.
    """

    def __init__(self, manager: BackgroundTaskManager, *, wait_for_tasks: bool = True) -> None:
        self.manager = manager
        self.wait_for_tasks = wait_for_tasks
        """``False`` (until-idle turns): a step never waits for running tasks (`_wait`)."""

    @property
    def enabled(self) -> bool:
        """The manager's ``config.enabled``."""
        return self.manager.config.enabled

    def register_tools(self, agent: Agent) -> None:
        """Register ``agent``'s eligible tools as executors (tasks recovered or resumed later)."""
        register_background_tools(agent, self.manager)

    def prepare_run(self, agent: Agent, *, thread_id: str | None, resource_id: str | None) -> RunSetup:
        """`background_run` of ``agent`` with this manager."""
        return background_run(
            agent,
            self.manager,
            thread_id=thread_id,
            resource_id=resource_id,
            wait_for_tasks=self.wait_for_tasks,
        )

    def stream_until_idle(
        self, agent: Agent, messages: MessageInput, *, max_idle_ms: float | None, options: dict[str, Any]
    ) -> UntilIdleOutput | ModelOutput:
        """`stream_until_idle` of ``agent`` with this manager."""
        from ._agent_integration import stream_until_idle  # it builds AgentBackground objects itself

        return stream_until_idle(agent, messages, manager=self.manager, max_idle_ms=max_idle_ms, **options)


def _tool_configs(agent: Agent) -> dict[str, ToolBackgroundConfig | None]:
    """Every tool's config (``None``: none), eligible or not, in the agent's tool order."""
    return {name: ToolBackgroundConfig.from_value(tool.background) for name, tool in agent.tools.items()}


def register_background_tools(agent: Agent, manager: BackgroundTaskManager) -> None:
    """Register the agent's eligible tools as ``"<agent_id>:<tool>"`` executors (recovery, resume)."""
    for name, cfg in _tool_configs(agent).items():
        if is_background_eligible(name, cfg, agent.background_config):
            manager.register_tool(agent.tools[name], name=name, agent_id=agent.id)


def background_run(
    agent: Agent,
    manager: BackgroundTaskManager,
    *,
    thread_id: str | None = None,
    resource_id: str | None = None,
    wait_for_tasks: bool = True,
) -> RunSetup:
    """The tools, instructions and hooks of one run of ``agent`` with ``manager`` (enabled).

    ``wait_for_tasks``: a step may wait for running tasks under ``wait_timeout_ms`` (`_wait`).
    """
    agent_cfg = agent.background_config
    configs = _tool_configs(agent)
    tools: dict[str, Tool] = {}
    eligible: dict[str, tuple[Tool, ToolBackgroundConfig | None]] = {}
    for name, tool in agent.tools.items():
        cfg = configs[name]
        if is_background_eligible(name, cfg, agent_cfg):
            tools[name] = _with_override_schema(tool)
            eligible[name] = (tool, cfg)
            manager.register_tool(tool, name=name, agent_id=agent.id)
        else:
            tools[name] = tool
    instructions = agent.instructions
    section = background_system_prompt(configs, agent_cfg)
    if section is not None:
        instructions = f"{instructions}\n\n{section}" if instructions else section
    hooks = BackgroundHooks(
        agent.hooks,
        manager,
        eligible,
        agent_cfg,
        thread_id=thread_id,
        resource_id=resource_id,
        agent_id=agent.id,
        wait_for_tasks=wait_for_tasks,
    )
    return RunSetup(tools, instructions, hooks)


async def _run_inline(tool: Tool, args: Any, context: ToolContext) -> Any:
    parsed, invalid = tool.validation_error(args)
    if invalid is not None:
        return invalid
    return await tool.run(parsed, context)


def _with_override_schema(tool: Tool) -> Tool:
    """``tool`` as the model sees it (``_background`` in its schema); it runs ``tool`` inline with
    the tool's own validation."""

    async def execute(args: Any, context: ToolContext) -> Any:
        return await _run_inline(tool, args, context)

    return Tool(
        id=tool.id,
        description=tool.description,
        input_schema=inject_background_schema(json_schema_of(tool.input_schema)),
        execute=execute,
        require_approval=tool.require_approval,  # approval is asked before any dispatch
        suspend_schema=tool.suspend_schema,
        resume_schema=tool.resume_schema,
    )


class BackgroundHooks(ChainedHooks):
    """Background dispatch around ``inner`` (the agent's hooks): every hook chains to ``inner``."""

    def __init__(
        self,
        inner: LoopHooks,
        manager: BackgroundTaskManager,
        eligible: Mapping[str, tuple[Tool, ToolBackgroundConfig | None]],
        agent_config: AgentBackgroundConfig | None,
        *,
        thread_id: str | None,
        resource_id: str | None,
        agent_id: str | None = None,
        wait_for_tasks: bool = True,
    ) -> None:
        super().__init__(inner)
        self.agent_id = agent_id
        wait = agent_config.wait_timeout_ms if agent_config is not None else None
        self.wait_timeout_ms = (
            (wait if wait is not None else manager.config.wait_timeout_ms) if wait_for_tasks else None
        )
        """How long a step waits for the next running task to end (``None``: it does not wait)."""
        self.run_id: str | None = None
        self.ended: dict[str, BackgroundTask] = {}
        """Tasks that ended while a step waited, by tool call id: the next model call sees their results."""
        self.manager = manager
        self.eligible = dict(eligible)
        self.agent_config = agent_config
        self.thread_id = thread_id
        self.resource_id = resource_id
        self.dispatched: dict[tuple[str, str], tuple[str, str]] = {}
        # an async inner (output processors) makes this one async too: the loop awaits only then
        self.process_chunk = (
            self._aprocess if inspect.iscoroutinefunction(inner.process_chunk) else self._process
        )

    async def _aprocess(self, chunk: Chunk) -> Any:
        return await self._process(chunk)

    async def prepare_step(self, step_number: int, options: CallOptions) -> CallOptions:
        options = await self.inner.prepare_step(step_number, options)
        if not self.ended or "prompt" not in options:
            return options
        # a task that ended while the previous step waited: its result replaces the placeholder
        prompt = copy.deepcopy(options["prompt"])
        for message in prompt:
            for part in message.get("content") or []:
                if isinstance(part, dict) and part.get("type") == "tool-result":
                    task = self.ended.get(str(part.get("toolCallId")))
                    if task is not None:
                        part["output"] = tool_output(task)
        return {**options, "prompt": prompt}

    async def end_of_step(self, step: StepInfo) -> bool | StepDecision | None:
        inner = await self.inner.end_of_step(step)
        if self.wait_timeout_ms is None or inner is False:
            return inner
        running = await self._running_tasks()
        if not running:
            return inner
        decision = StepDecision(continue_=None if isinstance(inner, StepDecision) else inner)
        decision.chunks = self._after(inner, running, decision, self.wait_timeout_ms)
        return decision

    async def _after(
        self,
        inner: bool | StepDecision | None,
        running: list[BackgroundTask],
        decision: StepDecision,
        wait_ms: int,
    ) -> AsyncIterator[Chunk]:
        if isinstance(inner, StepDecision):
            if isinstance(inner.chunks, AsyncIterable):
                async for chunk in inner.chunks:
                    yield chunk
            else:
                for chunk in inner.chunks:
                    yield chunk
            decision.continue_ = inner.continue_
            decision.messages.extend(inner.messages)
            if inner.continue_ is False:
                return
        async for chunk in wait_for_next_task_chunks(
            self.manager,
            running,
            run_id=self.run_id,
            wait_timeout_ms=wait_ms,
            decision=decision,
            ended=self.ended,
        ):
            yield chunk

    async def _running_tasks(self) -> list[BackgroundTask]:
        """The running tasks a step waits for: the thread's (Mastra), else this run's own (another
        user's run of the same agent is none of its business)."""
        if self.thread_id is not None:
            scope: dict[str, Any] = {"thread_id": self.thread_id, "resource_id": self.resource_id}
        elif self.run_id is not None:
            scope = {"run_id": self.run_id}
        else:
            return []
        page = await self.manager.list_tasks(status="running", agent_id=self.agent_id, **scope)
        return list(page.tasks)

    def _process(self, chunk: Chunk) -> Any:
        if isinstance(chunk, ToolResult) and chunk.run_id is not None:
            hit = self.dispatched.pop((chunk.run_id, chunk.payload.tool_call_id), None)
            if hit is not None:
                meta = dict(chunk.payload.provider_metadata or {})
                meta["mastra"] = {
                    **dict(meta.get("mastra") or {}),
                    "backgroundTask": {"taskId": hit[0], "status": hit[1]},
                }
                payload = msgspec.structs.replace(chunk.payload, provider_metadata=meta)
                chunk = msgspec.structs.replace(chunk, payload=payload)
        inner = self.inner.process_chunk
        return inner(chunk) if inner is not None else chunk

    async def execute_tool(
        self,
        call: PendingToolCall,
        tool: Tool,
        context: ToolContext,
        default: Callable[[], Awaitable[Any]],
    ) -> Any:
        entry = self.eligible.get(call.name)
        if entry is None:
            return await self.inner.execute_tool(call, tool, context, default)
        original, tool_cfg = entry
        resolved = resolve_background_config(
            args=call.args if isinstance(call.args, Mapping) else {},
            tool_name=call.name,
            tool_config=tool_cfg,
            agent_config=self.agent_config,
            manager_config=self.manager.config,
        )
        for args in (call.args, call.exec_args, call.history_args):
            if isinstance(args, dict):
                args.pop("_background", None)

        async def dispatch() -> Any:
            if not resolved.run_in_background:
                return await default()
            return await self._dispatch(original, tool_cfg, resolved.args, resolved, context, default)

        return await self.inner.execute_tool(call, tool, context, dispatch)

    async def _dispatch(
        self,
        tool: Tool,
        tool_cfg: ToolBackgroundConfig | None,
        args: dict[str, Any],
        resolved: ResolvedBackgroundConfig,
        context: ToolContext,
        default: Callable[[], Awaitable[Any]],
    ) -> Any:
        manager = self.manager
        self.run_id = context.run_id
        on_complete = tool_cfg.on_complete if tool_cfg else None
        on_failed = tool_cfg.on_failed if tool_cfg else None
        if self.agent_config is not None:
            on_complete = on_complete or self.agent_config.on_task_complete
            on_failed = on_failed or self.agent_config.on_task_failed
        result = await manager.enqueue(
            tool.id,
            args,
            tool_call_id=context.tool_call_id,
            agent_id=context.agent_id or "",
            run_id=context.run_id,
            thread_id=self.thread_id,
            resource_id=self.resource_id,
            timeout_ms=resolved.timeout_ms,
            max_retries=resolved.max_retries,
            hooks=TaskHooks(executor=tool, on_complete=on_complete, on_failed=on_failed),
        )
        if result.fallback_to_sync:
            return await default()
        task = result.task
        context.writer.emit(
            BackgroundTaskStarted(
                run_id=context.run_id,
                from_=ChunkFrom.AGENT,
                payload=BackgroundTaskStartedPayload(
                    task_id=task.id, tool_name=tool.id, tool_call_id=context.tool_call_id
                ),
            )
        )
        if result.admitted:
            await manager.wait_until_started(task.id)
        key = (context.run_id, context.tool_call_id)
        if resolved.disposition == "awaited":
            final = await manager.wait_for_completion(task.id)
            if final.status != "completed":
                message = final.error.message if final.error is not None else final.status
                raise RuntimeError(f"Background task failed: {message}")
            self.dispatched[key] = (task.id, "completed")
            return final.result
        self.dispatched[key] = (task.id, "running")
        return placeholder_result_text(task.id, tool.id)
