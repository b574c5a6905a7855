"""``workflow_route``: a Starlette ``Route`` that starts or resumes workflow runs as a UI message stream
(``workflowRoute`` of ``@mastra/ai-sdk``), behind the same `RequestGuard` as `chat_route`; and
``workflow_stream_route``, which serves a run's active stream again (a reload, another server);
and the registry of legs running in this process, which ``workflow_cancel_route`` (in
`._workflow_cancel`) reaches.

With a ``stream_store`` each leg of a run (its start, each resume) is recorded under the run's key
(`workflow_stream_key`) and the answer is a reader of that recording; with a ``runner`` as well
(``agentstream.durable.DurableWorkflows``) the leg runs on a worker, and this server only checks,
claims, dispatches and follows.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .._abort import AbortController
from ..ai_sdk import (
    ChatRequestError,
    Jobs,
    OnErrorFn,
    SSEStreamResponse,
    Version,
    WorkflowRegistry,
    WorkflowStreamOptions,
    assert_valid_heartbeat_ms,
    check_workflow_request,
    start_workflow_stream,
)
from ..resumable import (
    StreamOwnerError,
    StreamStore,
    WorkflowJob,
    WorkflowRunner,
    workflow_stream_key,
)
from ._errors import answering_errors
from ._guard import RequestGuard
from ._owner import owner_key, stream_owner
from ._resume import check_runner, follow_endpoint, route_jobs

__all__ = ["workflow_route", "workflow_stream_route"]


def check_workflow_runner(where: str, runner: object, store: StreamStore | None, on_error: object) -> None:
    """`check_runner` for a workflow route's runner (``on_error`` is the workers' setting then)."""
    hint = "DurableWorker(chat_options={'on_error': ...})"
    check_runner(where, runner, WorkflowRunner, store, {"on_error": on_error}, hint)


async def _claim_run(jobs: Jobs, key: str, owner: str | None, run_id: str) -> str:
    """The run's new stream; a leg of the run still streaming (a concurrent start or resume) is 409."""
    conflict = ChatRequestError(
        f"run {run_id[:120]!r} is streaming already; follow it at its stream URL",
        status_code=409,
        path="runId",
    )
    if await jobs.require_store("workflow_route").active(key) is not None:
        raise conflict
    try:
        return await jobs.claim(key, owner)
    except StreamOwnerError:
        raise conflict from None


def workflow_route(
    mastra: WorkflowRegistry,
    path: str = "/api/workflows/{workflow_id}/stream",
    *,
    workflow: str | None = None,
    resume: bool | None = None,
    version: Version = "v5",
    include_text_stream_parts: bool = True,
    send_reasoning: bool = False,
    send_sources: bool = False,
    heartbeat_ms: float = 15_000,
    on_error: OnErrorFn | None = None,
    name: str | None = None,
    guard: RequestGuard | None = None,
    stream_store: StreamStore | None = None,
    runner: WorkflowRunner | None = None,
    jobs: Jobs | None = None,
) -> Route:
    """A ``POST`` route streaming runs of workflow ``{workflow_id}`` (or the fixed ``workflow``).

    The body is ``{inputData, initialState?, runId?}`` to start a run, or ``{runId, resumeData,
    step?}`` to resume a suspended one (``resume=True``: only resumes, ``False``: only starts). The
    answer streams ``data-workflow`` / ``data-workflow-step`` parts as SSE. With an ``auth`` hook on
    the ``guard``, its principal owns the runs it starts; another principal's run is not found.
    Refusals are JSON ``{"error": {"name", "message", "path"?}}`` (400, 401, 403, 404, 409, 413, 415).

    With ``jobs`` over a stream store (a bare ``stream_store`` is the deprecated spelling), the
    run's stream is recorded there (a client that goes away no longer
    cancels the run) and `workflow_stream_route` serves it again. With a ``runner`` (a
    `WorkflowRunner` such as ``agentstream.durable.DurableWorkflows``; needs the ``stream_store``
    its workers share) the run executes on a worker: the request is checked here (every refusal is
    still answered by this server), the run's stream claimed, the leg dispatched as JSON, and the
    answer is that stream, followed. ``on_error`` then belongs to the workers' configuration.
    """
    assert_valid_heartbeat_ms(heartbeat_ms)
    if workflow is None and "{workflow_id}" not in path:
        raise ValueError("workflow_route: the path needs a {workflow_id} parameter, or pass workflow=")
    served = route_jobs("workflow_route", jobs, stream_store)
    stream_store = served.store
    if runner is not None:
        check_workflow_runner("workflow_route", runner, stream_store, on_error)
    checks = guard or RequestGuard()
    options = WorkflowStreamOptions(
        version=version,
        include_text_stream_parts=include_text_stream_parts,
        send_reasoning=send_reasoning,
        send_sources=send_sources,
    )

    async def answer(request: Request, body: Mapping[str, Any], principal: object) -> AsyncIterator[Any]:
        resource_id = owner_key(principal)
        workflow_id = workflow or request.path_params["workflow_id"]
        spec, run = await check_workflow_request(
            mastra=mastra,
            workflow_id=workflow_id,
            params=body,
            resource_id=resource_id,
            resume=resume,
            options=options,
        )
        key = workflow_stream_key(workflow_id, spec["run_id"])
        if stream_store is None:
            return served.track(
                key, start_workflow_stream(run, spec, on_error=on_error), run.abort, subject=run
            )
        stream_id = await _claim_run(served, key, stream_owner(resource_id), spec["run_id"])
        if runner is not None:
            return await served.hand_off(
                stream_id, runner.dispatch(WorkflowJob(spec=spec, stream_id=stream_id))
            )
        try:
            chunks = start_workflow_stream(run, spec, on_error=on_error)
        except BaseException:
            await served.release(stream_id)
            raise
        return served.run_here(key, stream_id, chunks, run.abort, subject=run)

    async def start(request: Request) -> Response:
        if request.method == "OPTIONS":
            return checks.preflight(request)
        principal = await checks.admit(request)
        body = await checks.read_json(request)
        if not isinstance(body, Mapping):
            raise ChatRequestError("expected the request body to be a JSON object")
        stream = await answer(request, body, principal)
        return SSEStreamResponse(
            stream,
            controller=AbortController(),
            heartbeat_ms=heartbeat_ms,
            headers=checks.cors_headers(request),
        )

    return Route(
        path, answering_errors(start, checks, "workflow request"), methods=["POST", "OPTIONS"], name=name
    )


def workflow_stream_route(
    jobs: Jobs | StreamStore,
    path: str = "/api/workflows/{workflow_id}/runs/{run_id}/stream",
    *,
    workflow: str | None = None,
    guard: RequestGuard | None = None,
    heartbeat_ms: float = 15_000,
    name: str | None = None,
) -> Route:
    """``GET`` ``path``: the run's active leg as a UI message stream, replayed from its start
    (``?after=N`` skips the first N chunks) and followed to its end; 204 when the run streams
    nothing now, or when it belongs to another principal (who learns nothing, not even that the
    run exists). ``jobs`` is the `Jobs` given to `workflow_route` (a bare `StreamStore` is
    deprecated).
    """
    assert_valid_heartbeat_ms(heartbeat_ms)
    if "{run_id}" not in path or (workflow is None and "{workflow_id}" not in path):
        raise ValueError(
            "workflow_stream_route: the path needs a {run_id} parameter, and {workflow_id} or workflow="
        )
    checks = guard or RequestGuard()

    def key_of(request: Request) -> str:
        return workflow_stream_key(
            workflow or request.path_params["workflow_id"], request.path_params["run_id"]
        )

    start = follow_endpoint(route_jobs("workflow_stream_route", jobs), checks, key_of, heartbeat_ms)
    return Route(
        path,
        answering_errors(start, checks, "workflow stream request"),
        methods=["GET", "OPTIONS"],
        name=name,
    )
