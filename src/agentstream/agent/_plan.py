"""A run's plan: everything one run (a new turn, a resumed leg, an until-idle continuation) needs,
computed in one place (`plan_run`) into one frozen `RunPlan` before the loop starts.

The options are merged once, the abort signal combined once, and the hooks chain composed once
from one ordered list of concerns (`compose_hooks`), innermost first:

==================  ================================================================================
the agent's hooks   ``Agent(hooks=...)``
background          dispatch of background-eligible tools (`BackgroundSeam.prepare_run` wraps the
                    agent's hooks itself, so it is the chain's base when enabled)
prepare_step        the call's ``prepare_step`` (`PrepareStepHooks`): each model call's model,
                    tools, tool choice and prompt
processors          input, output and error processors (`ProcessorHooks`)
is_task_complete    the run's completion scorers (`IsTaskCompleteHooks`)
goal                the memory thread's objective (`GoalHooks`)
checkpoint          tool calls as durable steps (`RunCheckpoint.hooks`)
tracing             each tool call in its span (`TracingHooks`), outermost
==================  ================================================================================

Delegation (sub-agents and workflows) is tools only and needs no seam; memory wraps the run's
chunk source (`Memory.remember`), not its hooks.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._abort import AbortController, AbortSignal
from .._request_context import as_request_context
from ..memory import resolve_memory_option
from ..tracing import trace_run
from ._checkpoints import RunCheckpoint, new_id
from ._delegation import DelegationRun, delegation_tools
from ._goal import GoalHooks
from ._hooks import Layer, LoopHooks, StopCondition, compose_hooks
from ._loop import RunConfig
from ._messages import MessageInput, to_prompt
from ._prepare_step import PrepareStepHooks, StepModel, check_prepare_step
from ._processors import ERROR_METHODS, INPUT_METHODS, OUTPUT_METHODS, ProcessorHooks, check_processors
from ._resume import approval_check, forces_serial_tools
from ._settings import normalize_model_settings
from ._structured import StructuredOutputConfig
from ._suspension import ApprovalPolicy
from ._task_complete import IsTaskCompleteConfig, IsTaskCompleteHooks
from ._traced import TracingHooks

if TYPE_CHECKING:
    from ..memory import Memory, MemoryScope
    from ..models import LanguageModel
    from ..tools import Tool
    from ..tracing import RunTrace
    from ._agent import Agent
    from ._hooks import BackgroundSeam

__all__ = ["RunPlan", "check_retries", "merge_options", "plan_run", "run_signal"]

CONCERNS = ("background", "prepare_step", "processors", "is_task_complete", "goal", "checkpoint", "tracing")
"""The concerns of a run's hooks chain, innermost first (the order `plan_run` composes them in)."""


def _now_ms() -> float:
    return time.time() * 1000.0


def merge_options(defaults: Mapping[str, Any], options: Mapping[str, Any]) -> dict[str, Any]:
    """The options of a run: the agent's ``default_options`` under the call's (done once per run,
    where it starts: a second merge would bring back what a continuation left out, ``on_finish``)."""
    merged = {**defaults, **options}
    merged.pop("until_idle", None)
    return merged


def run_signal(options: Mapping[str, Any], cancel: AbortController) -> AbortSignal:
    """The run's one abort signal: the caller's ``abort_signal`` or the output being cancelled."""
    user: AbortSignal | None = options.get("abort_signal")
    return AbortSignal.any([user, cancel.signal]) if user is not None else cancel.signal


def check_retries(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"max_processor_retries must be an int >= 0 or None, got {value!r}")
    return value


@dataclass(frozen=True)
class RunPlan:
    """One run as it was planned; the loop's `RunConfig` is made from it (`config`)."""

    agent_id: str
    run_id: str
    """The run's id: the call's ``run_id``, a new one, or (a leg) the suspended run's."""
    message_id: str
    """The response message's id (new for every turn and leg)."""
    options: Mapping[str, Any]
    """The merged options: ``default_options`` under the stored run's (a leg) under the call's."""
    model: LanguageModel
    """The agent's model, checkpointed and traced when the run is."""
    prompt: list[dict[str, Any]]
    """The first model call's prompt: instructions, then history and input (``[]`` on a leg: the
    snapshot holds it)."""
    inputs: list[dict[str, Any]]
    """The user messages this run answers (what memory stores with the response)."""
    input_ids: list[str | None]
    """The id each of ``inputs`` was given with (``None``: memory makes one)."""
    tools: dict[str, Tool]
    """The agent's tools, as background tasks wrap them, plus the delegation tools."""
    instructions: str
    """The system message: the agent's (or the call's ``instructions``) and what background
    tasks add."""
    cancel: AbortController
    """Cancelling the output aborts the run through it."""
    signal: AbortSignal
    """The run's one abort signal (`run_signal`), shared by the loop, processors and the goal."""
    hooks: LoopHooks
    """The one hooks chain (see the module docstring)."""
    layers: tuple[str, ...]
    """The concerns the chain holds, innermost first (a subset of `CONCERNS`)."""
    scope: MemoryScope | None
    """The memory thread and resource (``memory=``), if any."""
    memory: Memory | None
    """The memory that loads and stores the thread (``None`` without ``memory=``)."""
    trace: RunTrace | None
    """The run's spans (``None``: not traced)."""
    checkpoint: RunCheckpoint | None
    """Set inside a durable workflow: model and tool calls are its steps."""
    now_ms: Callable[[], float]
    """The run's clock (``clock``), in ms."""
    sleep: Callable[[float], Awaitable[None]]
    """How the run waits (``sleep``): timeouts, the rate-limit pause."""
    approval: bool | ApprovalPolicy
    """``require_tool_approval``: the call's, else the agent's."""
    output_processed: bool
    """Output processors see the result (the run's, or memory's, as Mastra's memory is a
    processor): ``finish`` then carries ``response``."""

    def config(self) -> RunConfig:
        """The loop's configuration of this run."""
        opts = self.options
        stop_when = opts.get("stop_when")
        conditions: list[StopCondition] = (
            [] if stop_when is None else list(stop_when) if isinstance(stop_when, Sequence) else [stop_when]
        )
        max_steps = opts.get("max_steps")
        structured = opts.get("structured_output")
        concurrency = opts.get("tool_call_concurrency", 10)
        if isinstance(concurrency, Mapping):
            concurrency = concurrency.get("limit", 10)
        policy = self.approval
        if forces_serial_tools(policy, self.tools):
            concurrency = 1  # a call that waits for a human must not race the others
        return RunConfig(
            agent_id=self.agent_id,
            run_id=self.run_id,
            message_id=self.message_id,
            model=self.model,
            prompt=self.prompt,
            tools=self.tools,
            signal=self.signal,
            now_ms=self.now_ms,
            max_steps=int(max_steps) if max_steps is not None else (5 if not conditions else 10**9),
            stop_when=conditions,
            on_chunk=opts.get("on_chunk"),
            include_raw_chunks=bool(opts.get("include_raw_chunks", False)),
            structured_output=StructuredOutputConfig.from_option(structured)
            if structured is not None
            else None,
            tool_choice=opts.get("tool_choice"),
            active_tools=opts.get("active_tools"),
            model_settings=normalize_model_settings(opts.get("model_settings")),
            tool_call_concurrency=int(concurrency),
            hooks=self.hooks,
            sleep=self.sleep,
            on_tool_error=opts.get("on_tool_error"),
            approval=approval_check(policy, self.tools),
            finish_response=self.output_processed,
            request_context=as_request_context(opts.get("request_context")),
        )


def _processor_layer(agent: Agent, opts: Mapping[str, Any], signal: AbortSignal) -> Layer | None:
    def option(name: str, default: list[Any], methods: Sequence[str]) -> list[Any]:
        return check_processors(opts[name], name, methods) if opts.get(name) is not None else default

    inputs = option("input_processors", agent.input_processors, INPUT_METHODS)
    outputs = option("output_processors", agent.output_processors, OUTPUT_METHODS)
    errors = option("error_processors", agent.error_processors, ERROR_METHODS)
    if not (inputs or outputs or errors):
        return None
    retries = check_retries(opts.get("max_processor_retries", agent.max_processor_retries))
    return lambda inner: ProcessorHooks(
        inner,
        input_processors=inputs,
        output_processors=outputs,
        error_processors=errors,
        max_processor_retries=retries,
        signal=signal,
        request_context=as_request_context(opts.get("request_context")),
    )


def plan_run(
    agent: Agent,
    opts: Mapping[str, Any],
    cancel: AbortController,
    *,
    checkpoint: RunCheckpoint | None,
    messages: MessageInput | None = None,
    message_id: str | None = None,
    run_id: str | None = None,
    background: BackgroundSeam | None = None,
    background_scope: tuple[str | None, str | None] | None = None,
    trace: RunTrace | None = None,
    resumed: Mapping[str, Any] | None = None,
) -> RunPlan:
    """The plan of one run of ``agent`` with the merged options ``opts``.

    ``messages``: a new turn's input (``None``: a leg resuming the run ``run_id`` from the stored
    loop state ``resumed``, whose prompt is in the snapshot). ``background`` / ``background_scope``:
    the background seam and the (thread, resource) its tasks belong to (defaults: the agent's, the
    memory thread's). ``trace``: a new turn's trace is made here; a leg passes the one it made when
    it was called (its span's parent is the caller's context).
    """
    context = as_request_context(opts.get("request_context"))
    if opts.get("request_context") is not context:  # one context per run: tools, processors, steps
        opts = {**opts, "request_context": context}
    memory_option = opts.get("memory")
    scope = resolve_memory_option(memory_option) if memory_option is not None else None
    memory = agent._memory_for_run() if scope is not None else None
    now_ms: Callable[[], float] = opts.get("clock") or _now_ms
    sleep: Callable[[float], Awaitable[None]] = opts.get("sleep") or asyncio.sleep
    signal = run_signal(opts, cancel)
    tools, instructions, base = agent.tools, agent.instructions, agent.hooks
    layers: list[str] = []
    background = background or agent._background
    if background is not None and background.enabled:
        if background_scope is None:
            background_scope = (scope.thread_id, scope.resource_id) if scope else (None, None)
        setup = background.prepare_run(agent, thread_id=background_scope[0], resource_id=background_scope[1])
        tools, instructions, base = setup.tools, setup.instructions, setup.hooks
        layers.append("background")
    if opts.get("instructions") is not None:
        # Keep what the background seam appended to the agent's own instructions.
        tail = instructions[len(agent.instructions) :] if instructions.startswith(agent.instructions) else ""
        instructions = str(opts["instructions"]) + tail
    if agent.agents or agent.workflows:
        tools = {**tools, **delegation_tools(DelegationRun(agent, now_ms, sleep))}
    if memory is not None and scope is not None:  # memory's own tools (updateWorkingMemory)
        tools = {**tools, **memory.run_tools(scope)}
    run_id = run_id or str(opts.get("run_id") or new_id(checkpoint))
    message_id = message_id or new_id(checkpoint)
    prompt: list[dict[str, Any]] = []
    inputs: list[dict[str, Any]] = []
    input_ids: list[str | None] = []
    if messages is not None:
        if instructions:
            prompt.append({"role": "system", "content": instructions})
        inputs = to_prompt(messages, created_at=int(now_ms()), ids=input_ids)
        prompt.extend(inputs)
    model = agent.model
    step_layer: Layer | None = None
    if opts.get("prepare_step") is not None:
        step_layer, model = _prepare_step_layer(opts, model, tools, signal)
    traced = trace
    if messages is not None:
        traced = trace_run(
            agent.instrument,
            agent_id=agent.id,
            agent_name=agent.name,
            run_id=run_id,
            model=model,
            prompt=prompt,
            thread_id=scope.thread_id if scope is not None else None,
        )
    chain = [("prepare_step", step_layer)]
    chain += _chain(agent, opts, signal, str(run_id), scope, now_ms, checkpoint, traced, resumed)
    hooks = compose_hooks(base, chain)
    layers += [name for name, layer in chain if layer is not None]
    if checkpoint is not None:
        model = checkpoint.model(model)
    if traced is not None:
        model = traced.model(model)
    return RunPlan(
        agent_id=agent.id,
        run_id=run_id,
        message_id=message_id,
        options=opts,
        model=model,
        prompt=prompt,
        inputs=inputs,
        input_ids=input_ids,
        tools=tools,
        instructions=instructions,
        cancel=cancel,
        signal=signal,
        hooks=hooks,
        layers=tuple(layers),
        scope=scope,
        memory=memory,
        trace=traced,
        checkpoint=checkpoint,
        now_ms=now_ms,
        sleep=sleep,
        approval=opts.get("require_tool_approval", agent.require_tool_approval),
        output_processed=scope is not None or _has_output_processors(agent, opts),
    )


def _prepare_step_layer(
    opts: Mapping[str, Any], model: LanguageModel, tools: dict[str, Tool], signal: AbortSignal
) -> tuple[Layer, LanguageModel]:
    """The ``prepare_step`` concern and the run's model it switches per step (`StepModel`)."""
    fn = check_prepare_step(opts["prepare_step"])
    step_model = StepModel(model)
    context = as_request_context(opts.get("request_context"))

    def layer(inner: LoopHooks) -> LoopHooks:
        return PrepareStepHooks(
            inner,
            fn,
            model=step_model,
            tools=tools,
            request_context=context,
            signal=signal,
            tool_choice=opts.get("tool_choice"),
            active_tools=opts.get("active_tools"),
        )

    return layer, step_model


def _has_output_processors(agent: Agent, opts: Mapping[str, Any]) -> bool:
    given = opts.get("output_processors")
    return bool(given if given is not None else agent.output_processors)


def _chain(
    agent: Agent,
    opts: Mapping[str, Any],
    signal: AbortSignal,
    run_id: str,
    scope: MemoryScope | None,
    now_ms: Callable[[], float],
    checkpoint: RunCheckpoint | None,
    traced: RunTrace | None,
    resumed: Mapping[str, Any] | None,
) -> list[tuple[str, Layer | None]]:
    """The run's concerns above the base, innermost first (`CONCERNS`); ``None``: not in this run."""
    task_complete = opts.get("is_task_complete")
    goal = agent.goal if scope is not None else None
    chain: list[tuple[str, Layer | None]] = [
        ("processors", _processor_layer(agent, opts, signal)),
        (
            "is_task_complete",
            None
            if task_complete is None
            else lambda inner: IsTaskCompleteHooks(
                inner,
                IsTaskCompleteConfig.from_value(task_complete),
                run_id=run_id,
                agent_id=agent.id,
                max_steps=opts.get("max_steps"),
                now_ms=now_ms,
                thread_id=scope.thread_id if scope else None,
                resource_id=scope.resource_id if scope else None,
            ),
        ),
        (
            "goal",
            None
            if goal is None or scope is None
            else lambda inner: GoalHooks(
                inner,
                goal,
                agent._goal_storage(),
                thread_id=scope.thread_id,
                resource_id=scope.resource_id,
                run_id=run_id,
                now_ms=now_ms,
                signal=signal,
                resumed=resumed,
            ),
        ),
        ("checkpoint", checkpoint.hooks if checkpoint is not None else None),
        ("tracing", (lambda inner: TracingHooks(inner, traced)) if traced is not None else None),
    ]
    return chain
