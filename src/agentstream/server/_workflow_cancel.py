"""``workflow_cancel_route``: Mastra's ``POST /api/workflows/{workflowId}/runs/{runId}/cancel``, for
legs running in this process (the app's `Jobs`), on workers (through the ``runner``) and suspended
runs in storage."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..ai_sdk import DEFAULT_STOP_TIMEOUT_S, ChatRequestError, Jobs, WorkflowRegistry, leg_cancelled
from ..resumable import StreamStore, WorkflowRunner, workflow_stream_key
from ._errors import answering_errors
from ._guard import RequestGuard
from ._owner import owner_key, stream_owner
from ._resume import check_stop_timeout, route_jobs
from ._workflow_route import check_workflow_runner

__all__ = ["cancel_workflow_run", "workflow_cancel_route"]

_CANCELLED = {"message": "Workflow run cancelled"}


def _not_found() -> ChatRequestError:
    # Also another principal's run: indistinguishable from one that does not exist.
    return ChatRequestError("Workflow run not found", status_code=404)


def _unreachable(run_id: str) -> ChatRequestError:
    return ChatRequestError(
        f"run {run_id[:120]!r} is running in another server process; cancel it through that server",
        status_code=409,
    )


async def _cancel_recorded(
    workflow: Any,
    run_id: str,
    resource_id: str | None,
    jobs: Jobs,
    runner: WorkflowRunner | None,
    stop_timeout_s: float,
) -> bool:
    """Cancel the leg streaming into the store now, if one is; whether one was. A leg on a worker
    is cancelled there and waited for; one no worker ends (never started, its worker took it in
    the instant of the cancel and stopped before running anything, or died: a cancelled leg is
    never taken over) is ended here, a pending or suspended run's snapshot ``canceled`` first."""
    key = workflow_stream_key(workflow.id, run_id)
    active = await jobs.require_store("workflow_cancel_route").active(key)
    if active is None:
        return False
    if active.owner != stream_owner(resource_id):
        raise _not_found()

    async def cancel_waiting_run() -> None:
        run = await workflow.create_run(run_id, resource_id=resource_id)
        if run.status in ("pending", "suspended"):
            await run.cancel()

    cancelled = await jobs.cancel(
        key,
        active.stream_id,
        runner,
        ending=leg_cancelled(workflow.id, run_id),
        timeout_s=stop_timeout_s,
        before_ending=cancel_waiting_run,
    )
    if not cancelled:
        raise _unreachable(run_id)  # recorded by another server, running in that server's process
    return True


async def cancel_workflow_run(
    mastra: WorkflowRegistry,
    workflow_id: str,
    run_id: str,
    resource_id: str | None,
    jobs: Jobs | StreamStore | None = None,
    runner: WorkflowRunner | None = None,
    *,
    stop_timeout_s: float = DEFAULT_STOP_TIMEOUT_S,
) -> None:
    """Cancel run ``run_id`` of ``workflow_id`` for ``resource_id``: a leg running in this process,
    on a worker (``runner``; returns once the worker ended its stream, or after ``stop_timeout_s``
    with the stream ended here), or a suspended run in storage (a finished run is left as it is).
    Raises `ChatRequestError`: 404 for an unknown workflow or run (or another principal's), 409
    for a run running in a process this one cannot reach. ``jobs``: the app's `Jobs` (the legs
    running here, and the store; a bare `StreamStore` is deprecated)."""
    served = route_jobs("cancel_workflow_run", jobs)
    try:
        workflow = mastra.get_workflow(workflow_id)
    except (KeyError, LookupError):
        raise ChatRequestError("Workflow not found", status_code=404) from None
    local = served.local(workflow_stream_key(workflow_id, run_id))
    if local is not None and local.subject is not None and local.subject.workflow is workflow:
        if local.subject.resource_id != resource_id:
            raise _not_found()
        await local.subject.cancel()
        return
    if served.store is not None and await _cancel_recorded(
        workflow, run_id, resource_id, served, runner, stop_timeout_s
    ):
        return
    run = await workflow.create_run(run_id, resource_id=resource_id)
    if run.status == "pending" or run.stored_resource_id != resource_id:
        raise _not_found()
    if run.status == "running":
        raise _unreachable(run_id)
    if run.lost is not None:  # its process died mid-run (marked failed when loaded): nothing to cancel
        raise ChatRequestError(run.lost, status_code=409)
    await run.cancel()


def workflow_cancel_route(
    mastra: WorkflowRegistry,
    path: str = "/api/workflows/{workflow_id}/runs/{run_id}/cancel",
    *,
    workflow: str | None = None,
    guard: RequestGuard | None = None,
    stream_store: StreamStore | None = None,
    runner: WorkflowRunner | None = None,
    stop_timeout_s: float = DEFAULT_STOP_TIMEOUT_S,
    name: str | None = None,
    jobs: Jobs | None = None,
) -> Route:
    """``POST`` ``path``: cancel the run (Mastra's cancel route): ``{"message": "Workflow run
    cancelled"}`` once the run is stopped: in this process; on its worker (``runner``), which
    aborts the run within about half a second and ends its stream (a stream no worker ended
    within ``stop_timeout_s`` is ended by this server); or a suspended run marked ``canceled``.
    The run ends ``canceled`` and its stream ends as a cancelled run's does. 404 for an unknown
    workflow or run and for another principal's run (who learns nothing); 409 for a run this
    process cannot reach (running in another server's process). Give the ``stream_store`` and
    ``jobs`` and ``runner`` of the `workflow_route` whose runs it cancels (a bare ``stream_store``
    is the deprecated spelling).
    """
    if "{run_id}" not in path or (workflow is None and "{workflow_id}" not in path):
        raise ValueError(
            "workflow_cancel_route: the path needs a {run_id} parameter, and {workflow_id} or workflow="
        )
    served = route_jobs("workflow_cancel_route", jobs, stream_store)
    if runner is not None:
        check_workflow_runner("workflow_cancel_route", runner, served.store, None)
    check_stop_timeout(stop_timeout_s, "workflow_cancel_route")
    checks = guard or RequestGuard()

    async def start(request: Request) -> Response:
        if request.method == "OPTIONS":
            return checks.preflight(request)
        principal = await checks.admit(request)
        workflow_id = workflow or request.path_params["workflow_id"]
        run_id = request.path_params["run_id"]
        await cancel_workflow_run(
            mastra,
            workflow_id,
            run_id,
            owner_key(principal),
            served,
            runner,
            stop_timeout_s=stop_timeout_s,
        )
        return JSONResponse(_CANCELLED, headers=checks.cors_headers(request))

    return Route(
        path,
        answering_errors(start, checks, "workflow cancel request"),
        methods=["POST", "OPTIONS"],
        name=name,
    )
