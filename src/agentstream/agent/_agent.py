"""``Agent``: ``stream()`` returns a `ModelOutput` over the agent loop."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._abort import AbortController
from ..chunks import Chunk
from ..memory import Memory, resolve_memory_option
from ..models import LanguageModel
from ..stream import FullOutput, ModelOutput, RunAccumulator
from ..tools import AgentBackgroundConfig, Tool
from ..tracing import InstrumentationSettings, check_instrument_option
from ._call_index import SuspendedCalls
from ._delegation import check_sub_agents, check_workflows
from ._dynamic import Dynamic, dynamic_fields
from ._goal import GoalConfig
from ._goal_record import GoalObjective, GoalStatus
from ._goal_record import load_objective as _load_objective
from ._goal_record import set_objective as _set_objective
from ._goal_record import update_objective as _update_objective
from ._hooks import BackgroundSeam, LoopHooks, StopCondition
from ._identity import check_identity
from ._legs import leg_source, resume_leg
from ._loop import RunConfig
from ._messages import MessageInput
from ._options import ResumeOptions, StreamOptions, TurnOptions, check_options
from ._plan import check_retries, merge_options
from ._processors import (
    ERROR_METHODS,
    INPUT_METHODS,
    OUTPUT_METHODS,
    Processor,
    check_processors,
)
from ._resume import (
    SuspendRecorder,
    approval_check,
)
from ._suspension import ApprovalPolicy, ResumeDecision, ResumeError, RunSnapshots
from ._turns import stream_turn, turn_output, turn_source

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
        id: str | None = None,
        name: str | None = None,
        instructions: str | Dynamic[str] = "",
        model: LanguageModel | str | list[Any] | Dynamic[LanguageModel | str | list[Any]],
        tools: Iterable[Tool]
        | Mapping[str, Tool]
        | Dynamic[Iterable[Tool] | Mapping[str, Tool]]
        | None = None,
        default_options: Mapping[str, Any] | Dynamic[Mapping[str, Any]] | None = None,
        hooks: LoopHooks | None = None,
        memory: Memory | Dynamic[Memory | None] | None = None,
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
        id = check_identity(id, name, model)
        self.id = id
        self.name = name or id
        self._suspended_calls = SuspendedCalls()
        self.description = description
        self.instructions: str = ""
        self.tools: dict[str, Tool] = {}
        self.default_options: dict[str, Any] = {}
        self.memory: Memory | None = None
        self._model_spec: Any = None
        self._model: LanguageModel | None = None
        self._dynamic: dict[str, Callable[..., Any]] = dynamic_fields(
            id,
            {
                "instructions": instructions,
                "model": model,
                "tools": tools,
                "default_options": default_options,
                "memory": memory,
            },
        )
        # A dynamic field holds its neutral value here; each run resolves it (`resolved_agent`).
        given = {
            "instructions": instructions,
            "model": model,
            "tools": tools,
            "default_options": default_options,
        }
        neutral: dict[str, Any] = {"instructions": "", "model": None, "tools": None, "default_options": None}
        for field_name, value in given.items():
            self._set_field(field_name, neutral[field_name] if field_name in self._dynamic else value)
        self.hooks = hooks or LoopHooks()
        self._set_field("memory", None if "memory" in self._dynamic else memory)
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

    async def get_memory(self) -> Memory | None:
        """The agent's memory (Mastra's ``getMemory``), bound to the Mastra's storage when it has
        none of its own; ``None`` when the agent has no memory (or nothing to keep it in)."""
        if self.memory is None:
            return None
        try:
            return self._memory_for_run()
        except ValueError:
            return None

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
        clock = self.default_options.get("clock") or (lambda: time.time() * 1000.0)
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
        return RunSnapshots(storage, self.id, self._suspended_calls)

    def _set_field(self, name: str, value: Any) -> None:
        """Set a field that may be dynamic (``instructions``, ``model``, ``tools``, ``default_options``,
        ``memory``), checked as the constructor checks it: at construction, and for each run of a
        dynamic agent with the value its function returned."""
        where = f"agent {self.id!r}"
        if name == "instructions":
            if not isinstance(value, str):
                raise TypeError(f"{where}: instructions must be a string, got {type(value).__name__}")
            self.instructions = value
        elif name == "model":
            if value is not None and not isinstance(value, str | list | tuple | LanguageModel):
                raise TypeError(
                    f"{where}: model must be a model string, a LanguageModel or a list of fallbacks, "
                    f"got {type(value).__name__}"
                )
            if isinstance(value, list | tuple):
                check_identity(self.id, None, value)
            self._model_spec = value
            self._model = value if isinstance(value, LanguageModel) else None
        elif name == "tools":
            self.tools = _tool_map(self.id, value)
        elif name == "default_options":
            options = dict(value or {})
            check_options(options)
            self.default_options = options
        elif name == "memory":
            if value is not None and not isinstance(value, Memory):
                raise TypeError(f"{where}: memory must be a Memory, got {type(value).__name__}")
            self.memory = value

    @property
    def model(self) -> LanguageModel:
        """The resolved `LanguageModel` (a model string such as `"openai/gpt-4o-mini"` is resolved on first
        use).
        """
        if self._model is None and self._model_spec is None:
            raise TypeError(
                f"agent {self.id!r}: its model is a function of the request context, chosen for each run"
            )
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
        until_idle = options.get("until_idle", self.default_options.get("until_idle"))
        if until_idle is not None and until_idle is not False:
            return self._until_idle(messages, until_idle, options)  # type: ignore[return-value]
        return self._stream_turn(messages, self.merged_options(options))

    def merged_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """A run's options: ``default_options`` under ``options`` (merged once, where a run starts)."""
        return merge_options(self.default_options, options)

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
        spec: dict[str, Any] = {} if max_idle_ms is None else {"max_idle_ms": max_idle_ms}
        return self._until_idle(messages, spec or True, options)

    def _until_idle(
        self, messages: MessageInput, spec: Any, options: Mapping[str, Any]
    ) -> UntilIdleOutput | ModelOutput:
        """``options`` are the call's: the until-idle stream merges them (once) for all its turns."""
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
            # as in Mastra: no manager → a plain stream
            return self._stream_turn(messages, self.merged_options(options))
        opts = {k: v for k, v in options.items() if k != "until_idle"}
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
        """One turn with the run's merged ``options`` (`_turns.stream_turn`)."""
        return stream_turn(
            self,
            messages,
            options,
            continuation=continuation,
            background=background,
            background_scope=background_scope,
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
        results: Callable[[], RunAccumulator] | None = None,
    ) -> tuple[AsyncIterator[Chunk], RunConfig]:
        """The chunk source of one new turn and its loop configuration (`_turns.turn_source`)."""
        return turn_source(
            self,
            messages,
            opts,
            cancel,
            recorder,
            continuation=continuation,
            background=background,
            background_scope=background_scope,
            message_id=message_id,
            results=results,
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
        """The `ModelOutput` of a turn or leg (`_turns.turn_output`)."""
        return turn_output(
            self, source, opts, cancel, recorder, run_id, message_id, result_tripwire=result_tripwire
        )

    # ------------------------------------------------------------------------- human in the loop

    def approve_tool_call(
        self, *, run_id: str | None = None, tool_call_id: str | None = None, **options: Unpack[ResumeOptions]
    ) -> ModelOutput:
        """Approve the call a suspended run waits for (Mastra's ``approveToolCall``): the tool runs
        and the run goes on. Returns the continuation at once, as `stream` does: no ``start`` chunk,
        its steps and usage cover the whole run. A run that cannot be resumed (unknown, finished,
        already resumed, another call) fails the output with `ResumeError`. ``tool_call_id``
        defaults to the call the run waits for (given, it must be that call); ``run_id`` may be left
        out when the run suspended in this process and ``tool_call_id`` names its call. ``options``
        are the leg's (callbacks, ...); the run's stored JSON options apply unless given again.
        """
        return resume_leg(self, run_id, ResumeDecision(tool_call_id or "", "approve"), options)

    def decline_tool_call(
        self,
        *,
        run_id: str | None = None,
        tool_call_id: str | None = None,
        reason: str | None = None,
        **options: Unpack[ResumeOptions],
    ) -> ModelOutput:
        """Decline the call a suspended run waits for (Mastra's ``declineToolCall``): the tool does
        not run, ``tool-output-denied`` is streamed and the model is told ``reason`` (default "Tool
        call was not approved by the user"); then the run goes on, as with `approve_tool_call`.
        """
        return resume_leg(self, run_id, ResumeDecision(tool_call_id or "", "decline", reason=reason), options)

    def resume_stream(
        self,
        resume_data: Any,
        *,
        run_id: str | None = None,
        tool_call_id: str | None = None,
        **options: Unpack[ResumeOptions],
    ) -> ModelOutput:
        """Resume a run whose tool called ``context.suspend()`` (Mastra's ``resumeStream``): the tool
        runs again from the start with ``context.resume_data = resume_data`` (validated against its
        ``resume_schema``: a mismatch fails the output with `ToolInputValidationError` naming the
        field, and the run keeps waiting). For a run waiting for approval, ``{"approved": bool,
        "reason"?: str}`` approves or declines. Returns at once, as `approve_tool_call`.
        """
        return resume_leg(
            self, run_id, ResumeDecision(tool_call_id or "", "resume", resume_data=resume_data), options
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

    async def lost_run(self, run_id: str) -> str | None:
        """Why run ``run_id`` of this agent cannot go on because the process running its resumed
        leg died (it was marked failed; a sentence for people), or ``None``."""
        return await self._run_snapshots().lost(run_id)

    def _leg_source(
        self,
        decision: ResumeDecision,
        explicit: dict[str, Any],
        cancel: AbortController,
        recorder: SuspendRecorder,
        message_id: str,
        output: Callable[[], ModelOutput],
        inputs: list[dict[str, Any]] | None = None,
        *,
        merged: Mapping[str, Any] | None = None,
    ) -> AsyncIterator[Chunk]:
        """The chunks of a leg continuing run ``recorder.run_id`` (`_legs.leg_source`)."""
        return leg_source(
            self, decision, explicit, cancel, recorder, message_id, output, inputs, merged=merged
        )

    async def generate(self, messages: MessageInput, **options: Unpack[TurnOptions]) -> FullOutput:
        """Run to the end and return every result at once (raises the run's error if it failed)."""
        if options.get("until_idle") not in (None, False):
            raise TypeError("generate() does not take until_idle: use stream(..., until_idle=True)")
        check_options(options)
        return await self._stream_turn(messages, self.merged_options(options)).get_full_output()

    def __repr__(self) -> str:
        return f"Agent(id={self.id!r}, model={self._model_spec!r}, tools={list(self.tools)})"


def _tool_map(agent_id: str, tools: Any) -> dict[str, Tool]:
    """``tools=`` as the agent's ``{id: Tool}``: a mapping, or an iterable of `Tool` objects."""
    if tools is None:
        return {}
    if isinstance(tools, Mapping):
        return dict(tools)
    found: dict[str, Tool] = {}
    for t in tools:
        if not isinstance(t, Tool):
            raise TypeError(
                f"agent {agent_id!r}: tools must be Tool objects (use @tool), got {type(t).__name__}"
            )
        found[t.id] = t
    return found
