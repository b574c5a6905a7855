"""The trace query routes Studio's traces page reads (``POST /observability/traces/query``, its
field and value discovery, and the entity and environment discovery of its filters).

What we answer of Mastra's trace query language: a time range, the predicates Studio's filters
send (``where``: `_trace_where`), one ``orderBy`` on ``startedAt`` or ``endedAt``, and a cursor
page (``page: {limit, after}``) of ended traces. Other predicates, thread grouping and delta mode
answer 501 ``TRACE_QUERY_UNSUPPORTED``, as Mastra's own stores without advanced queries do;
discovery finds no custom fields.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse, Response

from ..ai_sdk import ChatRequestError
from ..storage import TraceQuery
from ._flows_http import Caller, check_id, query_int, read_object
from ._observability_json import light_span, span_json
from ._trace_where import Predicate, Unsupported, compile_where, needs_spans

if TYPE_CHECKING:
    from starlette.requests import Request

    from ..storage import SpanRecord, Storage
    from ._context import ApiContext

__all__ = ["TraceQueries"]

_KEYS = frozenset({"timeRange", "where", "group", "orderBy", "page", "pagination", "mode", "after", "limit"})
_UNSUPPORTED = ("group", "pagination", "mode")
_SCAN = 1000


def _when(value: Any, field: str) -> datetime:
    if not isinstance(value, str):
        raise ChatRequestError(f"{field}: expected an ISO date", path=field)
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ChatRequestError(f"{field}: expected an ISO date, got {value[:40]!r}", path=field) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _row(span: SpanRecord) -> dict[str, Any]:
    light = light_span(span)
    data: dict[str, Any] = span.data if isinstance(span.data, dict) else {}
    return {
        "traceId": span.trace_id,
        "rootSpanId": span.span_id,
        "name": span.name,
        "entityId": span.entity_id,
        "parentSpanId": None,
        "createdAt": light["createdAt"],
        "metadata": None,
        "inputPreview": light.get("inputPreview"),
        "threadId": data.get("threadId"),
        "resourceId": span.resource_id,
        "startedAt": light["startedAt"],
        "endedAt": light["endedAt"],
        "entityName": span.entity_name,
        "entityType": span.entity_type,
        "environment": None,
        "status": light["status"],
    }


def _unsupported(message: str) -> Response:
    return JSONResponse({"code": "TRACE_QUERY_UNSUPPORTED", "message": message}, status_code=501)


async def _matches(storage: Storage, root: SpanRecord, where: Predicate, with_spans: bool) -> bool:
    """Whether the trace of ``root`` matches ``where`` (its spans read when a predicate asks)."""
    spans = [span_json(s) for s in await storage.get_trace(root.trace_id)] if with_spans else []
    return where(_row(root), lambda: spans)


class TraceQueries:
    """Studio's trace query calls over the stored root spans."""

    def __init__(self, context: ApiContext, storage: Any) -> None:
        self.context = context
        self.storage = storage

    async def query(self, request: Request, caller: Caller) -> Response:
        body = await read_object(self.context, request)
        unknown = sorted(set(body) - _KEYS)
        if unknown:
            raise ChatRequestError(f"unknown field {unknown[0]!r}", path=unknown[0])
        used = [k for k in _UNSUPPORTED if body.get(k) is not None]
        if used:
            return _unsupported(f"trace queries with {used[0]!r} are not supported by this server")
        try:
            where = compile_where(body["where"]) if body.get("where") is not None else None
            with_spans = needs_spans(body.get("where"))
        except Unsupported as exc:
            return _unsupported(str(exc))
        since, until = self._range(body.get("timeRange"))
        field, descending = self._order(body.get("orderBy"))
        limit, offset = self._page(body.get("page"))
        storage: Storage = await self.storage()
        query = TraceQuery(
            resource_id=caller.owner,
            started_from=since,
            started_to=until,
            page=0,
            per_page=_SCAN,
            descending=True,
        )
        roots, _ = await storage.list_traces(query)
        ended = [r for r in roots if r.ended_at is not None]
        if where is not None:
            ended = [r for r in ended if await _matches(storage, r, where, with_spans)]

        def key(span: SpanRecord) -> tuple[datetime, str]:
            at = span.ended_at if field == "endedAt" and span.ended_at is not None else span.started_at
            return at, span.trace_id

        ended.sort(key=key, reverse=descending)
        chosen = ended[offset : offset + limit]
        more = offset + limit < len(ended)
        return JSONResponse(
            {"traces": [_row(s) for s in chosen], "page": {"next": str(offset + limit) if more else None}}
        )

    @staticmethod
    def _range(value: Any) -> tuple[datetime | None, datetime | None]:
        if value is None:
            raise ChatRequestError("timeRange is required ({from, to})", path="timeRange")
        if not isinstance(value, dict):
            raise ChatRequestError("timeRange: expected an object {from, to}", path="timeRange")
        since = _when(value["from"], "timeRange.from") if value.get("from") is not None else None
        until = _when(value["to"], "timeRange.to") if value.get("to") is not None else None
        return since, until

    @staticmethod
    def _order(value: Any) -> tuple[str, bool]:
        if value is None:
            return "startedAt", True
        if not isinstance(value, list) or len(value) != 1 or not isinstance(value[0], dict):
            raise ChatRequestError("orderBy: expected one {field, direction}", path="orderBy")
        field, direction = value[0].get("field"), value[0].get("direction", "desc")
        if field not in ("startedAt", "endedAt"):
            raise ChatRequestError("orderBy[0].field: expected startedAt or endedAt", path="orderBy[0].field")
        if direction not in ("asc", "desc"):
            raise ChatRequestError("orderBy[0].direction: expected asc or desc", path="orderBy[0].direction")
        return str(field), direction == "desc"

    @staticmethod
    def _page(value: Any) -> tuple[int, int]:
        if value is None:
            return 100, 0
        if not isinstance(value, dict):
            raise ChatRequestError("page: expected an object {limit, after}", path="page")
        limit = value.get("limit", 100)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise ChatRequestError("page.limit: expected an integer from 1 to 1000", path="page.limit")
        after = value.get("after")
        if after is None:
            return limit, 0
        if not isinstance(after, str) or not after.isdigit() or len(after) > 9:
            raise ChatRequestError("page.after: expected a cursor from a previous page", path="page.after")
        return limit, int(after)

    async def fields(self, request: Request, caller: Caller) -> Response:
        await read_object(self.context, request)
        return JSONResponse({"canonicalFields": [], "observedFields": [], "observedFieldsTruncated": False})

    async def values(self, request: Request, caller: Caller) -> Response:
        await read_object(self.context, request)
        return JSONResponse({"values": [], "valuesTruncated": False})

    async def entity_names(self, request: Request, caller: Caller) -> Response:
        entity_type = check_id(request.query_params.get("entityType"), "entityType", required=False)
        storage: Storage = await self.storage()
        query = TraceQuery(resource_id=caller.owner, entity_type=entity_type, per_page=_SCAN)
        roots, _ = await storage.list_traces(query)
        names = sorted({r.entity_name for r in roots if r.entity_name})
        return JSONResponse({"names": names})

    async def environments(self, request: Request, caller: Caller) -> Response:
        return JSONResponse({"environments": []})

    async def datasets(self, request: Request, caller: Caller) -> Response:
        # the traces page offers to add a trace to a dataset (Mastra's evals): this server keeps none
        page = query_int(request, "page") or 0
        per_page = query_int(request, "perPage", minimum=1, maximum=1000) or 10
        return JSONResponse(
            {"datasets": [], "pagination": {"total": 0, "page": page, "perPage": per_page, "hasMore": False}}
        )
