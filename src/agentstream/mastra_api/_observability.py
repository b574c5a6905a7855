"""The Mastra API's observability routes (``packages/server/src/server/handlers/observability.ts``)
over the spans `agentstream.tracing.record_spans` keeps in the registry's storage, what client-js's
``Observability`` resource and Studio's traces page call:

* ``GET /observability/traces`` and ``.../traces/light`` (root spans, paged, filtered, newest
  first; ``mode=delta`` polls for traces after a cursor);
* ``GET /observability/traces/:traceId`` and ``.../light`` (every span of the trace);
* ``GET /observability/traces/:traceId/spans/:spanId``;
* Studio's trace query (``POST /observability/traces/query`` and its discovery: `TraceQueries`).

With an auth hook a caller sees the traces of its own resource only (another's is 404, as one that
does not exist; a trace nobody owns is nobody's to see); without one (a local app), all of them.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse, Response

from ..ai_sdk import ChatRequestError
from ..storage import TraceQuery
from ._flows_http import Caller, check_id, flows_route, query_int
from ._observability_json import light_span, span_json, trace_span
from ._trace_query import TraceQueries

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.routing import BaseRoute

    from ..storage import SpanRecord, Storage
    from ._context import ApiContext

__all__ = ["routes"]

_SPAN_TYPES = frozenset(
    {
        "agent_run",
        "model_generation",
        "model_step",
        "model_chunk",
        "tool_call",
        "mcp_tool_call",
        "workflow_run",
        "workflow_step",
        "generic",
        "processor_run",
    }
)
_STATUSES = ("success", "error", "running")


def _date(value: Any, field: str) -> datetime | None:
    if value in (None, ""):
        return None
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise ChatRequestError(
            f"{field}: expected an ISO date, got {str(value)[:40]!r}", path=field
        ) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _range(request: Request) -> tuple[datetime | None, datetime | None]:
    raw = request.query_params.get("startedAt") or request.query_params.get("dateRange")
    if not raw:
        return None, None
    field = "startedAt" if request.query_params.get("startedAt") else "dateRange"
    try:
        value = json.loads(raw)
    except ValueError:
        raise ChatRequestError(f"{field}: expected a JSON object {{start, end}}", path=field) from None
    if not isinstance(value, dict):
        raise ChatRequestError(f"{field}: expected a JSON object {{start, end}}", path=field)
    return _date(value.get("start"), f"{field}.start"), _date(value.get("end"), f"{field}.end")


def _entity(request: Request) -> tuple[str | None, str | None]:
    params = request.query_params
    entity_type = params.get("entityType") or None
    entity_id = check_id(params.get("entityId"), "entityId", required=False)
    name = params.get("name") or ""
    for prefix, kind in (("agent run: '", "agent"), ("workflow run: '", "workflow_run")):
        if entity_id is None and name.startswith(prefix) and name.endswith("'"):
            entity_id, entity_type = name[len(prefix) : -1], kind
    if entity_type == "workflow":
        entity_type = "workflow_run"
    return entity_type, entity_id


def _query(request: Request, caller: Caller) -> TraceQuery:
    params = request.query_params
    span_type = params.get("spanType") or None
    if span_type is not None and span_type not in _SPAN_TYPES:
        raise ChatRequestError(f"spanType: expected one of {sorted(_SPAN_TYPES)}", path="spanType")
    status = params.get("status") or None
    if status is not None and status not in _STATUSES:
        raise ChatRequestError(f"status: expected one of {list(_STATUSES)}", path="status")
    if params.get("field") not in (None, "startedAt"):
        raise ChatRequestError("field: traces are ordered by startedAt only", path="orderBy.field")
    direction = params.get("direction", "DESC")
    if direction not in ("ASC", "DESC"):
        raise ChatRequestError("direction: expected ASC or DESC", path="orderBy.direction")
    asked = check_id(params.get("resourceId"), "resourceId", required=False)
    if caller.owner is not None and asked is not None and asked != caller.owner:
        raise ChatRequestError("resourceId is not yours", status_code=403, path="resourceId")
    entity_type, entity_id = _entity(request)
    started_from, started_to = _range(request)
    return TraceQuery(
        resource_id=caller.owner if caller.owner is not None else asked,
        entity_type=entity_type,
        entity_id=entity_id,
        entity_name=params.get("entityName") or None,
        span_type=span_type,
        status=status,
        started_from=started_from,
        started_to=started_to,
        page=query_int(request, "page") or 0,
        per_page=query_int(request, "perPage", minimum=1, maximum=100) or 10,
        descending=direction == "DESC",
    )


async def _flushed(storage: Storage) -> Storage:
    """The storage, with the spans that ended so far saved (when a recorder was ever made: the
    recorder's module loads OpenTelemetry's SDK, which an app that does not trace never loads)."""
    recorder = sys.modules.get("agentstream.tracing._recorder")
    if recorder is not None:
        await recorder.flush_spans(storage)
    return storage


class _Routes:
    def __init__(self, context: ApiContext) -> None:
        self.context = context

    def storage(self) -> Storage:
        storage = self.context.mastra.storage
        if storage is None:
            raise ChatRequestError("this app has no storage: no traces are kept", status_code=404)
        return storage

    async def list_traces(self, request: Request, caller: Caller) -> Response:
        storage = await _flushed(self.storage())
        light = request.url.path.endswith("/light")
        query = _query(request, caller)
        if request.query_params.get("mode") == "delta":
            return await self._delta(storage, request, query, light)
        roots, total = await storage.list_traces(query)
        shape = light_span if light else trace_span
        end = (query.page + 1) * query.per_page
        return JSONResponse(
            {
                "spans": [shape(s) for s in roots],
                "pagination": {
                    "total": total,
                    "page": query.page,
                    "perPage": query.per_page,
                    "hasMore": end < total,
                },
                "deltaCursor": _cursor(roots[0].started_at if roots and query.descending else None),
            }
        )

    async def _delta(self, storage: Storage, request: Request, query: TraceQuery, light: bool) -> Response:
        after = request.query_params.get("after") or "0"
        since = None if after == "0" else _date(after, "after")
        limit = query_int(request, "limit", minimum=1, maximum=100) or 10
        import msgspec

        ask = msgspec.structs.replace(query, page=0, per_page=limit + 1, descending=False, started_from=since)
        roots, _ = await storage.list_traces(ask)
        roots = [r for r in roots if since is None or r.started_at > since]
        page, more = roots[:limit], len(roots) > limit
        shape = light_span if light else trace_span
        cursor = _cursor(page[-1].started_at) if page else after
        return JSONResponse(
            {
                "spans": [shape(s) for s in page],
                "delta": {"limit": limit, "hasMore": more},
                "deltaCursor": cursor,
            }
        )

    async def _trace(self, request: Request, caller: Caller) -> tuple[str, list[SpanRecord]]:
        trace_id = request.path_params["trace_id"]
        spans = await (await _flushed(self.storage())).get_trace(trace_id)
        roots = [s for s in spans if s.parent_span_id is None] or spans
        if not spans or (caller.owner is not None and roots[0].resource_id != caller.owner):
            raise ChatRequestError(f"Trace with ID '{trace_id[:120]}' not found", status_code=404)
        return trace_id, spans

    async def get_trace(self, request: Request, caller: Caller) -> Response:
        trace_id, spans = await self._trace(request, caller)
        if request.url.path.endswith("/light"):
            return JSONResponse({"traceId": trace_id, "spans": [light_span(s) for s in spans]})
        return JSONResponse({"traceId": trace_id, "spans": [trace_span(s) for s in spans]})

    async def get_span(self, request: Request, caller: Caller) -> Response:
        _, spans = await self._trace(request, caller)
        span_id = request.path_params["span_id"]
        found = next((s for s in spans if s.span_id == span_id), None)
        if found is None:
            raise ChatRequestError("Span not found", status_code=404)
        return JSONResponse({"span": span_json(found)})

    async def span_scores(self, request: Request, caller: Caller) -> Response:
        # Mastra's scorers score spans; this server runs no scorers: a span of the caller's has none
        _, spans = await self._trace(request, caller)
        if not any(s.span_id == request.path_params["span_id"] for s in spans):
            raise ChatRequestError("Span not found", status_code=404)
        return JSONResponse(_no_scores(request))


def _no_scores(request: Request) -> dict[str, Any]:
    page = query_int(request, "page") or 0
    per_page = query_int(request, "perPage", minimum=1, maximum=1000) or 10
    return {"scores": [], "pagination": {"total": 0, "page": page, "perPage": per_page, "hasMore": False}}


def _cursor(at: datetime | None) -> str:
    return "0" if at is None else at.astimezone(UTC).isoformat(timespec="microseconds")


def routes(context: ApiContext) -> list[BaseRoute]:
    """The observability routes for ``context``'s registry."""
    r = _Routes(context)
    q = TraceQueries(context, lambda: _flushed(r.storage()))
    table: list[tuple[str, Any, list[str]]] = [
        ("/observability/traces", r.list_traces, ["GET"]),
        ("/observability/traces/light", r.list_traces, ["GET"]),
        ("/observability/traces/query", q.query, ["POST"]),
        ("/observability/traces/query/fields", q.fields, ["POST"]),
        ("/observability/traces/query/values", q.values, ["POST"]),
        ("/observability/discovery/entity-names", q.entity_names, ["GET"]),
        ("/observability/discovery/environments", q.environments, ["GET"]),
        ("/datasets", q.datasets, ["GET"]),
        ("/observability/traces/{trace_id}", r.get_trace, ["GET"]),
        ("/observability/traces/{trace_id}/light", r.get_trace, ["GET"]),
        ("/observability/traces/{trace_id}/spans/{span_id}", r.get_span, ["GET"]),
        ("/observability/traces/{trace_id}/{span_id}/scores", r.span_scores, ["GET"]),
    ]
    return [
        flows_route(context, path, handler, methods, "observability request")
        for path, handler, methods in table
    ]
