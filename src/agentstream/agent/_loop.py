"""The agent loop: the run's chunk stream exactly as Mastra's loop produces it (before ``ModelOutput``).

Per step: ``step-start``, the provider parts converted to chunks (``convertFullStreamChunkToMastra``,
`_parts`, incl. ``raw`` and the provider's own ``tool-call``), tool execution
(`_tool_runner`: ``tool-output`` live, then ``tool-result`` / ``tool-error`` in call order),
``step-finish`` with that step's usage. One ``start`` before and one ``finish`` after.
``ModelOutput`` does the accounting (synthetic tool-call, usage sums, raw filtering, awaitables,
callbacks), so none of that happens here.

`run_loop` is the orchestration only; the pieces are the per-step state (`_state`), the
part → chunk table (`_parts`), the tool runner, the deadlines and clock (`_deadlines`)
and the seams where processors, goals, approvals and background tasks plug in (`_hooks`).

What the provider sent and got back (a `ModelStream`'s ``request`` /
``response``) goes into ``step-start.request`` and the step's metadata (``request``, ``headers``);
after a step whose response header ``x-ratelimit-remaining-tokens`` is between 0 and 2000 (exclusive)
the loop pauses 10 s before the next model call (Mastra's ``model.loop.ts``; ``RunConfig.sleep``).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from ..chunks import (
    UNSET,
    Abort,
    Chunk,
    ChunkFrom,
    Error,
    ErrorPayload,
    Start,
    StartPayload,
    ToolCallApproval,
    ToolCallSuspended,
)
from ._config import RunConfig
from ._deadlines import Deadlines, LoopClock, StepDeadline, pause
from ._endings import INPUT_PHASES, Ending, StepOutcome, finish_chunk, finish_response, step_finish_chunk
from ._hooks import StepDecision, StepInfo, StopCondition
from ._model_call import AgentStreamError, ModelCall, rate_limited, response_headers
from ._parts import (
    HANDLERS,
    Handler,
    convert_unknown,
)
from ._settings import call_options
from ._state import StepState
from ._structured import StructuredOutputState
from ._suspension import ResumePoint
from ._tool_runner import ToolRunner
from ._tripwire import Tripwire

if TYPE_CHECKING:
    from ..tools import Tool

__all__ = ["AgentStreamError", "RunConfig", "rate_limited", "run_loop"]

log = logging.getLogger("agentstream.agent")

AGENT = ChunkFrom.AGENT
TERMINAL_FINISH_REASONS = frozenset({"stop", "error", "length", "content-filter"})
NO_TOOLS_REASONS = frozenset({"error", "length", "content-filter"})
RATE_LIMIT_PAUSE_S = 10.0


async def run_loop(cfg: RunConfig) -> AsyncIterator[Chunk]:
    """The run's chunk stream (see the module docstring): the phases of `_Run`, each naming the
    next phase or an `Ending`, which `_Run.end` turns into the run's last chunks. Streaming the
    model is written out here, not as a phase: it is the per-token path, and a generator in
    between would cost every token a hop."""
    run = _Run(cfg)
    phase: Phase = run.start
    try:
        while not isinstance(phase, Ending):
            if not isinstance(phase, _Stream):
                async with aclosing(phase()) as chunks:
                    async for chunk in chunks:
                        yield chunk
                phase = run.next
                continue
            st = run.st
            parts = run.parts(st)
            if parts is not None:
                try:
                    signal, routed, aroute = cfg.signal, run.routed, run.aroute
                    lookup: Callable[[str, Handler], Handler] = HANDLERS.get
                    async for part in parts:  # the per-token path: no generator in between
                        if signal.aborted:
                            st.aborted = True
                            break
                        out = lookup(part["type"], convert_unknown)(st, part)
                        if routed and out is not None:
                            out = run.route(st, out) if aroute is None else await aroute(st, out)
                        if st.pending:
                            for early in await run.flush(st):
                                yield early
                        if out is not None:
                            yield out
                        if st.fatal:
                            break
                except Exception as exc:
                    for chunk in run.failed(st, exc):
                        yield chunk
                finally:
                    await run.close_model(st)
                for chunk in await run.drain(st):
                    yield chunk
            phase = run.streamed()
    finally:
        run.close()
    for chunk in await run.end(phase):
        yield chunk


class _Stream:
    """The model-streaming phase's marker (`run_loop` streams it itself)."""


STREAM = _Stream()
Phase = Callable[[], AsyncGenerator[Chunk, None]] | _Stream | Ending
"""What a phase names next: another phase, `STREAM`, or how the run ends."""


class _Run(ModelCall):
    """What lives across the steps of one run: the prompt so far, the finished steps, the timers."""

    def __init__(self, cfg: RunConfig) -> None:
        self.cfg = cfg
        settings = cfg.model_settings
        self.deadlines = Deadlines(settings.get("timeout"), LoopClock(cfg.now_ms, cfg.sleep), cfg.signal)
        self.tools = (
            cfg.tools
            if cfg.active_tools is None
            else {k: v for k, v in cfg.tools.items() if k in cfg.active_tools}
        )
        self.tool_defs = [t.definition() for t in self.tools.values()]
        self.messages: list[dict[str, Any]] = list(cfg.prompt)
        self.first_non_system = 0
        self.user_messages: list[dict[str, Any]] = []
        self.steps: list[StepInfo] = []
        self.resume = cfg.resume
        self.approved: set[str] = set(cfg.resume.approved) if cfg.resume is not None else set()
        self.call_settings = call_options(settings)
        self.process = cfg.hooks.process_chunk
        self.aroute: Callable[[StepState, Chunk], Awaitable[Chunk | None]] | None = None
        if self.process is not None and inspect.iscoroutinefunction(self.process):
            self.aroute = self._aroute
        self.on_chunk = cfg.on_chunk
        self.routed = self.process is not None or self.on_chunk is not None
        self.records: list[tuple[StepState, list[dict[str, Any]], dict[str, Any]]] = []
        """Each step's state, new messages and metadata: Mastra's ``output.steps``, streamed once a
        step tripped a processor."""
        self.tripped = False
        self.notify_raw = cfg.on_chunk is not None and cfg.include_raw_chunks
        self.next: Phase = STREAM
        """The phase a phase names next (read by `run_loop` once the phase has streamed)."""
        self.st = StepState(run_id=cfg.run_id, number=0, created_at=0)
        """The step in flight."""
        self.deadline: StepDeadline | None = None
        self.metadata: dict[str, Any] = {}
        self.runner: ToolRunner | None = None
        self.ran_tools = False
        self.judged: tuple[StepInfo, bool | StepDecision | None] | None = None
        self.result_blocked = False

    # ------------------------------------------------------------------ phases

    async def start(self) -> AsyncGenerator[Chunk, None]:
        """The input seam, ``start`` (not on a resumed leg: same conversation) and the chunks
        hooks stream before the first step."""
        try:
            await self.begin()
        except Tripwire as trip:  # an input processor blocked the run: no start, no model call
            self.next = Ending("tripwire", phase="input", trip=trip)
            return
        cfg = self.cfg
        if cfg.resume is None:
            payload = StartPayload(id=cfg.agent_id, message_id=cfg.message_id)
            yield Start(run_id=cfg.run_id, from_=AGENT, payload=payload)
        for chunk in await cfg.hooks.start_of_run():
            yield chunk
        self.next = self.open_step

    async def open_step(self) -> AsyncGenerator[Chunk, None]:
        """A new step: the model call, ``step-start`` (and the error of a call that failed at once)."""
        st = self.st = self.new_step()
        deadline = self.deadline = self.deadlines.step()
        for chunk in await self.open(st, deadline):
            yield chunk
        if st.tripwire is not None:  # an input-step / LLM-request processor blocked the call
            self.next = Ending("tripwire", phase="input-step", trip=st.tripwire)
        else:
            self.next = STREAM

    def streamed(self) -> Phase:
        """After the model's stream: an output-stream processor may have blocked a part."""
        if self.deadline is not None:
            self.deadline.close()
        if self.st.tripwire is not None:
            return Ending("tripwire", phase="output-stream", trip=self.st.tripwire)
        return self.settle_step

    def _aborted(self, text: str) -> Ending:
        return Ending("aborted", outcome=StepOutcome.aborted(self.cfg.message_id, self.metadata, text))

    async def settle_step(self) -> AsyncGenerator[Chunk, None]:
        """Close the model's answer: abort, timeouts, the step's errors, the output-step seam."""
        st = self.st
        self.metadata = self.step_metadata(st)
        if st.aborted:
            self.next = self._aborted(st.text)
            return
        if st.timed_out is not None:
            if self.deadlines.total_expired:  # the run fails without step-finish / finish (spec §4.6)
                self.next = Ending("timed_out", error=st.timed_out)
                return
            yield Error(run_id=self.cfg.run_id, from_=AGENT, payload=ErrorPayload(error=st.timed_out))
            st.error = st.timed_out
        for chunk in self.settle(st):
            yield chunk
        if not await self.after_model(st):  # an output-step processor asked for another try
            yield step_finish_chunk(self.cfg.run_id, self.retry_step(st, self.metadata))
            self.next = self.open_step
            return
        self.next = self.run_tools

    async def run_tools(self) -> AsyncGenerator[Chunk, None]:
        """The step's client tool calls (``tool-output`` live, then results in call order)."""
        st = self.st
        runner = self.runner = self.tool_runner(await self.cfg.hooks.step_tools(st.number, self.tools))
        pending = st.client_calls() if _reason(st) not in NO_TOOLS_REASONS else []
        self.ran_tools = bool(pending)
        self.next = self.decide_step
        if not pending:
            return
        async with aclosing(runner.stream(pending, self.messages)) as chunks:
            async for chunk in chunks:
                yield chunk
        if runner.tripwire is not None:  # a tool result was blocked
            self.next = Ending("tripwire", phase="tool-result", trip=runner.tripwire)
        elif runner.aborted:
            self.next = self._aborted(st.text)
        elif runner.suspended is not None:  # a call waits for a human: no step-finish / finish
            self.next = Ending("suspended", chunks=[self.suspend(st, runner, self.metadata)])

    async def decide_step(self) -> AsyncGenerator[Chunk, None]:
        """``after_tools`` and ``end_of_step``: the chunks a judge streams, its verdict."""
        assert self.runner is not None
        _, decision = self.judged = await self.decide(self.st, self.runner, self.ran_tools)
        self.next = self.close_step
        if isinstance(decision, StepDecision):
            async for chunk in _decision_chunks(decision):
                yield chunk
            if self.cfg.signal.aborted:  # aborted while a judge was deciding
                self.next = self._aborted(self.st.text)

    async def close_step(self) -> AsyncGenerator[Chunk, None]:
        """``step-finish``; then the next step (after a rate-limit pause) or the run's end."""
        cfg, st = self.cfg, self.st
        assert self.runner is not None and self.judged is not None
        outcome, continued = await self.finish_step(st, self.runner, *self.judged, self.metadata)
        yield step_finish_chunk(cfg.run_id, outcome)
        self.next = self.open_step
        if not continued:
            self.next = Ending("finished", outcome=outcome)
        elif rate_limited(response_headers(st.stream)):
            # model.loop.ts: few tokens left in the provider's window; wait before the next call
            await pause(cfg.sleep, RATE_LIMIT_PAUSE_S, cfg.signal)
            if cfg.signal.aborted:
                self.next = self._aborted("")

    async def end(self, ending: Ending) -> list[Chunk]:
        """The one place a run's end becomes chunks (docs/architecture.md, "Endings")."""
        run_id = self.cfg.run_id
        if ending.kind == "finished":
            assert ending.outcome is not None
            chunks = await self.end_of_run()
            return [*chunks, finish_chunk(run_id, ending.outcome, self._response(ending.outcome))]
        if ending.kind == "aborted":
            assert ending.outcome is not None
            finish = finish_chunk(run_id, ending.outcome, self._response(ending.outcome))
            return [Abort(run_id=run_id, from_=AGENT), finish]
        if ending.kind == "tripwire":
            assert ending.trip is not None  # the chunk ends the stream: no step-finish, no finish
            return [ending.trip.chunk(run_id if ending.phase in INPUT_PHASES else None)]
        if ending.kind == "timed_out":
            return [Error(run_id=run_id, from_=AGENT, payload=ErrorPayload(error=ending.error))]
        return list(ending.chunks)  # suspended

    def _response(self, outcome: StepOutcome) -> dict[str, Any] | None:
        # a result processor's tripwire leaves it out, as in Mastra (its processors did not finish)
        return finish_response(outcome) if self.cfg.finish_response and not self.result_blocked else None

    def close(self) -> None:
        if self.deadline is not None:
            self.deadline.close()
        self.deadlines.close()

    # ------------------------------------------------------------------ the phases' parts

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
            return _resumed_step(self.cfg.run_id, self.resume)
        created_at = int(self.cfg.now_ms())
        so = (
            StructuredOutputState(self.cfg.structured_output, self.cfg.run_id)
            if self.cfg.structured_output
            else None
        )
        return StepState(run_id=self.cfg.run_id, number=len(self.steps) + 1, created_at=created_at, so=so)

    def _step_info(self, st: StepState) -> StepInfo:
        tool_calls = [{"toolCallId": c.call_id, "toolName": c.name, "args": c.exec_args} for c in st.calls]
        return StepInfo(
            st.number, st.text, _reason(st), False, tool_calls, [], st.usage, st.error is not UNSET
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
        reason = _reason(st)
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
        if continued and (st.number >= cfg.max_steps or await _any_stop(cfg.stop_when, self.steps)):
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


async def _decision_chunks(decision: StepDecision) -> AsyncIterator[Chunk]:
    chunks = decision.chunks
    if isinstance(chunks, AsyncIterable):
        async for chunk in chunks:
            yield chunk
    else:
        for chunk in chunks:
            yield chunk


def _resumed_step(run_id: str, resume: ResumePoint) -> StepState:
    """The suspended step as the loop left it: its calls, text, usage and finish, no model call."""
    data = resume.step
    st = StepState(run_id=run_id, number=int(data["number"]), created_at=int(data["createdAt"]))
    st.resumed = data
    st.calls = resume.calls()
    st.text_chunks = [data["text"]] if data.get("text") else []
    st.usage = dict(data.get("usage") or {})
    st.finish_reason = data.get("finishReason")
    st.raw_reason = data.get("rawReason")
    st.warnings = list(data.get("warnings") or [])
    st.has_content = True
    return st


def _reason(st: StepState) -> str:
    return "error" if st.error is not UNSET else (st.finish_reason or "other")


async def _any_stop(conditions: list[StopCondition], steps: list[StepInfo]) -> bool:
    for condition in conditions:
        result = condition(steps)
        if inspect.isawaitable(result):
            result = await result
        if result:
            return True
    return False
