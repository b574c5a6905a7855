"""Starting and resuming runs for the Mastra API's workflow routes: the request body checked
field by field, the run found (or made) for its owner, the leg started and held by `LiveRuns`.

The owner rule is Mastra's ``validateRunOwnership`` with our `owner_key`: with an auth hook a
principal reaches only the runs of its resource (another's answers 404, as one that does not
exist); without one (a local, single-user app) every run, and a run's ``resourceId`` is what the
body says.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from ..ai_sdk import ChatRequestError, WorkflowRunSpec
from ..storage import WorkflowSnapshotRecord
from ..tracing import traced_for
from ..workflows import WorkflowInputValidationError, WorkflowResumeError
from ._flows_http import Caller, check_id, not_found
from ._workflow_live import LocalLeg, leg_chunks
from ._workflow_remote_leg import RemoteLeg
from ._workflow_store import StoreLegs, spec_options

if TYPE_CHECKING:
    from ..workflows import Run, Workflow
    from ._context import ApiContext
    from ._workflow_live import LiveRuns

__all__ = ["RESUME_KEYS", "START_KEYS", "Leg", "Legs", "check_keys", "visible"]

_COMMON = frozenset({"requestContext", "tracingOptions", "perStep"})
START_KEYS = _COMMON | {"inputData", "initialState", "resourceId", "closeOnSuspend"}
RESUME_KEYS = _COMMON | {"step", "resumeData", "forEachIndex"}
CREATE_KEYS = frozenset({"resourceId", "disableScorers"})


def check_keys(body: dict[str, Any], allowed: frozenset[str]) -> None:
    """400 naming the first field the route does not know; and for the options we do not honour."""
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise ChatRequestError(
            f"unknown field {unknown[0]!r}; expected some of {sorted(allowed)}", path=unknown[0]
        )
    if body.get("perStep") not in (None, False):
        raise ChatRequestError("perStep: running one step at a time is not supported", path="perStep")
    if body.get("forEachIndex") is not None:
        raise ChatRequestError(
            "forEachIndex: resuming one item of a foreach is not supported", path="forEachIndex"
        )


def visible(record: WorkflowSnapshotRecord | None, caller: Caller) -> bool:
    """Whether the caller may see this stored run (Mastra's ownership rule, our owner key)."""
    return record is not None and (caller.owner is None or record.resource_id == caller.owner)


Leg: TypeAlias = "LocalLeg | RemoteLeg"


def _spec(
    workflow: Workflow, run_id: str, resource: str | None, *, resume: bool, body: dict[str, Any]
) -> WorkflowRunSpec:
    """The checked leg as JSON, what a worker needs to run it."""
    return WorkflowRunSpec(
        workflow_id=workflow.id,
        run_id=run_id,
        resource_id=resource,
        resume=resume,
        input_data=body.get("inputData"),
        initial_state=body.get("initialState"),
        resume_data=body.get("resumeData"),
        step=body.get("step"),
        options=spec_options(),  # type: ignore[typeddict-item]
    )


def _issues_path(prefix: str, exc: BaseException) -> str:
    issues = getattr(exc, "issues", ())
    if issues and issues[0].path:
        return prefix + "." + ".".join(str(p) for p in issues[0].path)
    return prefix


class Legs:
    """Finds runs for callers and starts their legs."""

    def __init__(self, context: ApiContext, live: LiveRuns) -> None:
        self.context = context
        self.live = live
        if context.workflow_runner is not None and context.jobs.store is None:
            raise ValueError(
                "mastra_api_routes(workflow_runner=...) needs the stream_store its workers write to"
            )
        has_store = context.jobs.store is not None
        self.stored_legs = StoreLegs(context.jobs, context.workflow_runner) if has_store else None

    def workflow(self, workflow_id: str) -> Workflow:
        try:
            return self.context.mastra.get_workflow(workflow_id)
        except KeyError:
            raise not_found("Workflow") from None

    async def stored(self, workflow: Workflow, run_id: str, caller: Caller) -> WorkflowSnapshotRecord:
        """The caller's stored run (404 for none, and for another resource's)."""
        record = await workflow.storage.find_workflow_run(workflow.id, run_id)
        if not visible(record, caller):
            raise not_found("Workflow run")
        assert record is not None
        return record

    def resource(self, caller: Caller, body: dict[str, Any]) -> str | None:
        """The resource a new run belongs to: the caller's (a body naming another is 403)."""
        asked = body.get("resourceId")
        if asked is not None and not isinstance(asked, str):
            raise ChatRequestError("resourceId: expected a string", path="resourceId")
        asked = check_id(asked, "resourceId", required=False)
        if caller.owner is not None:
            if asked is not None and asked != caller.owner:
                raise ChatRequestError("resourceId is not yours", status_code=403, path="resourceId")
            return caller.owner
        return asked

    async def create(
        self, workflow: Workflow, run_id: str | None, caller: Caller, body: dict[str, Any]
    ) -> str:
        """Record a ``pending`` run (Mastra's ``createRun``): ``start`` and ``stream`` find it."""
        check_keys(body, CREATE_KEYS)
        resource = self.resource(caller, body)
        run_id = run_id or str(uuid.uuid4())
        record = await workflow.storage.find_workflow_run(workflow.id, run_id)
        if record is not None:
            if not visible(record, caller):
                raise ChatRequestError(
                    f"runId {run_id[:120]!r} is already used by a run", status_code=409, path="runId"
                )
            return run_id  # Mastra's createRun of an existing run hands it back
        snapshot: dict[str, Any] = {"runId": run_id, "status": "pending", "value": {}, "context": {}}
        if resource is not None:
            snapshot["resourceId"] = resource
        snapshot["serializedStepGraph"] = workflow.serialized_step_graph()
        snapshot["timestamp"] = int(time.time() * 1000)
        await workflow.storage.persist_workflow_snapshot(workflow.id, run_id, snapshot, resource_id=resource)
        return run_id

    def _not_streaming(self, workflow: Workflow, run_id: str) -> None:
        if self.live.get(workflow.id, run_id) is not None:
            raise ChatRequestError(
                f"run {run_id[:120]!r} is streaming already; observe it (POST .../observe)",
                status_code=409,
                path="runId",
            )

    async def _launch(self, run: Run, spec: WorkflowRunSpec, start: Callable[[], Any]) -> Leg:
        """The leg: dispatched to a worker (with a runner), else started here by ``start()`` (and
        recorded in the stream store, when the app has one)."""
        stored = self.stored_legs
        if stored is None:
            with traced_for(spec["resource_id"]):  # the run's task (and its spans) belong to its resource
                output = start()
            self.live.add(run, output)
            return LocalLeg(output)
        stream_id = await stored.claim(run.workflow_id, run.run_id, spec["resource_id"])
        if stored.runner is not None:
            await stored.dispatch(spec, stream_id)
            return RemoteLeg(stored, stream_id, run.workflow, run.run_id)
        try:
            with traced_for(spec["resource_id"]):
                output = start()
        except BaseException:
            await stored.jobs.release(stream_id)
            raise
        self.live.add(run, output)
        stored.record(run.workflow_id, run.run_id, stream_id, leg_chunks(output))
        return LocalLeg(output)

    async def start(
        self,
        workflow: Workflow,
        run_id: str | None,
        caller: Caller,
        body: dict[str, Any],
        *,
        must_exist: bool,
    ) -> tuple[Run, Leg]:
        """Start run ``run_id`` (a new one when ``None``): the run and its leg's output. 400 naming
        the field of bad input (nothing runs), 409 for a run that ran already or streams now."""
        check_keys(body, START_KEYS)
        run_id = run_id or str(uuid.uuid4())
        record = await workflow.storage.find_workflow_run(workflow.id, run_id)
        if record is not None and not visible(record, caller):
            raise not_found("Workflow run")
        if record is None and must_exist:
            raise not_found("Workflow run")
        self._not_streaming(workflow, run_id)
        resource = record.resource_id if record is not None else self.resource(caller, body)
        run = await workflow.create_run(run_id, resource_id=resource)
        if run.status != "pending":
            raise ChatRequestError(
                f"Workflow run {run_id[:120]} already ran (status {run.status!r}); "
                "observe it, or start a new run",
                status_code=409,
                path="runId",
            )
        try:
            run.check_input(body.get("inputData"))
        except WorkflowInputValidationError as exc:
            raise ChatRequestError(str(exc), path=_issues_path("inputData", exc)) from None
        spec = _spec(workflow, run_id, resource, resume=False, body=body)
        leg = await self._launch(
            run,
            spec,
            lambda: run.stream(input_data=body.get("inputData"), initial_state=body.get("initialState")),
        )
        return run, leg

    async def resume(
        self, workflow: Workflow, run_id: str, caller: Caller, body: dict[str, Any]
    ) -> tuple[Run, Any]:
        """Resume the caller's suspended run: 404 for none, 409 not suspended (or not at ``step``),
        400 naming the field of resume data that does not match the step's resume schema."""
        check_keys(body, RESUME_KEYS)
        step = body.get("step")
        if step is not None and not (
            isinstance(step, str)
            or (isinstance(step, list) and step and all(isinstance(s, str) for s in step))
        ):
            raise ChatRequestError("step: expected a step id or a list of step ids", path="step")
        record = await self.stored(workflow, run_id, caller)
        self._not_streaming(workflow, run_id)
        run = await workflow.create_run(run_id, resource_id=record.resource_id)
        try:
            run.check_resume(step=step, resume_data=body.get("resumeData"))
        except WorkflowResumeError as exc:
            if exc.issues:
                raise ChatRequestError(str(exc), path=_issues_path("resumeData", exc)) from None
            raise ChatRequestError(
                str(exc), status_code=409, path="step" if step is not None else "runId"
            ) from None
        spec = _spec(workflow, run_id, record.resource_id, resume=True, body=body)
        leg = await self._launch(
            run, spec, lambda: run.resume_stream(step=step, resume_data=body.get("resumeData"))
        )
        return run, leg
