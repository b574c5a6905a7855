"""The agent loop: the run's chunk stream exactly as Mastra's loop produces it (before ``ModelOutput``).

Per step: ``step-start``, the provider parts converted to chunks (``convertFullStreamChunkToMastra``,
`_parts`, incl. ``raw`` and the provider's own ``tool-call``), tool execution
(`_tool_runner`: ``tool-output`` live, then ``tool-result`` / ``tool-error`` in call order),
``step-finish`` with that step's usage. One ``start`` before and one ``finish`` after.
``ModelOutput`` does the accounting (synthetic tool-call, usage sums, raw filtering, awaitables,
callbacks), so none of that happens here.

`run_loop` and `_Run`'s phases are the orchestration only; the pieces are the per-step state
(`_state`), the part → chunk table (`_parts`), the model call (`_model_call`), the step
bookkeeping (`_step_book`), the tool runner, the deadlines and clock (`_deadlines`) and the seams
where processors, goals, approvals and background tasks plug in (`_hooks`).

What the provider sent and got back (a `ModelStream`'s ``request`` /
``response``) goes into ``step-start.request`` and the step's metadata (``request``, ``headers``);
after a step whose response header ``x-ratelimit-remaining-tokens`` is between 0 and 2000 (exclusive)
the loop pauses 10 s before the next model call (Mastra's ``model.loop.ts``; ``RunConfig.sleep``).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from ..chunks import (
    Abort,
    Chunk,
    ChunkFrom,
    Error,
    ErrorPayload,
    Start,
    StartPayload,
    StepFinish,
)
from ..stream import RunAccumulator
from ._config import RunConfig
from ._deadlines import Deadlines, LoopClock, StepDeadline, pause
from ._endings import INPUT_PHASES, Ending, StepOutcome, finish_chunk, finish_response, step_finish_chunk
from ._hooks import StepDecision, StepInfo
from ._model_call import AgentStreamError, ModelCall, rate_limited, response_headers
from ._parts import (
    HANDLERS,
    Handler,
    convert_unknown,
)
from ._settings import call_options
from ._state import StepState
from ._step_book import NO_TOOLS_REASONS, StepBook, decision_chunks, step_reason
from ._tool_runner import ToolRunner, notify_on_chunk
from ._tripwire import Tripwire

if TYPE_CHECKING:
    pass

__all__ = ["AgentStreamError", "RunConfig", "rate_limited", "run_loop"]

log = logging.getLogger("agentstream.agent")

AGENT = ChunkFrom.AGENT
RATE_LIMIT_PAUSE_S = 10.0


def run_loop(cfg: RunConfig) -> AsyncIterator[Chunk]:
    """The run's chunk stream (see the module docstring). The loop reads what it streamed (the
    step's text) from the output that folds its chunks (``cfg.results``); a loop that no output
    reads folds its own."""
    if cfg.results is None:
        return _self_folded(cfg)
    return _phases(cfg, cfg.results)


async def _self_folded(cfg: RunConfig) -> AsyncIterator[Chunk]:
    """`run_loop` with no output reading it (tests drive the loop so): the text chunks it streams
    are folded here, as `ModelOutput` would fold them."""
    acc = RunAccumulator(run_id=cfg.run_id)
    if cfg.resume is not None:  # the suspended step's text, as the output's state would restore it
        acc.text.prior_step = str(cfg.resume.step.get("text") or "")
    log = acc.text.log
    async with aclosing(_phases(cfg, lambda: acc)) as chunks:
        async for chunk in chunks:
            log.append(chunk)
            if type(chunk) is StepFinish:
                acc.text.close_step(len(log))
            yield chunk


async def _phases(cfg: RunConfig, results: Callable[[], RunAccumulator]) -> AsyncGenerator[Chunk, None]:
    """The phases of `_Run`, each naming the next phase or an `Ending`, which `_Run.end` turns into
    the run's last chunks. Streaming the model is written out here, not as a phase: it is the
    per-token path, and a generator in between would cost every token a hop."""
    run = _Run(cfg, results)
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
                    signal, routed, aroute, on_chunk = cfg.signal, run.routed, run.aroute, run.on_chunk
                    lookup: Callable[[str, Handler], Handler] = HANDLERS.get
                    async for part in parts:  # the per-token path: no generator in between
                        if signal.aborted:
                            st.aborted = True
                            break
                        out = lookup(part["type"], convert_unknown)(st, part)
                        if routed and out is not None:
                            out = run.route(st, out) if aroute is None else await aroute(st, out)
                        if st.pending:
                            notify, early_chunks = run.flush(st)
                            if on_chunk is not None:
                                for queued in notify:
                                    waiting = notify_on_chunk(on_chunk, queued)
                                    if waiting is not None:
                                        await waiting
                            for early in early_chunks:
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


class _Run(ModelCall, StepBook):
    """What lives across the steps of one run: the prompt so far, the finished steps, the timers."""

    def __init__(self, cfg: RunConfig, results: Callable[[], RunAccumulator]) -> None:
        self.cfg = cfg
        self.results = results
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
        self.st = StepState(run_id=cfg.run_id, number=0, created_at=0, results=results)
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
        pending = st.client_calls() if step_reason(st) not in NO_TOOLS_REASONS else []
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
            async for chunk in decision_chunks(decision):
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
