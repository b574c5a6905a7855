"""``Agent``: ``stream()`` returns a `ModelOutput` over the agent loop."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._abort import AbortController, AbortSignal
from ..chunks import Chunk
from ..memory import Memory, resolve_memory_option
from ..models import LanguageModel
from ..stream import FullOutput, ModelOutput
from ..tools import AgentBackgroundConfig, Tool
from ..tracing import InstrumentationSettings, check_instrument_option, trace_run
from ._delegation import DelegationRun, check_sub_agents, check_workflows, delegation_tools
from ._goal import GoalConfig, judged_hooks
from ._goal_record import GoalObjective, GoalStatus
from ._goal_record import load_objective as _load_objective
from ._goal_record import set_objective as _set_objective
from ._goal_record import update_objective as _update_objective
from ._hooks import BackgroundSeam, LoopHooks, StopCondition
from ._loop import RunConfig, run_loop
from ._messages import MessageInput, to_prompt
from ._options import StreamOptions, TurnOptions, check_options
from ._settings import normalize_model_settings
from ._structured import StructuredOutputConfig
from ._traced import TracingHooks

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..background import BackgroundTaskManager, UntilIdleOutput
    from ..storage import Storage

__all__ = ["Agent", "has_tool_call", "step_count_is"]

def step_count_is(n: int) -> StopCondition:
    """Stop once ``n`` steps ran (``stepCountIs``)."""
    return lambda steps: len(steps) >= n


def has_tool_call(name: str) -> StopCondition:
    """Stop after a step in which the model called tool ``name`` (``hasToolCall``)."""
    return lambda steps: bool(steps) and any(c["toolName"] == name for c in steps[-1].tool_calls)


def _now_ms() -> float:
    return time.time() * 1000.0


class Agent:
    """An agent: a model, instructions and tools, run step by step (Mastra's ``Agent``).

    ``model`` is a `LanguageModel` or a router string (``"openai/gpt-4o-mini"``,
    ``"demo"``). ``tools`` is a list of `Tool` or a ``{id: Tool}`` mapping.
    ``agents`` (``{name: Agent}``) and ``workflows`` (``{name: Workflow}``) become the tools
    ``agent-<name>`` / ``workflow-<name>``: their runs stream into this agent's stream as nested
    ``tool-output`` chunks (see ``agentstream.agent._delegation``); ``description`` is what a
    parent agent's model reads about this agent when it is a sub-agent.
    ``default_options`` are merged under the options of every ``stream()`` call. ``memory`` (a
    `Memory`) serves ``stream(..., memory={"thread", "resource"})``; without
    one, an agent registered in a ``Mastra`` uses a default ``Memory`` over the Mastra's storage.

    Registered in a ``Mastra(background_tasks=...)``, the agent's tools with ``background`` enabled
    run as background tasks of ``mastra.background_task_manager``. ``background_tasks`` (Mastra's
    agent ``backgroundTasks``: ``{"tools": "all" | {name: bool | {...}}, "disabled": ...}`` or an
    `AgentBackgroundConfig`) overrides the tools' own settings.

    ``goal`` (`GoalConfig` or ``{"judge", "max_runs", "prompt", "scorer", "max_steps"}``) judges the
    answers of runs on a memory thread against that thread's objective (`set_objective`) and sends
    the agent round again until the judge says it is done.

    Run options include ``clock`` (``() -> ms``, timestamps) and ``sleep`` (``async (seconds) ->
    None``, the pause after a rate-limited step), injectable for tests, and ``on_tool_error`` (a
    `ToolErrorMask`: what the client and the model see of a tool's exception; configured secrets
    are redacted from tool errors either way).

    ``instrument`` traces the agent's runs with OpenTelemetry (``agentstream.tracing``): ``True``, or
    an ``InstrumentationSettings``; ``False`` never; ``None`` (default) follows
    ``agentstream.instrument(...)``.
    """

    def __init__(
        self,
        *,
        id: str,
        name: str | None = None,
        instructions: str = "",
        model: LanguageModel | str,
        tools: Iterable[Tool] | Mapping[str, Tool] | None = None,
        default_options: Mapping[str, Any] | None = None,
        hooks: LoopHooks | None = None,
        memory: Memory | None = None,
        background_tasks: AgentBackgroundConfig | Mapping[str, Any] | None = None,
        description: str | None = None,
        agents: Mapping[str, Agent] | None = None,
        workflows: Mapping[str, Any] | None = None,
        instrument: bool | InstrumentationSettings | None = None,
        goal: GoalConfig | Mapping[str, Any] | None = None,
    ) -> None:
        if not id:
            raise ValueError("an agent needs a non-empty id")
        self.id = id
        self.name = name or id
        self.instructions = instructions
        self.description = description
        self._model_spec = model
        self._model: LanguageModel | None = None if isinstance(model, str) else model
        if tools is None:
            self.tools: dict[str, Tool] = {}
        elif isinstance(tools, Mapping):
            self.tools = dict(tools)
        else:
            self.tools = {}
            for t in tools:
                if not isinstance(t, Tool):
                    raise TypeError(
                        f"agent {id!r}: tools must be Tool objects (use @tool), got {type(t).__name__}"
                    )
                self.tools[t.id] = t
        self.default_options = dict(default_options or {})
        check_options(self.default_options)
        self.hooks = hooks or LoopHooks()
        if memory is not None and not isinstance(memory, Memory):
            raise TypeError(f"agent {id!r}: memory must be a Memory, got {type(memory).__name__}")
        self.memory = memory
        self.background_config: AgentBackgroundConfig | None = None
        if background_tasks is not None:
            self.background_config = AgentBackgroundConfig.from_value(background_tasks)
        self.agents: dict[str, Agent] = check_sub_agents(self, agents)
        self.workflows: dict[str, Any] = check_workflows(self, workflows)
        self.goal = GoalConfig.from_value(goal) if goal is not None else None
        self._mastra: Any = None
        self._background: BackgroundSeam | None = None
        self.instrument = check_instrument_option(instrument, f"agent {id!r}")

    # ----------------------------------------------------------------------------- Mastra wiring

    def _register_mastra(self, mastra: Any, background: BackgroundSeam | None = None) -> None:
        """Called by ``Mastra.register_agent`` (Mastra's ``__registerMastra``) with the Mastra's
        background-task seam (``None``: tools run inline)."""
        self._mastra = mastra
        self._background = background

    @property
    def background_task_manager(self) -> BackgroundTaskManager | None:
        """The manager of the ``Mastra`` this agent is registered in (``None``: tools run inline)."""
        if self._mastra is None:
            return None
        manager: BackgroundTaskManager | None = self._mastra.background_task_manager
        return manager

    def _memory_for_run(self) -> Memory:
        storage = self._mastra.storage if self._mastra is not None else None
        memory = self.memory
        if memory is None:
            if storage is None:
                raise ValueError(
                    f"agent {self.id!r}: memory= needs Agent(memory=Memory(storage)) or the agent "
                    "registered in a Mastra (whose storage is used)"
                )
            return Memory(storage)
        if memory.storage is None and storage is not None:
            return memory.bound(storage)
        return memory

    # ------------------------------------------------------------------------------------ goals

    def _goal_storage(self) -> Storage:
        storage = self._memory_for_run().storage
        if storage is None:
            raise ValueError(
                f"agent {self.id!r}: goals need storage: Agent(memory=Memory(storage)) or a Mastra's"
            )
        return storage

    def _clock_ms(self) -> int:
        clock = self.default_options.get("clock") or _now_ms
        return int(clock())

    async def set_objective(
        self,
        objective: str,
        *,
        thread_id: str,
        resource_id: str | None = None,
        judge_model_id: str | None = None,
        max_runs: int | None = None,
        prompt: str | None = None,
        id: str | None = None,
    ) -> GoalObjective:
        """Give memory thread ``thread_id`` a new ``active`` objective (replacing any earlier one).

        ``judge_model_id`` (a model string), ``max_runs`` and ``prompt`` override the agent's
        ``goal`` settings for this objective; ``resource_id`` creates the thread if it is new.
        Stored in the thread-state domain of the agent's memory storage.
        """
        if resource_id is not None:
            from ..memory import MemoryScope

            await self._memory_for_run().ensure_thread(MemoryScope(thread_id, resource_id))
        return await _set_objective(
            self._goal_storage(),
            objective,
            thread_id=thread_id,
            now_ms=self._clock_ms(),
            judge_model_id=judge_model_id,
            max_runs=max_runs,
            prompt=prompt,
            id=id,
        )

    async def get_objective(self, *, thread_id: str) -> GoalObjective | None:
        """The thread's objective (status, runs used, paused reason …), or ``None``."""
        return await _load_objective(self._goal_storage(), thread_id)

    async def clear_objective(self, *, thread_id: str) -> bool:
        """Remove the thread's objective; ``False`` if it had none."""
        deleted: bool = await self._goal_storage().delete_thread_state(thread_id, "goal")
        return deleted

    async def update_objective_options(
        self,
        *,
        thread_id: str,
        judge_model_id: str | None = None,
        max_runs: int | None = None,
        prompt: str | None = None,
        status: GoalStatus | None = None,
    ) -> GoalObjective | None:
        """Change the thread's objective; ``status="active"`` with a higher ``max_runs`` resumes a
        paused goal. ``None`` if the thread has no objective."""
        return await _update_objective(
            self._goal_storage(),
            thread_id=thread_id,
            now_ms=self._clock_ms(),
            judge_model_id=judge_model_id,
            max_runs=max_runs,
            prompt=prompt,
            status=status,
        )

    @property
    def model(self) -> LanguageModel:
        """The resolved `LanguageModel` (a model string such as `"openai/gpt-4o-mini"` is resolved on first
        use).
        """
        if self._model is None:
            from .. import models

            self._model = models.resolve_model(self._model_spec)
        return self._model

    def stream(self, messages: MessageInput, **options: Unpack[StreamOptions]) -> ModelOutput:
        """Start a run (lazily: it begins when the output is first read or awaited).

        Options: `StreamOptions`. ``memory={"thread": id | {"id", "title"?, "metadata"?},
        "resource": id}`` loads the thread's history first and stores the turn at the end.
        ``until_idle=True | {"max_idle_ms": n}`` returns `stream_until_idle`'s combined
        stream instead.
        """
        check_options(options)
        opts: dict[str, Any] = {**self.default_options, **options}
        until_idle = opts.pop("until_idle", None)
        if until_idle is not None and until_idle is not False:
            return self._until_idle(messages, until_idle, opts)  # type: ignore[return-value]
        return self._stream_turn(messages, opts)

    def stream_until_idle(
        self, messages: MessageInput, *, max_idle_ms: float | None = None, **options: Unpack[TurnOptions]
    ) -> UntilIdleOutput | ModelOutput:
        """``stream(messages, until_idle={"max_idle_ms": ...})`` (Mastra's deprecated ``streamUntilIdle``).

        One stream: the first turn, every background-task chunk of this agent (and memory thread),
        and a continuation turn whenever finished tasks are waiting and nothing runs; it closes when
        idle, on abort, or after ``max_idle_ms`` (default 5 min) without news between turns. Without
        background tasks (the agent is not in a ``Mastra(background_tasks=...)``) this is a plain
        `stream`; ``agentstream.background.stream_until_idle`` takes an explicit manager.
        """
        check_options(options)
        opts: dict[str, Any] = {**self.default_options, **options}
        opts.pop("until_idle", None)
        spec: dict[str, Any] = {} if max_idle_ms is None else {"max_idle_ms": max_idle_ms}
        return self._until_idle(messages, spec or True, opts)

    def _until_idle(self, messages: MessageInput, spec: Any, opts: dict[str, Any]) -> UntilIdleOutput | ModelOutput:
        max_idle_ms: float | None = None
        if isinstance(spec, Mapping):
            unknown = set(spec) - {"max_idle_ms"}
            if unknown:
                raise TypeError(
                    f"unknown until_idle option(s): {', '.join(sorted(unknown))} (known: max_idle_ms)"
                )
            if spec.get("max_idle_ms") is not None:
                max_idle_ms = float(spec["max_idle_ms"])
                if max_idle_ms <= 0:
                    raise ValueError(f"until_idle max_idle_ms must be > 0, got {spec['max_idle_ms']!r}")
        elif spec is not True:
            raise TypeError(f'until_idle must be True or {{"max_idle_ms": n}}, got {spec!r}')
        background = self._background
        if background is None or not background.enabled:
            return self._stream_turn(messages, opts)  # as in Mastra: no manager → a plain stream
        return background.stream_until_idle(self, messages, max_idle_ms=max_idle_ms, options=opts)

    def _stream_turn(
        self,
        messages: MessageInput,
        options: Mapping[str, Any],
        *,
        continuation: bool = False,
        background: BackgroundSeam | None = None,
        background_scope: tuple[str | None, str | None] | None = None,
    ) -> ModelOutput:
        """One turn. ``continuation``: an until-idle continuation whose ``messages`` already hold the
        history (memory is not reloaded and only the response is stored).

        With enabled background tasks (``background`` or the Mastra's), the run gets the tools,
        instructions and hooks of `BackgroundSeam.prepare_run`; its tasks belong to
        ``background_scope`` (thread, resource), by default the memory thread's.
        """
        opts = {**self.default_options, **options}
        opts.pop("until_idle", None)
        memory_option = opts.get("memory")
        scope = resolve_memory_option(memory_option) if memory_option is not None else None
        memory = self._memory_for_run() if scope is not None else None
        now_ms: Callable[[], float] = opts.get("clock") or _now_ms
        sleep: Callable[[float], Awaitable[None]] = opts.get("sleep") or asyncio.sleep
        tools, instructions, hooks = self.tools, self.instructions, self.hooks
        background = background or self._background
        if background is not None and background.enabled:
            if background_scope is None:
                background_scope = (scope.thread_id, scope.resource_id) if scope else (None, None)
            setup = background.prepare_run(self, thread_id=background_scope[0], resource_id=background_scope[1])
            tools, instructions, hooks = setup.tools, setup.instructions, setup.hooks
        if opts.get("instructions") is not None:
            # Keep what the background seam appended to the agent's own instructions.
            tail = instructions[len(self.instructions) :] if instructions.startswith(self.instructions) else ""
            instructions = str(opts["instructions"]) + tail
        if self.agents or self.workflows:
            tools = {**tools, **delegation_tools(DelegationRun(self, now_ms, sleep))}
        run_id = str(opts.get("run_id") or uuid.uuid4())
        message_id = str(uuid.uuid4())
        prompt: list[dict[str, Any]] = []
        if instructions:
            prompt.append({"role": "system", "content": instructions})
        inputs = to_prompt(messages, created_at=int(now_ms()))
        prompt.extend(inputs)
        model = self.model
        traced = trace_run(
            self.instrument,
            agent_id=self.id,
            agent_name=self.name,
            run_id=run_id,
            model=model,
            prompt=prompt,
            thread_id=scope.thread_id if scope is not None else None,
        )
        cancel = AbortController()
        user_signal: AbortSignal | None = opts.get("abort_signal")
        signal = AbortSignal.any([user_signal, cancel.signal]) if user_signal is not None else cancel.signal

        stop_when = opts.get("stop_when")
        conditions: list[StopCondition] = (
            [] if stop_when is None else list(stop_when) if isinstance(stop_when, Sequence) else [stop_when]
        )
        max_steps = opts.get("max_steps")
        structured = opts.get("structured_output")
        so = StructuredOutputConfig.from_option(structured) if structured is not None else None
        hooks = judged_hooks(
            hooks, opts.get("is_task_complete"), self.goal, self._goal_storage if memory else None,
            agent_id=self.id, scope=scope, run_id=run_id, max_steps=max_steps, now_ms=now_ms, signal=signal,
        )
        if traced is not None:  # outermost in the hooks chain (docs/decisions.md, "Phase 2 seams")
            hooks, model = TracingHooks(hooks, traced), traced.model(model)
        concurrency = opts.get("tool_call_concurrency", 10)
        if isinstance(concurrency, Mapping):
            concurrency = concurrency.get("limit", 10)
        config = RunConfig(
            agent_id=self.id,
            run_id=run_id,
            message_id=message_id,
            model=model,
            prompt=prompt,
            tools=tools,
            signal=signal,
            now_ms=now_ms,
            max_steps=int(max_steps) if max_steps is not None else (5 if not conditions else 10**9),
            stop_when=conditions,
            on_chunk=opts.get("on_chunk"),
            include_raw_chunks=bool(opts.get("include_raw_chunks", False)),
            structured_output=so,
            tool_choice=opts.get("tool_choice"),
            active_tools=opts.get("active_tools"),
            model_settings=normalize_model_settings(opts.get("model_settings")),
            tool_call_concurrency=int(concurrency),
            hooks=hooks,
            sleep=sleep,
            on_tool_error=opts.get("on_tool_error"),
        )
        source: AsyncIterator[Chunk] = run_loop(config)
        if scope is not None and memory is not None:
            source = memory.remember(
                source,
                scope,
                config.prompt,
                [] if continuation else inputs,
                message_id=message_id,
                load=not continuation,
            )
        if traced is not None:
            source = traced.wrap(source)
        return ModelOutput(
            source,
            run_id=run_id,
            message_id=message_id,
            include_raw_chunks=config.include_raw_chunks,
            on_step_finish=opts.get("on_step_finish"),
            on_finish=opts.get("on_finish"),
            on_error=opts.get("on_error"),
            on_abort=opts.get("on_abort"),
            experimental_transform=opts.get("experimental_transform"),
            has_structured_output=so is not None,
            on_cancel=cancel.abort,
        )

    async def generate(self, messages: MessageInput, **options: Unpack[TurnOptions]) -> FullOutput:
        """Run to the end and return every result at once (raises the run's error if it failed)."""
        if options.get("until_idle") not in (None, False):
            raise TypeError("generate() does not take until_idle: use stream(..., until_idle=True)")
        check_options(options)
        return await self._stream_turn(messages, {**self.default_options, **options}).get_full_output()

    def __repr__(self) -> str:
        return f"Agent(id={self.id!r}, model={self._model_spec!r}, tools={list(self.tools)})"
