"""``Agent``: ``stream()`` returns a `ModelOutput` over the agent loop."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._abort import AbortController, AbortSignal
from ..chunks import Chunk
from ..memory import Memory, resolve_memory_option
from ..models import LanguageModel
from ..stream import FullOutput, ModelOutput
from ..tools import AgentBackgroundConfig, Tool
from ..tracing import InstrumentationSettings, check_instrument_option, trace_run
from ._checkpoints import begin_checkpointed_run, new_id
from ._delegation import DelegationRun, check_sub_agents, check_workflows, delegation_tools
from ._goal import GoalConfig, judged_hooks
from ._goal_record import GoalObjective, GoalStatus
from ._goal_record import load_objective as _load_objective
from ._goal_record import set_objective as _set_objective
from ._goal_record import update_objective as _update_objective
from ._hooks import BackgroundSeam, LoopHooks, StopCondition
from ._loop import RunConfig, run_loop
from ._messages import MessageInput, to_prompt
from ._options import RESUME_OPTIONS, ResumeOptions, StreamOptions, TurnOptions, check_options
from ._processors import (
    ERROR_METHODS,
    INPUT_METHODS,
    OUTPUT_METHODS,
    Processor,
    ProcessorHooks,
    check_processors,
)
from ._resume import (
    Leg,
    SuspendRecorder,
    approval_check,
    auto_resume_turn,
    forces_serial_tools,
    resumed_source,
    stored_options,
)
from ._settings import normalize_model_settings
from ._structured import StructuredOutputConfig
from ._suspension import ApprovalPolicy, ResumeDecision, ResumeError, RunSnapshots
from ._traced import TracingHooks
from ._tripwire import Tripwire

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


def _option(opts: Mapping[str, Any], name: str, default: list[Any], methods: Sequence[str]) -> list[Any]:
    return check_processors(opts[name], name, methods) if opts.get(name) is not None else default


def check_retries(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"max_processor_retries must be an int >= 0 or None, got {value!r}")
    return value


def _same_thread(run_id: str, stored: Any, given: Any) -> None:
    """A leg may not move a run that lives in one memory thread into another (someone else's)."""
    if stored is None or given is None:
        return
    was, now = resolve_memory_option(stored), resolve_memory_option(given)
    if (was.thread_id, was.resource_id) != (now.thread_id, now.resource_id):
        raise ResumeError(
            f"run {run_id!r} belongs to memory thread {was.thread_id!r} of resource {was.resource_id!r}; "
            "a leg cannot continue it in another thread or resource",
            run_id=run_id,
            status="mismatch",
        )


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

    Human in the loop: ``require_tool_approval`` (``True`` or a callable ``(tool_name, args) ->
    bool``, possibly async; also a run option) makes tool calls wait for approval: the run ends
    suspended on ``tool-call-approval`` and `approve_tool_call` / `decline_tool_call` continue it.
    A tool may also ``return await context.suspend(payload)`` (``tool-call-suspended``);
    `resume_stream` runs it again with ``context.resume_data``. Suspended runs are kept in the
    storage's workflow-snapshot domain (the Mastra's storage, else the memory's, else an
    in-process store), so another process with the same storage can resume them.
    """

    def __init__(
        self,
        *,
        id: str,
        name: str | None = None,
        instructions: str = "",
        model: LanguageModel | str | list[Any],
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
        require_tool_approval: bool | ApprovalPolicy = False,
        input_processors: Sequence[Processor] | None = None,
        output_processors: Sequence[Processor] | None = None,
        error_processors: Sequence[Processor] | None = None,
        max_processor_retries: int | None = None,
    ) -> None:
        if not id:
            raise ValueError("an agent needs a non-empty id")
        self.id = id
        self.name = name or id
        self.instructions = instructions
        self.description = description
        self._model_spec = model
        self._model: LanguageModel | None = None if isinstance(model, str | list) else model
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
        approval_check(require_tool_approval, {})  # a wrong value fails here, not at the first call
        self.require_tool_approval = require_tool_approval
        self._mastra: Any = None
        self._background: BackgroundSeam | None = None
        self._local_runs: Storage | None = None
        self.input_processors = check_processors(input_processors, "input_processors", INPUT_METHODS)
        self.output_processors = check_processors(output_processors, "output_processors", OUTPUT_METHODS)
        self.error_processors = check_processors(error_processors, "error_processors", ERROR_METHODS)
        self.max_processor_retries = check_retries(max_processor_retries)
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

    def _run_snapshots(self) -> RunSnapshots:
        """Where this agent keeps suspended runs: the Mastra's storage, the memory's, or (neither)
        an in-process store of this agent."""
        storage = self._mastra.storage if self._mastra is not None else None
        if storage is None and self.memory is not None:
            storage = self.memory.storage
        if storage is None:
            if self._local_runs is None:
                from ..storage import InMemoryStore  # the agent package does not import storage at load

                self._local_runs = InMemoryStore()
            storage = self._local_runs
        return RunSnapshots(storage, self.id)

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

    def _until_idle(
        self, messages: MessageInput, spec: Any, opts: dict[str, Any]
    ) -> UntilIdleOutput | ModelOutput:
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
        auto_resume = opts.pop("auto_resume_suspended_tools", False)
        cancel = AbortController()
        recorder = SuspendRecorder(self._run_snapshots(), run_id="", options={})
        if auto_resume and opts.get("memory") is not None and not continuation:
            return auto_resume_turn(self, messages, opts, cancel, recorder)
        source, config = self._turn_source(
            messages,
            opts,
            cancel,
            recorder,
            continuation=continuation,
            background=background,
            background_scope=background_scope,
        )
        blocked: list[Tripwire] = []
        config.on_result_tripwire = blocked.append
        return self._output(
            source,
            opts,
            cancel,
            recorder,
            config.run_id,
            config.message_id,
            result_tripwire=lambda: blocked[-1].data() if blocked else None,
        )

    def _turn_source(
        self,
        messages: MessageInput,
        opts: dict[str, Any],
        cancel: AbortController,
        recorder: SuspendRecorder,
        *,
        continuation: bool = False,
        background: BackgroundSeam | None = None,
        background_scope: tuple[str | None, str | None] | None = None,
        message_id: str | None = None,
    ) -> tuple[AsyncIterator[Chunk], RunConfig]:
        """The chunk source of one new turn and its loop configuration."""
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
            setup = background.prepare_run(
                self, thread_id=background_scope[0], resource_id=background_scope[1]
            )
            tools, instructions, hooks = setup.tools, setup.instructions, setup.hooks
        if opts.get("instructions") is not None:
            # Keep what the background seam appended to the agent's own instructions.
            tail = (
                instructions[len(self.instructions) :] if instructions.startswith(self.instructions) else ""
            )
            instructions = str(opts["instructions"]) + tail
        if self.agents or self.workflows:
            tools = {**tools, **delegation_tools(DelegationRun(self, now_ms, sleep))}
        if memory is not None and scope is not None:  # memory's own tools (updateWorkingMemory)
            tools = {**tools, **memory.run_tools(scope)}
        checkpoint = begin_checkpointed_run()  # inside a durable workflow: model and tool calls are steps
        run_id = str(opts.get("run_id") or new_id(checkpoint))
        message_id = message_id or new_id(checkpoint)
        prompt: list[dict[str, Any]] = []
        if instructions:
            prompt.append({"role": "system", "content": instructions})
        inputs = to_prompt(messages, created_at=int(now_ms()))
        prompt.extend(inputs)
        hooks = self._with_processors(hooks, opts, cancel)
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
        user_signal: AbortSignal | None = opts.get("abort_signal")
        hooks = judged_hooks(
            hooks,
            opts.get("is_task_complete"),
            self.goal,
            self._goal_storage if memory else None,
            agent_id=self.id,
            scope=scope,
            run_id=run_id,
            max_steps=opts.get("max_steps"),
            now_ms=now_ms,
            signal=AbortSignal.any([user_signal, cancel.signal])
            if user_signal is not None
            else cancel.signal,
        )
        if checkpoint is not None:
            hooks, model = checkpoint.hooks(hooks), checkpoint.model(model)
        if traced is not None:  # outermost in the hooks chain (docs/decisions.md, "Phase 2 seams")
            hooks, model = TracingHooks(hooks, traced), traced.model(model)
        config = self._run_config(
            opts, run_id, message_id, prompt, tools, hooks, cancel, now_ms, sleep, model
        )
        recorder.start(run_id, stored_options(opts), scope)
        recorder.trace = traced
        config.on_suspend = recorder.on_loop_suspend
        source: AsyncIterator[Chunk] = run_loop(config)
        if scope is not None and memory is not None:
            source = memory.remember(
                source,
                scope,
                config.prompt,
                [] if continuation else inputs,
                message_id=message_id,
                load=not continuation,
                model=model,  # the title model when generate_title has none of its own
            )
        if traced is not None:
            source = traced.wrap(source)
        return source, config

    def _run_config(
        self,
        opts: Mapping[str, Any],
        run_id: str,
        message_id: str,
        prompt: list[dict[str, Any]],
        tools: dict[str, Tool],
        hooks: LoopHooks,
        cancel: AbortController,
        now_ms: Callable[[], float],
        sleep: Callable[[float], Awaitable[None]],
        model: LanguageModel | None = None,
    ) -> RunConfig:
        """The loop's configuration of one run (or one leg of a resumed run) from its options."""
        user_signal: AbortSignal | None = opts.get("abort_signal")
        signal = AbortSignal.any([user_signal, cancel.signal]) if user_signal is not None else cancel.signal
        stop_when = opts.get("stop_when")
        conditions: list[StopCondition] = (
            [] if stop_when is None else list(stop_when) if isinstance(stop_when, Sequence) else [stop_when]
        )
        max_steps = opts.get("max_steps")
        structured = opts.get("structured_output")
        so = StructuredOutputConfig.from_option(structured) if structured is not None else None
        concurrency = opts.get("tool_call_concurrency", 10)
        if isinstance(concurrency, Mapping):
            concurrency = concurrency.get("limit", 10)
        policy = opts.get("require_tool_approval", self.require_tool_approval)
        if forces_serial_tools(policy, tools):
            concurrency = 1  # a call that waits for a human must not race the others
        return RunConfig(
            agent_id=self.id,
            run_id=run_id,
            message_id=message_id,
            model=model if model is not None else self.model,
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
            approval=approval_check(policy, tools),
        )

    def _output(
        self,
        source: AsyncIterator[Chunk],
        opts: Mapping[str, Any],
        cancel: AbortController,
        recorder: SuspendRecorder,
        run_id: str,
        message_id: str,
        *,
        result_tripwire: Callable[[], dict[str, Any] | None] | None = None,
    ) -> ModelOutput:
        return ModelOutput(
            source,
            run_id=run_id,
            message_id=message_id,
            include_raw_chunks=bool(opts.get("include_raw_chunks", False)),
            on_step_finish=opts.get("on_step_finish"),
            on_finish=opts.get("on_finish"),
            on_error=opts.get("on_error"),
            on_abort=opts.get("on_abort"),
            experimental_transform=opts.get("experimental_transform"),
            has_structured_output=opts.get("structured_output") is not None,
            on_cancel=cancel.abort,
            on_suspended=recorder.on_output_suspended,
            result_tripwire=result_tripwire,
        )

    def _with_processors(
        self, hooks: LoopHooks, opts: Mapping[str, Any], cancel: AbortController
    ) -> LoopHooks:
        """The run's hooks with its processors around them (the agent's, or the call's options)."""
        inputs = _option(opts, "input_processors", self.input_processors, INPUT_METHODS)
        outputs = _option(opts, "output_processors", self.output_processors, OUTPUT_METHODS)
        errors = _option(opts, "error_processors", self.error_processors, ERROR_METHODS)
        if not (inputs or outputs or errors):
            return hooks
        user_signal: AbortSignal | None = opts.get("abort_signal")
        signal = AbortSignal.any([user_signal, cancel.signal]) if user_signal is not None else cancel.signal
        retries = opts.get("max_processor_retries", self.max_processor_retries)
        return ProcessorHooks(
            hooks,
            input_processors=inputs,
            output_processors=outputs,
            error_processors=errors,
            max_processor_retries=check_retries(retries),
            signal=signal,
        )

    # ------------------------------------------------------------------------- human in the loop

    def approve_tool_call(
        self, *, run_id: str, tool_call_id: str | None = None, **options: Unpack[ResumeOptions]
    ) -> ModelOutput:
        """Approve the call a suspended run waits for (Mastra's ``approveToolCall``): the tool runs
        and the run goes on. Returns the continuation at once, as `stream` does: no ``start`` chunk,
        its steps and usage cover the whole run. A run that cannot be resumed (unknown, finished,
        already resumed, another call) fails the output with `ResumeError`. ``tool_call_id``
        defaults to the call the run waits for (given, it must be that call). ``options`` are the
        leg's (callbacks, ...); the run's stored JSON options apply unless given again.
        """
        return self._resume_leg(run_id, ResumeDecision(tool_call_id or "", "approve"), options)

    def decline_tool_call(
        self,
        *,
        run_id: str,
        tool_call_id: str | None = None,
        reason: str | None = None,
        **options: Unpack[ResumeOptions],
    ) -> ModelOutput:
        """Decline the call a suspended run waits for (Mastra's ``declineToolCall``): the tool does
        not run, ``tool-output-denied`` is streamed and the model is told ``reason`` (default "Tool
        call was not approved by the user"); then the run goes on, as with `approve_tool_call`.
        """
        return self._resume_leg(run_id, ResumeDecision(tool_call_id or "", "decline", reason=reason), options)

    def resume_stream(
        self,
        resume_data: Any,
        *,
        run_id: str,
        tool_call_id: str | None = None,
        **options: Unpack[ResumeOptions],
    ) -> ModelOutput:
        """Resume a run whose tool called ``context.suspend()`` (Mastra's ``resumeStream``): the tool
        runs again from the start with ``context.resume_data = resume_data`` (validated against its
        ``resume_schema``: a mismatch fails the output with `ToolInputValidationError` naming the
        field, and the run keeps waiting). For a run waiting for approval, ``{"approved": bool,
        "reason"?: str}`` approves or declines. Returns at once, as `approve_tool_call`.
        """
        return self._resume_leg(
            run_id, ResumeDecision(tool_call_id or "", "resume", resume_data=resume_data), options
        )

    async def suspended_run(
        self, *, run_id: str | None = None, thread_id: str | None = None
    ) -> dict[str, Any] | None:
        """What a suspended run of this agent waits for, or ``None`` (no such run, or it is not
        waiting any more): ``{"runId", "kind": "approval" | "suspend", "toolCallId", "toolName",
        "args", "suspendPayload", "resumeSchema", "threadId", "resourceId"}`` (the last two: the
        run's memory thread, ``None`` without one; check them before letting a request resume it). Give ``run_id``, or ``thread_id`` for the
        suspended run of a memory thread (the last run of the thread that suspended)."""
        if (run_id is None) == (thread_id is None):
            raise TypeError("suspended_run() takes exactly one of run_id= or thread_id=")
        snapshots = self._run_snapshots()
        if thread_id is not None:
            pointer = await snapshots.pending_for_thread(thread_id)
            if pointer is None:
                return None
            run_id = str(pointer["runId"])
        assert run_id is not None
        try:
            snapshot = await snapshots.load(run_id)
        except ResumeError:
            return None
        memory = (snapshot.get("options") or {}).get("memory")
        scope = resolve_memory_option(memory) if memory is not None else None
        return {
            "runId": run_id,
            **snapshot["pending"],
            "threadId": scope.thread_id if scope is not None else None,
            "resourceId": scope.resource_id if scope is not None else None,
        }

    def _resume_leg(self, run_id: str, decision: ResumeDecision, options: Mapping[str, Any]) -> ModelOutput:
        if not isinstance(run_id, str) or not run_id:
            raise ValueError(f"run_id must be the suspended run's id (a non-empty str), got {run_id!r}")
        check_options(options, RESUME_OPTIONS)
        opts: dict[str, Any] = {**self.default_options, **options}
        opts.pop("until_idle", None)
        cancel = AbortController()
        recorder = SuspendRecorder(self._run_snapshots(), run_id=run_id, options={})
        checkpoint = begin_checkpointed_run()
        message_id = new_id(checkpoint)
        holder: list[ModelOutput] = []
        source = self._leg_source(decision, dict(options), cancel, recorder, message_id, lambda: holder[0])
        output = self._output(source, opts, cancel, recorder, run_id, message_id)
        holder.append(output)
        return output

    def _leg_source(
        self,
        decision: ResumeDecision,
        explicit: dict[str, Any],
        cancel: AbortController,
        recorder: SuspendRecorder,
        message_id: str,
        output: Callable[[], ModelOutput],
        inputs: list[dict[str, Any]] | None = None,
    ) -> AsyncIterator[Chunk]:
        """The chunks of a leg continuing run ``recorder.run_id`` (see `resumed_source`); its options
        are the stored run's, overridden by ``explicit``. ``inputs``: user messages this leg answers
        (auto-resume), stored with its response."""

        # made now, not when the leg starts streaming: its span's parent is the caller's context
        traced = trace_run(
            self.instrument, agent_id=self.id, agent_name=self.name, run_id=recorder.run_id, model=self.model, prompt=[]
        )

        def leg_config(snapshot: Mapping[str, Any]) -> Leg:
            stored: Mapping[str, Any] = snapshot.get("options") or {}
            _same_thread(recorder.run_id, stored.get("memory"), explicit.get("memory"))
            merged = {**self.default_options, **stored, **explicit}
            merged.pop("until_idle", None)
            merged.pop("auto_resume_suspended_tools", None)
            memory_option = merged.get("memory")
            scope = resolve_memory_option(memory_option) if memory_option is not None else None
            tools, hooks = self.tools, self.hooks
            background = self._background
            if background is not None and background.enabled:
                thread, resource = (scope.thread_id, scope.resource_id) if scope else (None, None)
                setup = background.prepare_run(self, thread_id=thread, resource_id=resource)
                tools, hooks = setup.tools, setup.hooks
            hooks = self._with_processors(hooks, merged, cancel)
            now_ms: Callable[[], float] = merged.get("clock") or _now_ms
            sleep: Callable[[float], Awaitable[None]] = merged.get("sleep") or asyncio.sleep
            if self.agents or self.workflows:
                tools = {**tools, **delegation_tools(DelegationRun(self, now_ms, sleep))}
            run_id = recorder.run_id
            loop: Mapping[str, Any] = snapshot.get("loop") or {}
            user_signal: AbortSignal | None = merged.get("abort_signal")
            hooks = judged_hooks(
                hooks, None, self.goal, self._goal_storage if scope is not None else None,
                agent_id=self.id, scope=scope, run_id=run_id, max_steps=merged.get("max_steps"), now_ms=now_ms,
                signal=AbortSignal.any([user_signal, cancel.signal]) if user_signal is not None else cancel.signal,
                resumed=loop,
            )
            model, checkpoint = self.model, begin_checkpointed_run()
            if checkpoint is not None:
                hooks, model = checkpoint.hooks(hooks), checkpoint.model(model)
            if traced is not None:  # outermost, as in a first leg
                traced.continues(snapshot.get("trace"), decision.action, list(loop.get("messages") or []))
                hooks, model = TracingHooks(hooks, traced), traced.model(model)
            config = self._run_config(merged, run_id, message_id, [], tools, hooks, cancel, now_ms, sleep, model)
            recorder.start(run_id, stored_options(merged), scope)
            recorder.trace = traced
            config.on_suspend = recorder.on_loop_suspend
            return config, scope, traced.wrap if traced is not None else None

        return resumed_source(
            decision,
            tools=self.tools,
            output=output,
            recorder=recorder,
            leg_config=leg_config,
            memory=self._memory_for_run,
            run=run_loop,
            inputs=inputs,
        )

    async def generate(self, messages: MessageInput, **options: Unpack[TurnOptions]) -> FullOutput:
        """Run to the end and return every result at once (raises the run's error if it failed)."""
        if options.get("until_idle") not in (None, False):
            raise TypeError("generate() does not take until_idle: use stream(..., until_idle=True)")
        check_options(options)
        return await self._stream_turn(messages, {**self.default_options, **options}).get_full_output()

    def __repr__(self) -> str:
        return f"Agent(id={self.id!r}, model={self._model_spec!r}, tools={list(self.tools)})"
