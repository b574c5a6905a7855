"""A new turn of an `Agent`: its chunk source (loop, memory, tracing), its loop configuration and the
`ModelOutput` over it; a dynamic agent's turn resolves its fields when the run starts."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

from .._abort import AbortController
from .._request_context import as_request_context
from ..chunks import Chunk
from ..stream import ModelOutput, RunAccumulator
from ._checkpoints import begin_checkpointed_run, new_id
from ._dynamic import check_dynamic_defaults, resolved_agent
from ._hooks import BackgroundSeam
from ._loop import RunConfig, run_loop
from ._messages import MessageInput
from ._plan import RunPlan, merge_options, plan_run
from ._resume import SuspendRecorder, auto_resume_turn, stored_options
from ._tripwire import Tripwire

if TYPE_CHECKING:
    from ._agent import Agent

__all__ = ["dynamic_turn", "loop_config", "stream_turn", "turn_output", "turn_source"]


def stream_turn(
    agent: Agent,
    messages: MessageInput,
    options: Mapping[str, Any],
    *,
    continuation: bool = False,
    background: BackgroundSeam | None = None,
    background_scope: tuple[str | None, str | None] | None = None,
) -> ModelOutput:
    """One turn with the run's merged ``options`` (`merged_options`). ``continuation``: an
    until-idle continuation whose ``messages`` already hold the history (memory is not
    reloaded and only the response is stored).

    With enabled background tasks (``background`` or the Mastra's), the run gets the tools,
    instructions and hooks of `BackgroundSeam.prepare_run`; its tasks belong to
    ``background_scope`` (thread, resource), by default the memory thread's.
    """
    if agent._dynamic:
        return dynamic_turn(
            agent,
            messages,
            options,
            continuation=continuation,
            background=background,
            background_scope=background_scope,
        )
    opts = dict(options)
    opts.pop("until_idle", None)
    auto_resume = opts.pop("auto_resume_suspended_tools", False)
    cancel = AbortController()
    recorder = SuspendRecorder(agent._run_snapshots(), run_id="", options={})
    if auto_resume and opts.get("memory") is not None and not continuation:
        return auto_resume_turn(agent, messages, opts, cancel, recorder)
    holder: list[ModelOutput] = []
    source, config = turn_source(
        agent,
        messages,
        opts,
        cancel,
        recorder,
        continuation=continuation,
        background=background,
        background_scope=background_scope,
        results=lambda: holder[0].accumulator,
    )
    blocked: list[Tripwire] = []
    config.on_result_tripwire = blocked.append
    output = turn_output(
        agent,
        source,
        opts,
        cancel,
        recorder,
        config.run_id,
        config.message_id,
        result_tripwire=lambda: blocked[-1].data() if blocked else None,
    )
    holder.append(output)
    return output


def dynamic_turn(
    agent: Agent,
    messages: MessageInput,
    options: Mapping[str, Any],
    *,
    continuation: bool,
    background: BackgroundSeam | None,
    background_scope: tuple[str | None, str | None] | None,
) -> ModelOutput:
    """A turn of a dynamic agent: its fields are resolved for the run's request context when
    the run starts (the output exists at once, as for any turn)."""
    opts = dict(options)
    if opts.pop("auto_resume_suspended_tools", False):
        raise TypeError(
            f"agent {agent.id!r}: auto_resume_suspended_tools needs an agent without dynamic fields"
        )
    opts.pop("until_idle", None)
    context = as_request_context(opts.get("request_context"))
    opts["request_context"] = context
    opts["run_id"] = str(opts.get("run_id") or new_id(None))
    message_id = new_id(None)
    cancel = AbortController()
    recorder = SuspendRecorder(agent._run_snapshots(), run_id="", options={})
    blocked: list[Tripwire] = []

    async def source() -> AsyncIterator[Chunk]:
        resolved = await resolved_agent(agent, agent._dynamic, context)
        run_opts = opts  # static defaults were merged by the caller, once
        if "default_options" in agent._dynamic:
            check_dynamic_defaults(agent.id, resolved.default_options)
            run_opts = merge_options(resolved.default_options, opts)
        chunks, config = turn_source(
            resolved,
            messages,
            run_opts,
            cancel,
            recorder,
            continuation=continuation,
            background=background,
            background_scope=background_scope,
            message_id=message_id,
            results=lambda: holder[0].accumulator,
        )
        config.on_result_tripwire = blocked.append
        async for chunk in chunks:
            yield chunk

    holder: list[ModelOutput] = []
    output = turn_output(
        agent,
        source(),
        opts,
        cancel,
        recorder,
        opts["run_id"],
        message_id,
        result_tripwire=lambda: blocked[-1].data() if blocked else None,
    )
    holder.append(output)
    return output


def turn_source(
    agent: Agent,
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
    """The chunk source of one new turn and its loop configuration."""
    plan = plan_run(
        agent,
        opts,
        cancel,
        checkpoint=begin_checkpointed_run(),  # inside a durable workflow: model and tool calls are steps
        messages=messages,
        message_id=message_id,
        background=background,
        background_scope=background_scope,
    )
    config = loop_config(plan, recorder)
    config.results = results  # the loop reads its step's text from the output's fold
    source: AsyncIterator[Chunk] = run_loop(config)
    if plan.memory is not None and plan.scope is not None:
        source = plan.memory.remember(
            source,
            plan.scope,
            config.prompt,
            [] if continuation else plan.inputs,
            message_id=plan.message_id,
            input_ids=[] if continuation else plan.input_ids,
            load=not continuation,
            model=plan.model,  # the title model when generate_title has none of its own
        )
    if plan.trace is not None:
        source = plan.trace.wrap(source)
    return source, config


def turn_output(
    agent: Agent,
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


def loop_config(plan: RunPlan, recorder: SuspendRecorder) -> RunConfig:
    """The loop's configuration of ``plan``, kept by ``recorder`` should it suspend."""
    config = plan.config()
    recorder.start(plan.run_id, stored_options(plan.options), plan.scope)
    recorder.trace = plan.trace
    config.on_suspend = recorder.on_loop_suspend
    return config
