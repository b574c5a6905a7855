"""`Run`: one run of a workflow — `stream` / `start`, `resume_stream` / `resume`, `cancel`, `watch` — and
its snapshots in storage (saved when the run starts, suspends and ends)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .._abort import AbortController
from .._request_context import RequestContext, as_request_context
from ..agent import Tripwire
from ..chunks import Chunk, error_to_dict, to_jsonable
from ..tools import validate_value
from ._checkpoint import Checkpoint
from ._engine import Execution, Resume, RunEnd
from ._errors import WorkflowError, WorkflowInputValidationError, WorkflowResumeError
from ._liveness import LOST_RUN, RENEW_MS, lost_error, lost_reason, owner_record
from ._nested import nested_path, resumed_step
from ._output import WorkflowResult, WorkflowRunOutput
from ._step import Step

if TYPE_CHECKING:
    from ._workflow import Workflow

__all__ = ["Run"]

log = logging.getLogger("agentstream.workflows")

Watcher = Callable[[Chunk], Any]


class Run:
    """One run of a workflow (Mastra's ``Run``); made by ``await workflow.create_run(run_id=None)``.

    * ``run.stream(input_data=..., initial_state=None)`` → `WorkflowRunOutput` (starts at once; calling
      it again returns the same output); ``await run.start(input_data=...)`` → `WorkflowResult`;
    * ``run.resume_stream(step=..., resume_data=...)`` / ``await run.resume(...)`` continue a suspended
      run (also one suspended in another process: ``create_run`` with its id loads the snapshot);
    * ``await run.cancel()`` fires the steps' ``abort_signal``; the running step's result is still
      reported, nothing after it runs (a step that ignores the signal is interrupted after
      ``cancel_grace_ms``);
    * ``run.watch(callback)`` calls ``callback(chunk)`` for every event of every leg (including
      ``workflow-step-finish``); returns a function that stops watching.
    """

    def __init__(
        self,
        workflow: Workflow,
        run_id: str,
        *,
        resource_id: str | None,
        clock: Callable[[], float] | None,
        sleep: Callable[[float], Any] | None,
        cancel_grace_ms: float,
        checkpoint: Checkpoint | None = None,
    ) -> None:
        self.workflow = workflow
        self._checkpoint = checkpoint
        self.run_id = run_id
        self.workflow_id = workflow.id
        self.resource_id = resource_id
        self._controller = AbortController()
        self._cancel_grace_ms = cancel_grace_ms
        self._status = "pending"
        self._output: WorkflowRunOutput | None = None
        self._task: asyncio.Task[None] | None = None
        self._watchers: list[Watcher] = []
        self._generation = 0
        self.stored_resource_id: str | None = None
        """The resource (user) the stored run belongs to, when it was loaded from storage."""
        self._lost: str | None = None
        self._execution = Execution(
            workflow,
            run_id,
            emit=lambda _c: None,
            signal=self._controller.signal,
            clock=clock,
            sleep=sleep,
            checkpoint=checkpoint,
        )

    @property
    def status(self) -> str:
        """`pending` (not started), `running`, `success`, `failed`, `suspended` or `canceled`."""
        return self._status

    @property
    def lost(self) -> str | None:
        """Why the run is `failed` without having ended: the server process running it died (a
        sentence for people; ``None`` for every other run). See ``workflows._liveness``."""
        return self._lost

    @property
    def suspended_steps(self) -> list[str]:
        """Ids of the steps waiting for `resume_stream` (empty unless `status` is `suspended`)."""
        return list(self._execution.suspended) if self._status == "suspended" else []

    # ---------------------------------------------------------------------------- snapshots

    async def _recorded(self, name: str, read: Callable[[], Any]) -> Any:
        """A storage read of a durable run goes through its checkpoint: a re-run after a crash sees
        what the first execution saw (the snapshot it has since overwritten, the claim it won)."""
        if self._checkpoint is None:
            return await read()
        return await self._checkpoint.reserve(name)(read)

    async def _load(self) -> None:
        storage = self.workflow.storage
        snapshot = await self._recorded(
            "load snapshot", lambda: storage.load_workflow_snapshot(self.workflow.id, self.run_id)
        )
        if isinstance(snapshot, dict):
            self._restore(snapshot)
            if self._checkpoint is None and (reason := lost_reason(snapshot)) is not None:
                await self._mark_lost(snapshot, reason)

    async def _mark_lost(self, snapshot: dict[str, Any], reason: str) -> None:
        """A ``running`` run whose process died: store it ``failed`` (once, whoever looks first)."""
        storage = self.workflow.storage
        failed = {k: v for k, v in snapshot.items() if k != "owner"}
        failed.update(status="failed", error=lost_error(self.workflow_id, self.run_id, reason))
        if not await storage.compare_and_set_workflow_snapshot(
            self.workflow_id, self.run_id, failed, expected_status="running"
        ):
            current = await storage.load_workflow_snapshot(self.workflow_id, self.run_id)
            failed = current if isinstance(current, dict) else failed
        log.warning("workflow %s run %s: %s; marked failed", self.workflow_id, self.run_id, reason)
        self._restore(failed)

    def _restore(self, snapshot: dict[str, Any]) -> None:
        owner = snapshot.get("resourceId")
        self.stored_resource_id = owner if isinstance(owner, str) else None
        self._execution.load(snapshot)
        status = snapshot.get("status")
        self._status = status if isinstance(status, str) else "pending"
        generation = snapshot.get("suspendGeneration")
        self._generation = generation if isinstance(generation, int) else 0
        error = snapshot.get("error")
        lost = isinstance(error, dict) and error.get("name") == LOST_RUN and self._status == "failed"
        self._lost = str(error.get("message")) if lost and isinstance(error, dict) else None

    def _snapshot(self, status: str, end: RunEnd | None = None) -> dict[str, Any]:
        snapshot: dict[str, Any] = {"runId": self.run_id, "status": status, "value": {}}
        if self.resource_id is not None:
            snapshot["resourceId"] = self.resource_id
        snapshot.update(self._execution.dump())
        snapshot["serializedStepGraph"] = self.workflow.serialized_step_graph()
        if end is not None and end.status == "success":
            snapshot["result"] = to_jsonable(end.result)
        if end is not None and end.error is not None:
            snapshot["error"] = error_to_dict(end.error)
        snapshot["timestamp"] = int(self._execution.clock())
        if status == "running" and self._checkpoint is None:  # a durable run's engine recovers it
            snapshot["owner"] = owner_record()
        return snapshot

    async def _persist(self, status: str, end: RunEnd | None = None) -> None:
        storage = self.workflow.storage
        snapshot = self._snapshot(status, end)
        if status == "suspended":
            # A fresh one-use resume token per suspension: deleting it is the atomic claim (below).
            self._generation += 1
            await storage.persist_workflow_snapshot(
                _tokens_name(self.workflow_id), self._token(), {"runId": self.run_id}
            )
        snapshot["suspendGeneration"] = self._generation
        await storage.persist_workflow_snapshot(
            self.workflow_id, self.run_id, snapshot, resource_id=self.resource_id
        )

    def _token(self) -> str:
        return f"{self.run_id}#{self._generation}"

    # ---------------------------------------------------------------------------- legs

    def watch(self, callback: Watcher) -> Callable[[], None]:
        """Call `callback(chunk)` for every event of this run; returns the function that stops it."""
        self._watchers.append(callback)

        def unwatch() -> None:
            if callback in self._watchers:
                self._watchers.remove(callback)

        return unwatch

    def _emitter(self, output: WorkflowRunOutput) -> Callable[[Chunk], None]:
        push = output.push
        watchers = self._watchers

        def emit(chunk: Chunk) -> None:
            push(chunk)
            if not watchers:  # watchers may come and go while the run streams
                return
            for callback in list(watchers):
                try:
                    callback(chunk)
                except Exception:
                    log.exception(
                        "workflow %s run %s: a watch callback failed", self.workflow_id, self.run_id
                    )

        return emit

    def stream(
        self,
        *,
        input_data: Any = None,
        initial_state: Any = None,
        request_context: RequestContext | Mapping[str, Any] | None = None,
    ) -> WorkflowRunOutput:
        """Start the run (Mastra's ``run.stream({inputData, requestContext})``) and return its
        `WorkflowRunOutput`. ``request_context`` is every step's ``context.request_context`` (kept
        with the run's snapshots, so a resumed leg has it too).

        Input that does not match the workflow's `input_schema` runs nothing: the stream is
        ``workflow-start`` then ``workflow-finish`` (failed, the `WorkflowInputValidationError` naming
        the field in its metadata), ``result`` raises that error, ``status`` is ``failed``.
        """
        if self._output is not None and self._status != "pending":
            return self._output
        if self._status != "pending":
            raise WorkflowError(
                f"run {self.run_id!r} of workflow {self.workflow_id!r} has already run ({self._status})"
            )
        try:
            input_data = self.check_input(input_data)
        except WorkflowInputValidationError as exc:
            # Mastra's stream rejects the result and closes with the error in the finish's metadata
            # (packages/core/src/stream/RunOutput.ts, rejectResults / close).
            output = self._open()
            self._status = "failed"
            output.close(None, exc)
            return output
        self._execution.state[0] = initial_state
        self._execution.request_context = as_request_context(request_context)
        output = self._open()
        execution = self._execution

        async def first_leg() -> RunEnd:
            await self._persist("running")
            return await execution.run(input_data)

        self._task = asyncio.get_running_loop().create_task(
            self._drive(output, first_leg), name=f"workflow-{self.run_id}"
        )
        return output

    def check_input(self, input_data: Any) -> Any:
        """`input_data` checked against the workflow's `input_schema` (as JSON data), without starting
        the run; raises `WorkflowInputValidationError` naming the field (what `stream` checks)."""
        schema = self.workflow.input_schema
        if schema is None:
            return input_data
        outcome = validate_value(schema, input_data)
        if not outcome.ok:
            raise WorkflowInputValidationError(self.workflow_id, outcome.issues)
        return to_jsonable(outcome.value)

    async def start(
        self,
        *,
        input_data: Any = None,
        initial_state: Any = None,
        request_context: RequestContext | Mapping[str, Any] | None = None,
    ) -> WorkflowResult:
        """Run to the end (or a suspension) and return the `WorkflowResult` (Mastra's ``run.start``).

        Raises `WorkflowInputValidationError` for input that does not match the `input_schema` (as
        Mastra's ``start`` throws its ``WORKFLOW_SCHEMA_VALIDATION_FAILED`` error)."""
        output = self.stream(
            input_data=input_data, initial_state=initial_state, request_context=request_context
        )
        return await output.result

    def _open(self) -> WorkflowRunOutput:
        output = WorkflowRunOutput(run_id=self.run_id, workflow_id=self.workflow_id)
        output._on_cancel = self.cancel
        self._output = output
        self._status = "running"
        self._execution.emit = self._emitter(output)
        return output

    def _resume_target(self, step: Step | str | list[str] | None) -> str:
        suspended = list(self._execution.suspended)
        if self._status != "suspended":
            why = f": {self._lost}" if self._lost is not None else ""
            raise WorkflowResumeError(
                f"run {self.run_id!r} of workflow {self.workflow_id!r} is {self._status}, not suspended{why}"
            )
        if step is None:
            if len(suspended) != 1:
                raise WorkflowResumeError(
                    f"run {self.run_id!r} has several suspended steps {suspended}; pass step="
                )
            return suspended[0]
        # A path (Mastra's ``[nested step, its step, ...]``) names this run's step first; a nested
        # step follows the rest down itself, from what it recorded when it suspended.
        step_id = step.id if isinstance(step, Step) else step[0] if isinstance(step, list) and step else step
        if not isinstance(step_id, str) or step_id not in self._execution.suspended:
            raise WorkflowResumeError(
                f"step {step_id!r} of run {self.run_id!r} is not suspended (suspended: {suspended})"
            )
        return step_id

    def resume_stream(
        self,
        *,
        step: Step | str | list[str] | None = None,
        resume_data: Any = None,
        request_context: RequestContext | Mapping[str, Any] | None = None,
    ) -> WorkflowRunOutput:
        """Resume a suspended run (Mastra's ``run.resumeStream({step, resumeData})``): the step runs again
        with ``context.resume_data``; a new `WorkflowRunOutput` streams the rest.

        Raises `WorkflowResumeError` if the run is not suspended at `step` or `resume_data` does not match
        the step's `resume_schema` (the message names the field). A run resumed by someone else in the
        meantime (another process) fails the returned stream with `WorkflowResumeError`.
        ``request_context`` replaces the one the run was started with (default: that one).
        """
        step_id = self.check_resume(step=step, resume_data=resume_data)
        output = self._open()
        execution = self._execution

        async def resume_leg() -> RunEnd:
            await self._claim()
            if request_context is not None:  # after the claim, which restores the stored one
                execution.request_context = as_request_context(request_context)
            entry_index = execution.suspended.pop(step_id, [0])[0]
            return await execution.run(execution.input, Resume(step_id, resume_data, entry_index))

        self._task = asyncio.get_running_loop().create_task(
            self._drive(output, resume_leg), name=f"workflow-{self.run_id}"
        )
        return output

    def check_resume(self, *, step: Step | str | list[str] | None = None, resume_data: Any = None) -> str:
        """The suspended step `resume_stream` would resume, without resuming: raises
        `WorkflowResumeError` as it does (not suspended there, resume data failing `resume_schema`)."""
        step_id = self._resume_target(step)
        # The step that asked: this run's, or the one a nested workflow suspended at.
        path = nested_path(step_id, self._execution.records.get(step_id, {}).get("suspendPayload"))
        asked = resumed_step(self.workflow, path)
        schema = asked.resume_schema if asked is not None else None
        if schema is not None:
            outcome = validate_value(schema, resume_data)
            if not outcome.ok:
                from ..tools import format_issues

                error = WorkflowResumeError(
                    f"Invalid resume data for step {path[-1]!r}: \n{format_issues(outcome.issues)}"
                )
                error.issues = outcome.issues  # the fields, for a server's 400 to name
                raise error
        return step_id

    async def resume(
        self,
        *,
        step: Step | str | list[str] | None = None,
        resume_data: Any = None,
        request_context: RequestContext | Mapping[str, Any] | None = None,
    ) -> WorkflowResult:
        """`resume_stream` and wait for the `WorkflowResult`."""
        return await self.resume_stream(
            step=step, resume_data=resume_data, request_context=request_context
        ).result

    async def _claim(self) -> None:
        """Take the suspended run: only one resumer (or canceller), in any process, wins — the one whose
        delete of this suspension's resume token succeeds (a row delete is atomic in every store)."""
        storage = self.workflow.storage

        async def take() -> dict[str, Any]:
            snapshot = await storage.load_workflow_snapshot(self.workflow_id, self.run_id)
            if not isinstance(snapshot, dict) or snapshot.get("status") != "suspended":
                return {"snapshot": snapshot, "won": False}
            generation = snapshot.get("suspendGeneration")
            token = f"{self.run_id}#{generation if isinstance(generation, int) else 0}"
            won = await storage.delete_workflow_snapshot(_tokens_name(self.workflow_id), token)
            return {"snapshot": snapshot, "won": bool(won)}

        claim = await self._recorded("claim suspended run", take)
        snapshot = claim["snapshot"]
        if not isinstance(snapshot, dict) or snapshot.get("status") != "suspended":
            state = snapshot.get("status") if isinstance(snapshot, dict) else "gone"
            raise WorkflowResumeError(
                f"run {self.run_id!r} of workflow {self.workflow_id!r} was resumed elsewhere ({state})"
            )
        self._restore(snapshot)
        if not claim["won"]:
            raise WorkflowResumeError(
                f"run {self.run_id!r} of workflow {self.workflow_id!r} was resumed elsewhere"
            )
        self._status = "running"
        await self._persist("running")

    async def _leased(self, leg: Callable[[], Any]) -> RunEnd:
        """Run a leg while renewing the lease of its ``running`` snapshot (stopped before the leg's
        end is stored, so a renewal never overwrites it)."""
        renewer = asyncio.ensure_future(self._renew_lease()) if self._checkpoint is None else None
        try:
            end: RunEnd = await leg()
            return end
        finally:
            if renewer is not None:
                renewer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await renewer

    async def _renew_lease(self) -> None:
        storage = self.workflow.storage
        while True:
            await asyncio.sleep(RENEW_MS / 1000)
            snapshot = self._snapshot("running")
            snapshot["suspendGeneration"] = self._generation
            try:
                # only while still running: a run marked lost (or cancelled) elsewhere is not revived
                if not await storage.compare_and_set_workflow_snapshot(
                    self.workflow_id, self.run_id, snapshot, expected_status="running"
                ):
                    return
            except Exception as exc:  # the store may be down for a moment: the next renewal retries
                log.warning(
                    "workflow %s run %s: renewing its lease failed: %s", self.workflow_id, self.run_id, exc
                )

    async def _drive(self, output: WorkflowRunOutput, leg: Callable[[], Any]) -> None:
        try:
            end: RunEnd = await self._leased(leg)
        except asyncio.CancelledError:
            self._status = "canceled"
            output.close(None, WorkflowError("the workflow run was cancelled"))
            raise
        except Exception as exc:
            self._status = "failed"
            log.error("workflow %s run %s failed: %s", self.workflow_id, self.run_id, exc)
            output.close(None, exc)
            return
        self._status = end.status
        try:
            await self._persist(end.status, end)
        except Exception as exc:
            log.error(
                "workflow %s run %s: saving the snapshot failed: %s", self.workflow_id, self.run_id, exc
            )
            self._status = "failed"
            output.close(None, exc)
            return
        output.close(self._result(end))

    def _result(self, end: RunEnd) -> WorkflowResult:
        execution = self._execution
        steps: dict[str, Any] = {"input": execution.input}
        derivable = _derivable_payloads(execution.path, execution.records, execution.input)
        for step_id, record in execution.records.items():
            view = {k: v for k, v in record.items() if not (k == "payload" and step_id in derivable)}
            if "error" in view:
                view["error"] = execution.errors.get(step_id, view["error"])
            steps[step_id] = view
        return WorkflowResult(
            status=end.status,
            run_id=self.run_id,
            input=execution.input,
            steps=steps,
            step_execution_path=list(execution.path),
            result=end.result if end.status == "success" else None,
            error=end.error,
            suspended=[
                nested_path(s, execution.records.get(s, {}).get("suspendPayload")) for s in end.suspended
            ],
            suspend_payload={s: execution.records.get(s, {}).get("suspendPayload") for s in end.suspended},
            tripwire=end.error.data() if isinstance(end.error, Tripwire) else None,
        )

    def abort(self) -> None:
        """Fire the steps' abort signal now, without waiting (`cancel` does this, then waits): for
        code that learns of a cancel where it cannot wait, e.g. an engine's step boundary."""
        self._controller.abort()

    async def cancel(self) -> None:
        """Cancel the run (Mastra's ``run.cancel()``): fires the steps' abort signal and waits for the
        run to stop. A suspended run becomes `canceled` and can no longer be resumed; so does one
        not started yet (saved as `canceled`: it will not start)."""
        self.abort()
        task = self._task
        if task is not None and not task.done():
            loop = asyncio.get_running_loop()
            handle = loop.call_later(self._cancel_grace_ms / 1000.0, self._interrupt, task)
            try:
                await asyncio.wait([task])
            finally:
                handle.cancel()
        elif self._status == "suspended":
            await self._claim()
            self._status = "canceled"
            await self._persist("canceled")
        elif self._status == "pending":
            self._status = "canceled"
            await self._persist("canceled")

    def _interrupt(self, task: asyncio.Task[None]) -> None:
        if not task.done():
            self._execution.interrupted = True
            task.cancel()


def _tokens_name(workflow_id: str) -> str:
    return f"{workflow_id}#resume-tokens"


def _derivable_payloads(path: list[str], records: dict[str, dict[str, Any]], first_input: Any) -> set[str]:
    """Steps on the execution path whose input is the previous path step's output (or the run's input):
    Mastra's results leave their ``payload`` out, since it can be read from there."""
    out: set[str] = set()
    previous = first_input
    for step_id in path:
        record = records.get(step_id)
        if record is None:
            break
        if record.get("payload") == previous:
            out.add(step_id)
        previous = record.get("output")
    return out
