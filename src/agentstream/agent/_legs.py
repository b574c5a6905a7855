"""The legs that continue a suspended run of an `Agent` (``approve_tool_call``, ``decline_tool_call``,
``resume_stream``, auto-resume): the stored run's options under the leg's, its plan and chunk source."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

from .._abort import AbortController
from .._request_context import as_request_context
from ..chunks import Chunk
from ..memory import resolve_memory_option
from ..stream import ModelOutput
from ..tracing import trace_run
from ._call_index import thread_of
from ._checkpoints import begin_checkpointed_run, new_id
from ._dynamic import check_dynamic_defaults, resolved_agent
from ._loop import run_loop
from ._options import RESUME_OPTIONS, check_options
from ._plan import plan_run
from ._resume import Leg, SuspendRecorder, resumed_source
from ._suspension import ResumeDecision, ResumeError
from ._turns import loop_config, turn_output

if TYPE_CHECKING:
    from ._agent import Agent

__all__ = ["dynamic_leg", "leg_source", "resume_leg", "same_thread"]


def same_thread(run_id: str, stored: Any, given: Any) -> None:
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


def resume_leg(
    agent: Agent, run_id: str | None, decision: ResumeDecision, options: Mapping[str, Any]
) -> ModelOutput:
    """The output of a leg answering ``decision`` for suspended run ``run_id`` (at once: the leg
    streams when the output is read)."""
    run_id = agent._suspended_calls.run_for(agent.id, run_id, decision.tool_call_id, thread_of(options))
    check_options(options, RESUME_OPTIONS)
    cancel = AbortController()
    recorder = SuspendRecorder(agent._run_snapshots(), run_id=run_id, options={})
    checkpoint = begin_checkpointed_run()
    message_id = new_id(checkpoint)
    holder: list[ModelOutput] = []
    # the output's callbacks are the call's or the defaults' (a snapshot stores JSON options only)
    opts = agent.merged_options(options)
    source = (
        dynamic_leg(agent, decision, options, cancel, recorder, message_id, lambda: holder[0])
        if agent._dynamic
        else leg_source(
            agent, decision, dict(options), cancel, recorder, message_id, lambda: holder[0], merged=opts
        )
    )
    output = turn_output(agent, source, opts, cancel, recorder, run_id, message_id)
    holder.append(output)
    return output


async def dynamic_leg(
    agent: Agent,
    decision: ResumeDecision,
    options: Mapping[str, Any],
    cancel: AbortController,
    recorder: SuspendRecorder,
    message_id: str,
    output: Callable[[], ModelOutput],
) -> AsyncIterator[Chunk]:
    """A leg of a dynamic agent's run, resolved for the leg's ``request_context``."""
    explicit = dict(options)
    context = as_request_context(explicit.get("request_context"))
    explicit["request_context"] = context
    resolved = await resolved_agent(agent, agent._dynamic, context)
    if "default_options" in agent._dynamic:
        check_dynamic_defaults(agent.id, resolved.default_options)
    merged = resolved.merged_options(explicit)
    async for chunk in leg_source(
        resolved, decision, explicit, cancel, recorder, message_id, output, merged=merged
    ):
        yield chunk


def leg_source(
    agent: Agent,
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
    """The chunks of a leg continuing run ``recorder.run_id`` (see `resumed_source`); its options
    are the stored run's, overridden by ``explicit`` (``merged``: ``explicit`` with the defaults
    under it, when the caller merged them already). ``inputs``: user messages this leg answers
    (auto-resume), stored with its response."""
    given = agent.merged_options(explicit) if merged is None else merged

    # made now, not when the leg starts streaming: its span's parent is the caller's context
    traced = trace_run(
        agent.instrument,
        agent_id=agent.id,
        agent_name=agent.name,
        run_id=recorder.run_id,
        model=agent.model,
        prompt=[],
    )

    def leg_config(snapshot: Mapping[str, Any]) -> Leg:
        stored: Mapping[str, Any] = snapshot.get("options") or {}
        same_thread(recorder.run_id, stored.get("memory"), explicit.get("memory"))
        # the stored run's options over the defaults, under the leg's own
        opts = {**given, **{k: v for k, v in stored.items() if k not in explicit}}
        opts.pop("auto_resume_suspended_tools", None)
        loop: Mapping[str, Any] = snapshot.get("loop") or {}
        if traced is not None:  # outermost, as in a first leg
            traced.continues(snapshot.get("trace"), decision.action, list(loop.get("messages") or []))
        plan = plan_run(
            agent,
            opts,
            cancel,
            checkpoint=begin_checkpointed_run(),
            message_id=message_id,
            run_id=recorder.run_id,
            trace=traced,
            resumed=loop,
        )
        config = loop_config(plan, recorder)
        return config, plan.scope, traced.wrap if traced is not None else None

    return resumed_source(
        decision,
        tools=agent.tools,
        output=output,
        recorder=recorder,
        leg_config=leg_config,
        memory=agent._memory_for_run,
        run=run_loop,
        inputs=inputs,
    )
