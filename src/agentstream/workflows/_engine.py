"""The executor: walks a workflow's entries, runs steps, emits Mastra's workflow chunks and keeps the
run's state (step records, execution path, suspension points) as JSON-ready data for snapshots."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from .._abort import AbortError, AbortSignal, until_aborted
from .._request_context import RequestContext, as_request_context
from ..agent import Tripwire
from ..chunks import (
    UNSET,
    Chunk,
    ChunkFrom,
    WorkflowCanceled,
    WorkflowStepFinish,
    WorkflowStepFinishPayload,
    WorkflowStepResult,
    WorkflowStepResultPayload,
    WorkflowStepStart,
    WorkflowStepStartPayload,
    WorkflowStepSuspended,
    WorkflowStepSuspendedPayload,
    to_jsonable,
)
from ..tools import validate_value
from ..tracing import workflow_run_span, workflow_step_span
from ._checkpoint import Checkpoint, Slot, record_outcome, replay_outcome
from ._errors import StepInputValidationError, WorkflowError, _Bail, _Suspend, error_json
from ._flow import ROUTE, InOrder, Outcome, Resume, RunEnd, Stop
from ._iterate import run_foreach, run_sleep
from ._step import Step, StepContext, StepWriter, call
from ._workflow import (
    BranchEntry,
    Entry,
    ForeachEntry,
    LoopEntry,
    ParallelEntry,
    StepEntry,
    Workflow,
)

__all__ = ["Execution", "Resume", "RunEnd"]

log = logging.getLogger("agentstream.workflows")


def _now_ms() -> float:
    return datetime.now(UTC).timestamp() * 1000.0


async def _real_sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


class Execution:
    """One walk over a workflow's entries (a first run or a resume), with the run's state.

    ``records`` (step id → JSON record), ``path`` (Mastra's ``stepExecutionPath``), ``branches`` (which
    branch steps ran, per entry) and ``state`` are what snapshots save; `load` / `dump` convert.
    """

    def __init__(
        self,
        workflow: Workflow,
        run_id: str,
        *,
        emit: Callable[[Chunk], None],
        signal: AbortSignal,
        clock: Callable[[], float] | None,
        sleep: Callable[[float], Any] | None,
        checkpoint: Checkpoint | None = None,
    ) -> None:
        self.workflow = workflow
        self.checkpoint = checkpoint
        self.run_id = run_id
        self.emit = emit
        self.signal = signal
        self.clock = clock or _now_ms
        self.sleep = sleep or _real_sleep
        self.input: Any = None
        self.request_context = RequestContext()
        """The run's context (``stream(request_context=...)``), saved with its snapshots."""
        self.state: list[Any] = [None]
        self.records: dict[str, dict[str, Any]] = {}
        self.errors: dict[str, BaseException] = {}
        self.path: list[str] = []
        self.branches: dict[str, list[str]] = {}
        self.suspended: dict[str, list[int]] = {}
        self.interrupted = False
        """Set when a step that ignored the abort was interrupted after the grace period."""
        self._driver: asyncio.Task[Any] | None = None

    def _emit(self, chunk: Chunk) -> None:
        self._current_emit()(chunk)

    def _current_emit(self) -> Callable[[Chunk], None]:
        route = ROUTE.get()
        return route[1] if route is not None and route[0] is self else self.emit

    # ------------------------------------------------------------------------------ snapshots

    def dump(self) -> dict[str, Any]:
        """The run's state as JSON data (records with errors as ``{name, message}``)."""
        data: dict[str, Any] = {
            "input": self.input,
            "state": self.state[0],
            # records are JSON already, except the exceptions of failed steps
            "context": {k: to_jsonable(v) if "error" in v else v for k, v in self.records.items()},
            "stepExecutionPath": list(self.path),
            "branches": dict(self.branches),
            "suspendedPaths": dict(self.suspended),
        }
        if self.request_context:  # Mastra's snapshot `requestContext`
            data["requestContext"] = to_jsonable(dict(self.request_context))
        return data

    def load(self, data: dict[str, Any]) -> None:
        """Restore what `dump` saved."""
        self.input = data.get("input")
        self.request_context = as_request_context(data.get("requestContext"))
        self.state = [data.get("state")]
        self.records = {k: dict(v) for k, v in (data.get("context") or {}).items()}
        self.path = list(data.get("stepExecutionPath") or [])
        self.branches = {k: list(v) for k, v in (data.get("branches") or {}).items()}
        self.suspended = {k: list(v) for k, v in (data.get("suspendedPaths") or {}).items()}

    def output_of(self, step_id: str) -> Any:
        record = self.records.get(step_id)
        if record is None or record.get("status") != "success":
            return None
        return record.get("output")

    # ------------------------------------------------------------------------------ the walk

    async def run(self, input_data: Any, resume: Resume | None = None) -> RunEnd:
        """Walk the entries from the start (or from `resume`'s entry); never raises for step failures."""
        self._driver = asyncio.current_task()
        with workflow_run_span(self.workflow.id, run_id=self.run_id):  # a no-op unless tracing is on
            return await self._walk(input_data, resume)

    async def _walk(self, input_data: Any, resume: Resume | None) -> RunEnd:
        entries = self.workflow.entries
        start = 0
        prev = input_data
        if resume is not None:
            start = resume.entry_index
            prev = self._entry_input(entries[start], resume)
        else:
            self.input = input_data
        try:
            for index in range(start, len(entries)):
                prev = await self._entry(index, entries[index], prev, resume if index == start else None)
                if self.signal.aborted:
                    return self._canceled()
        except Stop as stop:
            if stop.end.status == "failed" and self.signal.aborted:
                return self._canceled()  # the step failed because of the cancel (as fetch does)
            return stop.end
        return RunEnd("success", result=prev)

    def _canceled(self) -> RunEnd:
        self._emit(WorkflowCanceled(run_id=self.run_id, from_=ChunkFrom.WORKFLOW))
        return RunEnd("canceled")

    def _entry_input(self, entry: Entry, resume: Resume) -> Any:
        record = self.records.get(resume.step_id)
        if record is None:
            raise WorkflowError(f"run {self.run_id!r} has no record of step {resume.step_id!r}")
        return record.get("payload")

    async def _entry(self, index: int, entry: Entry, prev: Any, resume: Resume | None) -> Any:
        if isinstance(entry, StepEntry):
            if entry.in_path and resume is None:
                self.path.append(entry.step.id)
            outcome = await self._step(entry.step, prev, resume=resume, in_path=entry.in_path)
            return self._settle(index, [(entry.step, outcome)])
        if isinstance(entry, ParallelEntry):
            return await self._group(index, list(entry.steps), prev, resume)
        if isinstance(entry, BranchEntry):
            if resume is not None:
                chosen = [
                    s for s in (s for _, s in entry.branches) if s.id in self.branches.get(str(index), [])
                ]
            else:
                chosen = []
                for condition, step in entry.branches:
                    if await call(condition, self._context(step, prev)):
                        chosen.append(step)
                self.branches[str(index)] = [s.id for s in chosen]
            return await self._group(index, chosen, prev, resume)
        if isinstance(entry, LoopEntry):
            return await self._loop(index, entry, prev, resume)
        if isinstance(entry, ForeachEntry):
            return await run_foreach(self, entry, prev)
        return await run_sleep(self, entry, prev)

    def _settle(self, index: int, outcomes: list[tuple[Step, Outcome]]) -> Any:
        """An entry's output, or a `Stop` for a failed, suspended or bailed step."""
        for _, outcome in outcomes:
            if outcome.kind == "failed":
                # a guardrail's tripwire ends the run as "tripwire" (Mastra's fmtReturnValue, default.ts)
                status = "tripwire" if isinstance(outcome.value, Tripwire) else "failed"
                raise Stop(RunEnd(status, error=outcome.value))
        suspended = [s for s, o in outcomes if o.kind == "suspended"]
        if suspended:
            for step in suspended:
                self.suspended[step.id] = [index]
            raise Stop(RunEnd("suspended", suspended={s.id: [index] for s in suspended}))
        for _, outcome in outcomes:
            if outcome.kind == "bailed":
                raise Stop(RunEnd("success", result=outcome.value))
        if len(outcomes) == 1 and not isinstance(self.workflow.entries[index], (ParallelEntry, BranchEntry)):
            return outcomes[0][1].value
        return {s.id: o.value for s, o in outcomes}

    async def _group(self, index: int, steps: list[Step], prev: Any, resume: Resume | None) -> Any:
        jobs: list[tuple[Step, Any]] = []
        done: dict[str, Outcome] = {}
        for step in steps:
            record = self.records.get(step.id) if resume is not None else None
            if record is not None and record.get("status") == "success":
                done[step.id] = Outcome("success", record.get("output"))
            elif record is not None and record.get("status") == "suspended" and step.id != resume.step_id:  # type: ignore[union-attr]
                done[step.id] = Outcome("suspended", record.get("suspendPayload"))
            else:
                jobs.append(
                    (
                        step,
                        self._begin(
                            step, prev, resume=resume if resume and step.id == resume.step_id else None
                        ),
                    )
                )
        if len(jobs) == 1:
            step, started = jobs[0]
            done[step.id] = await self._finish(step, started)
        elif jobs:
            order = None if self.checkpoint is None else InOrder(self._current_emit(), len(jobs))
            try:
                results = await asyncio.gather(
                    *(
                        self._finish(s, started)
                        if order is None
                        else order.run(self, i, self._finish(s, started))
                        for i, (s, started) in enumerate(jobs)
                    )
                )
            except asyncio.CancelledError:
                if not self._take_interruption():
                    raise
                raise Stop(RunEnd("failed", error=AbortError(self.signal.reason))) from None
            for (step, _), outcome in zip(jobs, results, strict=True):
                done[step.id] = outcome
        return self._settle(index, [(s, done[s.id]) for s in steps])

    async def _loop(self, index: int, entry: LoopEntry, prev: Any, resume: Resume | None) -> Any:
        step = entry.step
        iteration = 1
        if resume is not None:
            metadata = self.records.get(step.id, {}).get("metadata") or {}
            iteration = int(metadata.get("iterationCount", 1))
        while True:
            outcome = await self._step(step, prev, resume=resume, metadata={"iterationCount": iteration})
            resume = None
            prev = self._settle(index, [(step, outcome)])
            if self.signal.aborted:
                return prev
            verdict = bool(await call(entry.condition, self._context(step, prev)))
            if verdict != (entry.kind == "dowhile"):
                return prev
            iteration += 1

    # ------------------------------------------------------------------------------ one step

    def _context(
        self, step: Step, input_data: Any, emit: Callable[[Chunk], None] | None = None, **extra: Any
    ) -> StepContext:
        return StepContext(
            input_data=input_data,
            run_id=self.run_id,
            workflow_id=self.workflow.id,
            step_id=step.id,
            writer=StepWriter(emit or self._emit, run_id=self.run_id, step_name=step.id),
            abort_signal=self.signal,
            mastra=self.workflow.mastra,
            request_context=self.request_context,
            _init_data=self.input,
            _results=self.output_of,
            _state=self.state,
            _suspend_schema=step.suspend_schema,
            _clock=self.clock,
            _sleep=self.sleep,
            **extra,
        )

    async def _step(
        self,
        step: Step,
        input_data: Any,
        *,
        resume: Resume | None = None,
        in_path: bool = True,
        metadata: dict[str, Any] | None = None,
    ) -> Outcome:
        started = self._begin(step, input_data, resume=resume, metadata=metadata)
        return await self._finish(step, started)

    def _begin(
        self,
        step: Step,
        input_data: Any,
        *,
        resume: Resume | None = None,
        metadata: dict[str, Any] | None = None,
        call_id: str | None = "",
    ) -> tuple[str | None, dict[str, Any], Any, Any, Slot | None]:
        """Record and announce the step (`workflow-step-start`); returns what `_finish` needs (with
        the step's checkpoint slot, taken here: steps are announced in the same order every time).
        ``call_id=None``: the start has no ``stepCallId`` (a foreach's, as Mastra's)."""
        if call_id == "":
            call_id = str(uuid.uuid4())
        suspend_data = None
        if resume is not None:
            old = self.records.get(step.id, {})
            suspend_data = old.get("suspendPayload")
            record: dict[str, Any] = {"payload": old.get("payload"), "startedAt": old.get("startedAt")}
            record["status"] = "running"
            if metadata is not None:
                record["metadata"] = metadata
            record["resumePayload"] = to_jsonable(resume.data)
            record["resumedAt"] = int(self.clock())
        else:
            record = {"payload": input_data, "startedAt": int(self.clock()), "status": "running"}
            if metadata is not None:
                record["metadata"] = metadata
        self.records[step.id] = record
        extra = {k: v for k, v in record.items() if k in ("startedAt", "metadata", "resumedAt")}
        self._emit(
            WorkflowStepStart(
                run_id=self.run_id,
                from_=ChunkFrom.WORKFLOW,
                payload=WorkflowStepStartPayload(
                    step_name=step.id,
                    id=step.id,
                    step_call_id=call_id,
                    payload=record["payload"],
                    status="running",
                    resume_payload=record.get("resumePayload", UNSET),
                    extra=extra,
                ),
            )
        )
        slot = self._reserve(step)
        return call_id, record, (resume.data if resume is not None else None), suspend_data, slot

    def _reserve(self, step: Step) -> Slot | None:
        return None if self.checkpoint is None else self.checkpoint.reserve(f"workflow-step {step.id}")

    async def _finish(
        self, step: Step, started: tuple[str | None, dict[str, Any], Any, Any, Slot | None]
    ) -> Outcome:
        call_id, record, resume_data, suspend_data, slot = started
        try:
            with workflow_step_span(
                step.id, workflow_id=self.workflow.id, run_id=self.run_id, control_flow=(_Suspend, _Bail)
            ):
                output = await self._run_body(slot, step, record["payload"], resume_data, suspend_data)
        except _Suspend as suspension:
            return self._suspended(step, call_id, record, suspension.payload)
        except _Bail as bail:
            result = to_jsonable(bail.result)
            self._succeeded(step, call_id, record, result, shown_status="bailed")
            return Outcome("bailed", result)
        except Exception as exc:
            self._failed(step, call_id, record, exc)
            return Outcome("failed", exc)
        self._succeeded(step, call_id, record, output)
        return Outcome("success", output)

    async def _run_body(
        self, slot: Slot | None, step: Step, input_data: Any, resume_data: Any, suspend_data: Any
    ) -> Any:
        """`_execute` the step, through its checkpoint slot when the run is durable: a step recorded by
        an earlier execution of this run is not run again (see `_checkpoint`)."""
        if slot is None:
            return await self._execute(step, input_data, resume_data, suspend_data, self._emit)
        ran: list[Any] = []  # the body's live outcome: [output] or [exception]

        async def body() -> Any:
            return await record_outcome(
                lambda emit: self._execute(step, input_data, resume_data, suspend_data, emit),
                self._emit,
                self.state,
                ran,
            )

        recorded = await slot(body)
        if not ran:
            return replay_outcome(recorded, self._emit, self.state)
        if isinstance(ran[0], BaseException):
            raise ran[0]  # ran here: the real exception, not its record
        return recorded["output"]

    async def _execute(
        self, step: Step, input_data: Any, resume_data: Any, suspend_data: Any, emit: Callable[[Chunk], None]
    ) -> Any:
        parsed = input_data
        if step.input_schema is not None:
            outcome = validate_value(step.input_schema, input_data)
            if not outcome.ok:
                raise StepInputValidationError(step.id, outcome.issues)
            parsed = outcome.value
        retry = self.workflow.retry_config
        attempts = step.retries if step.retries is not None else retry.attempts
        attempt = 0
        while True:
            context = self._context(
                step, parsed, emit, resume_data=resume_data, suspend_data=suspend_data, retry_count=attempt
            )
            try:
                value = await self._guarded(step, context)
                break
            except (AbortError, asyncio.CancelledError):
                raise
            except Exception:
                if attempt >= attempts or self.signal.aborted:
                    raise
                attempt += 1
                if retry.delay:
                    await until_aborted(self.sleep(retry.delay / 1000.0), self.signal)
        # What a step returns is not checked against its output_schema, as in Mastra (the recording
        # invalid-step-output: the next step's input check names the field); a workflow's schemas
        # chain, so the mistake surfaces at the next step whose input_schema reads it.
        return to_jsonable(value)

    async def _guarded(self, step: Step, context: StepContext) -> Any:
        """Run the step; if the run is cancelled and the grace period ran out, the step is interrupted
        and fails with an `AbortError`."""
        try:
            return await call(step.execute, context)
        except asyncio.CancelledError:
            if self._take_interruption():
                raise AbortError(self.signal.reason) from None
            raise

    def _take_interruption(self) -> bool:
        """After `CancelledError` reached the run's own task: whether it was the cancel's interruption
        (then it is absorbed, and the step in flight fails with an `AbortError`)."""
        task = asyncio.current_task()
        if self.interrupted and task is not None and task is self._driver and task.uncancel() == 0:
            self.interrupted = False
            return True
        return False

    # ------------------------------------------------------------------------------ outcomes

    def _result_payload(
        self, step: Step, call_id: str | None, record: dict[str, Any], status: str
    ) -> WorkflowStepResultPayload:
        # A foreach's result (no call id) is Mastra's bare one: no payload, no startedAt
        # (packages/core/src/workflows/handlers/control-flow.ts, executeForeach).
        shown = (
            ("metadata", "resumedAt", "endedAt")
            if call_id is None
            else ("startedAt", "metadata", "resumedAt", "endedAt")
        )
        extra = {k: v for k, v in record.items() if k in shown}
        if "error" in record:
            extra["error"] = error_json(self.errors.get(step.id, record["error"]))
        return WorkflowStepResultPayload(
            tripwire=record.get("tripwire"),
            step_name=step.id,
            id=step.id,
            step_call_id=call_id,
            payload=record["payload"] if call_id is not None else UNSET,
            status=status,
            resume_payload=record.get("resumePayload", UNSET),
            output=record.get("output", UNSET),
            extra=extra,
        )

    def _succeeded(
        self,
        step: Step,
        call_id: str | None,
        record: dict[str, Any],
        output: Any,
        shown_status: str = "success",
    ) -> None:
        record["status"] = "success"
        record["output"] = output
        record["endedAt"] = int(self.clock())
        self._announce_result(step, call_id, record, shown_status)

    def _failed(self, step: Step, call_id: str | None, record: dict[str, Any], error: BaseException) -> None:
        record["status"] = "failed"
        record["error"] = error
        record["endedAt"] = int(self.clock())
        if isinstance(error, Tripwire):
            record["tripwire"] = error.data()  # the step failure keeps it (default.ts, executeStepWithRetry)
        self.errors[step.id] = error
        log.error(
            "Error executing step workflow.%s.step.%s: %s", self.workflow.id, step.id, error, exc_info=error
        )
        self._announce_result(step, call_id, record, "failed")

    def _announce_result(self, step: Step, call_id: str | None, record: dict[str, Any], status: str) -> None:
        self._emit(
            WorkflowStepResult(
                run_id=self.run_id,
                from_=ChunkFrom.WORKFLOW,
                payload=self._result_payload(step, call_id, record, status),
            )
        )
        self._emit(
            WorkflowStepFinish(
                run_id=self.run_id,
                from_=ChunkFrom.WORKFLOW,
                payload=WorkflowStepFinishPayload(id=step.id, metadata={}),
            )
        )

    def _suspended(self, step: Step, call_id: str | None, record: dict[str, Any], payload: Any) -> Outcome:
        payload = to_jsonable(payload)
        record.pop("resumePayload", None)
        record.pop("resumedAt", None)
        record["status"] = "suspended"
        record["suspendPayload"] = payload
        record["suspendedAt"] = int(self.clock())
        extra = {k: v for k, v in record.items() if k in ("startedAt", "metadata", "suspendedAt")}
        self._emit(
            WorkflowStepSuspended(
                run_id=self.run_id,
                from_=ChunkFrom.WORKFLOW,
                payload=WorkflowStepSuspendedPayload(
                    id=step.id,
                    payload=record["payload"],
                    status="suspended",
                    suspend_payload=payload,
                    extra={
                        "stepName": step.id,
                        **({} if call_id is None else {"stepCallId": call_id}),
                        **extra,
                    },
                ),
            )
        )
        return Outcome("suspended", payload)
