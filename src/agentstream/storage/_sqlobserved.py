"""`SQLObserved`: workflow run listings and tracing spans in SQL, written once for SQLite and
PostgreSQL (the statements only differ in the codec's placeholders and types)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from ._records import SpanRecord, TraceQuery, WorkflowRunQuery, WorkflowSnapshotRecord
from ._sql import Codec, Tables

__all__ = ["SQLObserved"]

Row = Sequence[Any]

_RUN_COLUMNS = "workflow_name, run_id, resource_id, snapshot, created_at, updated_at"
_SPAN_COLUMNS = (
    "trace_id",
    "span_id",
    "parent_span_id",
    "name",
    "span_type",
    "started_at",
    "ended_at",
    "resource_id",
    "entity_type",
    "entity_id",
    "entity_name",
    "error",
    "data",
)
_STATUS_SQL = {
    "error": "error IS NOT NULL",
    "running": "error IS NULL AND ended_at IS NULL",
    "success": "error IS NULL AND ended_at IS NOT NULL",
}


class SQLObserved:
    """Mixed into `SQLStore`: the primitives of `ObservedStore` over its statement runners."""

    _codec: Codec
    _t: Tables
    _snapshot_status: str

    @abstractmethod
    async def _fetchone(self, op: str, sql: str, params: Sequence[Any] = ()) -> Row | None: ...
    @abstractmethod
    async def _fetchall(self, op: str, sql: str, params: Sequence[Any] = ()) -> list[Row]: ...
    @abstractmethod
    async def _rowcount(self, op: str, sql: str, params: Sequence[Any] = ()) -> int: ...

    def _run_from_row(self, row: Row) -> WorkflowSnapshotRecord:
        c = self._codec
        return WorkflowSnapshotRecord(
            workflow_name=row[0],
            run_id=row[1],
            resource_id=row[2],
            snapshot=c.dec_json(row[3]),
            created_at=c.dec_dt(row[4]),
            updated_at=c.dec_dt(row[5]),
        )

    async def _list_runs(self, query: WorkflowRunQuery) -> tuple[list[WorkflowSnapshotRecord], int]:
        c, ph = self._codec, self._codec.ph
        where, params = [f"workflow_name = {ph}"], [query.workflow_name]
        for sql, value in (
            (f"resource_id = {ph}", query.resource_id),
            (f"{self._snapshot_status} = {ph}", query.status),
            (f"created_at >= {ph}", c.enc_opt_dt(query.from_date)),
            (f"created_at <= {ph}", c.enc_opt_dt(query.to_date)),
        ):
            if value is not None:
                where.append(sql)
                params.append(value)
        clause = " WHERE " + " AND ".join(where)
        total = await self._fetchone(
            "list_workflow_runs", f"SELECT count(*) FROM {self._t.snapshots}{clause}", params
        )
        sql = f"SELECT {_RUN_COLUMNS} FROM {self._t.snapshots}{clause} ORDER BY created_at DESC, run_id DESC"
        extra: list[Any] = []
        if query.per_page is not None:
            sql += f" LIMIT {ph} OFFSET {ph}"
            extra = [query.per_page, (query.page or 0) * query.per_page]
        rows = await self._fetchall("list_workflow_runs", sql, [*params, *extra])
        return [self._run_from_row(r) for r in rows], int(total[0]) if total else 0

    async def _find_run(self, workflow_name: str, run_id: str) -> WorkflowSnapshotRecord | None:
        ph = self._codec.ph
        row = await self._fetchone(
            "find_workflow_run",
            f"SELECT {_RUN_COLUMNS} FROM {self._t.snapshots} WHERE workflow_name = {ph} AND run_id = {ph}",
            (workflow_name, run_id),
        )
        return None if row is None else self._run_from_row(row)

    async def _save_spans(self, spans: list[SpanRecord]) -> None:
        c = self._codec
        updates = ", ".join(f"{col} = excluded.{col}" for col in _SPAN_COLUMNS[2:])
        sql = (
            f"INSERT INTO {self._t.spans} ({', '.join(_SPAN_COLUMNS)}) VALUES "
            f"({c.placeholders(len(_SPAN_COLUMNS))}) ON CONFLICT (trace_id, span_id) DO UPDATE SET {updates}"
        )
        for s in spans:
            params = (
                s.trace_id,
                s.span_id,
                s.parent_span_id,
                s.name,
                s.span_type,
                c.enc_dt(s.started_at),
                c.enc_opt_dt(s.ended_at),
                s.resource_id,
                s.entity_type,
                s.entity_id,
                s.entity_name,
                c.enc_opt_json(s.error),
                c.enc_json(s.data),
            )
            await self._rowcount("save_spans", sql, params)

    def _span_from_row(self, row: Row) -> SpanRecord:
        c = self._codec
        return SpanRecord(
            trace_id=row[0],
            span_id=row[1],
            parent_span_id=row[2],
            name=row[3],
            span_type=row[4],
            started_at=c.dec_dt(row[5]),
            ended_at=c.dec_opt_dt(row[6]),
            resource_id=row[7],
            entity_type=row[8],
            entity_id=row[9],
            entity_name=row[10],
            error=c.dec_opt_json(row[11]),
            data=c.dec_json(row[12]),
        )

    async def _list_traces(self, query: TraceQuery) -> tuple[list[SpanRecord], int]:
        c, ph = self._codec, self._codec.ph
        where, params = ["parent_span_id IS NULL"], []
        for col in ("resource_id", "entity_type", "entity_id", "entity_name", "span_type"):
            value = getattr(query, col)
            if value is not None:
                where.append(f"{col} = {ph}")
                params.append(value)
        if query.status is not None:
            where.append(_STATUS_SQL[query.status])
        for sql, value in (
            (f"started_at >= {ph}", query.started_from),
            (f"started_at <= {ph}", query.started_to),
        ):
            if value is not None:
                where.append(sql)
                params.append(c.enc_dt(value))
        clause = " WHERE " + " AND ".join(where)
        total = await self._fetchone("list_traces", f"SELECT count(*) FROM {self._t.spans}{clause}", params)
        order = "DESC" if query.descending else "ASC"
        rows = await self._fetchall(
            "list_traces",
            f"SELECT {', '.join(_SPAN_COLUMNS)} FROM {self._t.spans}{clause} "
            f"ORDER BY started_at {order}, trace_id {order} LIMIT {ph} OFFSET {ph}",
            [*params, query.per_page, query.page * query.per_page],
        )
        return [self._span_from_row(r) for r in rows], int(total[0]) if total else 0

    async def _trace(self, trace_id: str) -> list[SpanRecord]:
        ph = self._codec.ph
        rows = await self._fetchall(
            "get_trace",
            f"SELECT {', '.join(_SPAN_COLUMNS)} FROM {self._t.spans} WHERE trace_id = {ph} "
            "ORDER BY started_at, span_id",
            (trace_id,),
        )
        return [self._span_from_row(r) for r in rows]
