"""The step bookkeeping half of the loop's `_Run` (a base class of it, as `ModelCall` is the model-call
half): the input seam and the prompt's parts, a new or resumed step, the output-step seam and a
step's retry, the records Mastra streams as ``output.steps``, the outcome ``step-finish`` reports,
the tool runner, a suspension's resume point, and what the seams after the tools decided.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import Any

from ..chunks import UNSET, Chunk, ToolCallApproval, ToolCallSuspended
from ..stream import RunAccumulator
from ..tools import Tool
from ._config import RunConfig
from ._endings import StepOutcome
from ._hooks import StepDecision, StepInfo, StopCondition
from ._state import StepState
from ._structured import StructuredOutputState
from ._suspension import ResumePoint
from ._tool_runner import ToolRunner
from ._tripwire import Tripwire

__all__ = ["NO_TOOLS_REASONS", "StepBook", "decision_chunks", "step_reason"]

log = logging.getLogger("agentstream.agent")

TERMINAL_FINISH_REASONS = frozenset({"stop", "error", "length", "content-filter"})
NO_TOOLS_REASONS = frozenset({"error", "length", "content-filter"})


class StepBook:
    """What `_Run` knows about the conversation and the finished steps, and the step operations
    that read or write it (the phases in `_loop` call these)."""

    cfg: RunConfig
    tools: dict[str, Tool]
    messages: list[dict[str, Any]]
    first_non_system: int
    user_messages: list[dict[str, Any]]
    steps: list[StepInfo]
    resume: ResumePoint | None
    approved: set[str]
    records: list[tuple[StepState, list[dict[str, Any]], dict[str, Any]]]
    tripped: bool
    result_blocked: bool
    results: Callable[[], RunAccumulator]

    async def begin(self) -> None:
        """Run the input seam and split the prompt into system / user messages (a resumed run
        takes them from its snapshot instead)."""
        resume = self.resume
        if resume is not None:
            self.messages = list(resume.messages)
            self.first_non_system = resume.first_non_system
            self.user_messages = self.messages[self.first_non_system :][: resume.user_count]
            self.steps = list(resume.steps)
            return
        self.messages = list(await self.cfg.hooks.process_input(self.messages))
        self.first_non_system = next(
            (i for i, m in enumerate(self.messages) if m.get("role") != "system"), len(self.messages)
        )
        self.user_messages = self.messages[self.first_non_system :]

    def new_step(self) -> StepState:
        if self.resume is not None:
            return resumed_step(self.cfg.run_id, self.resume, self.results)
        created_at = int(self.cfg.now_ms())
        so = (
            StructuredOutputState(self.cfg.structured_output, self.cfg.run_id)
            if self.cfg.structured_output
            else None
        )
        return StepState(
            run_id=self.cfg.run_id,
            number=len(self.steps) + 1,
            created_at=created_at,
            results=self.results,
            so=so,
        )

    def _step_info(self, st: StepState) -> StepInfo:
        tool_calls = [{"toolCallId": c.call_id, "toolName": c.name, "args": c.exec_args} for c in st.calls]
        return StepInfo(
            st.number, st.text, step_reason(st), False, tool_calls, [], st.usage, st.error is not UNSET
        )

    async def after_model(self, st: StepState) -> bool:
        """The output-step seam; ``False``: a processor asked to retry the step (and may)."""
        if st.error is not UNSET:
            return True
        try:
            await self.cfg.hooks.after_model(self._step_info(st))
        except Tripwire as trip:
            st.tripwire = trip
            self.tripped = True
            return not trip.will_retry
        return True

    def retry_step(self, st: StepState, metadata: dict[str, Any]) -> StepOutcome:
        """Roll the step back (its messages are not kept, its tools not run) and add the feedback
        for the next call: Mastra's ``[Processor Feedback]`` system message after the instructions."""
        trip = st.tripwire
        tool_calls = [{"toolCallId": c.call_id, "toolName": c.name, "args": c.exec_args} for c in st.calls]
        self.steps.append(StepInfo(st.number, "", "retry", True, tool_calls, [], st.usage))
        self._record(st, [], metadata)
        feedback = {
            "role": "system",
            "content": f"[Processor Feedback] Your previous response was not accepted: {trip.reason}. "
            "Please try again with the feedback in mind.",
        }
        self.messages.insert(self.first_non_system, feedback)
        self.first_non_system += 1
        return self._outcome(
            st,
            "retry",
            True,
            metadata,
            tool_calls=[],
            retry=trip,
            retry_count=trip.retry_count,
            retry_feedback=feedback["content"],
        )

    def _record(self, st: StepState, new_messages: list[dict[str, Any]], metadata: dict[str, Any]) -> None:
        # kept as is and turned into Mastra's ``output.steps`` entries only if a step trips
        st.freeze()
        self.records.append((st, new_messages, metadata))

    @staticmethod
    def _step_record(
        st: StepState, new_messages: list[dict[str, Any]], metadata: dict[str, Any]
    ) -> dict[str, Any]:
        response = {k: metadata[k] for k in ("id", "timestamp", "modelId", "headers") if k in metadata}
        content = st.assistant_content()
        record: dict[str, Any] = {
            "content": content,
            "usage": st.usage,
            "warnings": st.warnings,
            "request": st.request,
            "response": {**response, "messages": new_messages or [{"role": "assistant", "content": content}]},
        }
        if st.tripwire is not None:
            record["tripwire"] = st.tripwire.data()
        return record

    def _outcome(
        self,
        st: StepState,
        reason: str,
        continued: bool,
        metadata: dict[str, Any],
        *,
        tool_calls: list[dict[str, Any]],
        **fields: Any,
    ) -> StepOutcome:
        """The step as ``step-finish`` reports it, with the conversation so far."""
        all_messages = self.messages[self.first_non_system :]
        return StepOutcome(
            message_id=self.cfg.message_id,
            reason=reason,
            is_continued=continued,
            metadata=metadata,
            text=st.text,
            tool_calls=tool_calls,
            usage=st.usage,
            messages={
                "all": all_messages,
                "user": self.user_messages,
                "nonUser": all_messages[len(self.user_messages) :],
            },
            steps=[self._step_record(*r) for r in self.records] if self.tripped else None,
            fallback_index=getattr(st.stream, "fallback_index", None),
            **fields,
        )

    async def end_of_run(self) -> list[Chunk]:
        """The output-result seam: chunks to stream before ``finish``; a `Tripwire` there shows only
        in the output's results (``on_result_tripwire``)."""
        try:
            return await self.cfg.hooks.end_of_run(self.steps)
        except Tripwire as trip:
            log.warning(
                "output result processor tripwire triggered: %s (processor %s)",
                trip.reason,
                trip.processor_id,
            )
            self.result_blocked = True
            if self.cfg.on_result_tripwire is not None:
                self.cfg.on_result_tripwire(trip)
            return []

    def tool_runner(self, tools: dict[str, Tool] | None = None) -> ToolRunner:
        """The step's tool runner, with ``tools`` (default: the run's)."""
        cfg = self.cfg
        resume, self.resume = self.resume, None  # only the suspended step takes the answer
        return ToolRunner(
            run_id=cfg.run_id,
            agent_id=cfg.agent_id,
            signal=cfg.signal,
            tools=self.tools if tools is None else tools,
            hooks=cfg.hooks,
            on_chunk=cfg.on_chunk,
            concurrency=cfg.tool_call_concurrency,
            on_tool_error=cfg.on_tool_error,
            approval=cfg.approval,
            approved=self.approved,
            decision=resume.decision if resume is not None else None,
            restored=resume.completed if resume is not None else None,
            request_context=cfg.request_context,
        )

    def suspend(self, st: StepState, runner: ToolRunner, metadata: dict[str, Any]) -> Chunk:
        """A step's call waits for a human: hand the loop's state to ``on_suspend`` and return
        the chunk that ends the stream (``tool-call-approval`` / ``tool-call-suspended``)."""
        suspension = runner.suspended
        assert suspension is not None
        step = st.resumed or {
            "number": st.number,
            "createdAt": st.created_at,
            "text": st.text,
            "usage": st.usage,
            "finishReason": st.finish_reason,
            "rawReason": st.raw_reason,
            "warnings": st.warnings,
            "metadata": {k: v for k, v in metadata.items() if k != "request"},
            "content": st.assistant_content(),
            "calls": [
                {
                    "callId": c.call_id,
                    "name": c.name,
                    "execArgs": c.exec_args,
                    "historyArgs": c.history_args,
                    "providerExecuted": c.provider_executed,
                }
                for c in st.calls
            ],
        }
        point = ResumePoint(
            messages=self.messages,
            first_non_system=self.first_non_system,
            user_count=len(self.user_messages),
            steps=self.steps,
            step=step,
            completed=runner.completed,
            approved=sorted(self.approved),
        )
        if self.cfg.on_suspend is not None:
            self.cfg.on_suspend({**point.to_json(), "pending": suspension.to_json()})
        chunk: ToolCallApproval | ToolCallSuspended = suspension.chunk(self.cfg.run_id)
        return chunk

    async def decide(
        self, st: StepState, runner: ToolRunner, ran_tools: bool
    ) -> tuple[StepInfo, bool | StepDecision | None]:
        """The step as hooks see it, and what ``end_of_step`` decided about it."""
        errored = st.error is not UNSET
        reason = step_reason(st)
        continued = not errored and (ran_tools or runner.errored or reason not in TERMINAL_FINISH_REASONS)
        if runner.errored:
            reason = "tool-calls"
        if st.tripwire is not None:  # an output-step processor stopped the run (no retry)
            reason, continued = "tripwire", False
        info = StepInfo(
            number=st.number,
            text=st.text,
            finish_reason=reason,
            is_continued=continued,
            tool_calls=[{"toolCallId": c.call_id, "toolName": c.name, "args": c.exec_args} for c in st.calls],
            tool_results=[
                {"toolCallId": c.call_id, "toolName": c.name, "result": v, "isError": f}
                for c, f, v in runner.results
            ],
            usage=st.usage,
            errored=errored,
        )
        await self.cfg.hooks.after_tools(info, runner.results)
        return info, (await self.cfg.hooks.end_of_step(info) if st.tripwire is None else None)

    async def finish_step(
        self,
        st: StepState,
        runner: ToolRunner,
        info: StepInfo,
        decision: bool | StepDecision | None,
        metadata: dict[str, Any],
    ) -> tuple[StepOutcome, bool]:
        """Record the step: ``(its outcome, continued)``."""
        cfg = self.cfg
        forced = decision.continue_ if isinstance(decision, StepDecision) else decision
        if forced is not None:
            info.is_continued = forced
        continued, reason, tool_calls = info.is_continued, info.finish_reason, info.tool_calls
        self.steps.append(info)
        # the flag says what happens next: a run stopped by max_steps / stop_when does not continue
        if continued and (st.number >= cfg.max_steps or await any_stop(cfg.stop_when, self.steps)):
            continued = info.is_continued = False
        new_messages = st.history(runner.results)
        self.messages.extend(new_messages)
        self._record(st, new_messages, metadata)
        if isinstance(decision, StepDecision):
            self.messages.extend(decision.messages)
        outcome = self._outcome(
            st,
            reason,
            continued,
            metadata,
            tool_calls=tool_calls,
            warnings=st.warnings,
            raw_reason=st.raw_reason,
            resumed_message_id=st.resumed is not None,  # as recorded for the step a leg resumed
        )
        return outcome, continued


async def decision_chunks(decision: StepDecision) -> AsyncIterator[Chunk]:
    """The chunks a judge's decision streams (a list or an async iterable)."""
    chunks = decision.chunks
    if isinstance(chunks, AsyncIterable):
        async for chunk in chunks:
            yield chunk
    else:
        for chunk in chunks:
            yield chunk


def resumed_step(run_id: str, resume: ResumePoint, results: Callable[[], RunAccumulator]) -> StepState:
    """The suspended step as the loop left it: its calls, text, usage and finish, no model call."""
    data = resume.step
    st = StepState(
        run_id=run_id, number=int(data["number"]), created_at=int(data["createdAt"]), results=results
    )
    st.resumed = data
    st.calls = resume.calls()
    st.usage = dict(data.get("usage") or {})
    st.finish_reason = data.get("finishReason")
    st.raw_reason = data.get("rawReason")
    st.warnings = list(data.get("warnings") or [])
    st.has_content = True
    return st


def step_reason(st: StepState) -> str:
    """The step's finish reason as the loop decides on it (``error`` once it has an error)."""
    return "error" if st.error is not UNSET else (st.finish_reason or "other")


async def any_stop(conditions: list[StopCondition], steps: list[StepInfo]) -> bool:
    for condition in conditions:
        result = condition(steps)
        if inspect.isawaitable(result):
            result = await result
        if result:
            return True
    return False
