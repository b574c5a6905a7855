"""``workflow_route``: a Starlette ``Route`` that starts or resumes workflow runs as a UI message stream
(``workflowRoute`` of ``@mastra/ai-sdk``), behind the same `RequestGuard` as `chat_route`."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .._abort import AbortController
from ..ai_sdk import (
    ChatRequestError,
    OnErrorFn,
    SSEStreamResponse,
    Version,
    WorkflowRegistry,
    assert_valid_heartbeat_ms,
    handle_workflow_stream,
    parse_json_body,
)
from ._guard import RequestGuard
from ._route import InternalServerError, error_response

__all__ = ["workflow_route"]

logger = logging.getLogger("agentstream.server")


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
) -> Route:
    """A ``POST`` route streaming runs of workflow ``{workflow_id}`` (or the fixed ``workflow``).

    The body is ``{inputData, initialState?, runId?}`` to start a run, or ``{runId, resumeData,
    step?}`` to resume a suspended one (``resume=True``: only resumes, ``False``: only starts). The
    answer streams ``data-workflow`` / ``data-workflow-step`` parts as SSE. With an ``auth`` hook on
    the ``guard``, its principal owns the runs it starts; another principal's run is not found.
    Refusals are JSON ``{"error": {"name", "message", "path"?}}`` (400, 401, 403, 404, 409, 413, 415).
    """
    assert_valid_heartbeat_ms(heartbeat_ms)
    if workflow is None and "{workflow_id}" not in path:
        raise ValueError("workflow_route: the path needs a {workflow_id} parameter, or pass workflow=")
    checks = guard or RequestGuard()

    async def start(request: Request) -> Response:
        if request.method == "OPTIONS":
            return checks.preflight(request)
        principal = await checks.admit(request)
        body = parse_json_body(await checks.read_body(request), max_depth=checks.max_json_depth)
        if not isinstance(body, Mapping):
            raise ChatRequestError("expected the request body to be a JSON object")
        stream = await handle_workflow_stream(
            mastra=mastra,
            workflow_id=workflow or request.path_params["workflow_id"],
            params=body,
            resource_id=None if principal is None else str(principal),
            version=version,
            include_text_stream_parts=include_text_stream_parts,
            send_reasoning=send_reasoning,
            send_sources=send_sources,
            on_error=on_error,
            resume=resume,
        )
        return SSEStreamResponse(
            stream,
            controller=AbortController(),
            heartbeat_ms=heartbeat_ms,
            headers=checks.cors_headers(request),
        )

    async def endpoint(request: Request) -> Response:
        try:
            return await start(request)
        except ChatRequestError as exc:
            return error_response(exc, checks.cors_headers(request))
        except Exception:
            logger.exception(
                "workflow request %s %s failed before streaming", request.method, request.url.path
            )
            return error_response(InternalServerError())

    return Route(path, endpoint, methods=["POST", "OPTIONS"], name=name)
