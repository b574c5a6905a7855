"""The Mastra API's workflows routes (``packages/server/src/server/handlers/workflows.ts``), what
client-js's ``Workflow`` and ``Run`` resources and Studio's workflow pages call:

* ``GET /workflows`` (by registration key), ``GET /workflows/run-counts``,
  ``GET /workflows/:workflowId`` (steps, ``stepGraph``, schemas);
* ``GET /workflows/:workflowId/runs`` (paginated, filtered), ``GET`` / ``DELETE .../runs/:runId``;
* ``POST .../create-run``, ``.../stream``, ``.../start``, ``.../start-async``, ``.../resume``,
  ``.../resume-async``, ``.../resume-stream``, ``.../observe`` (``?runId=``), and
  ``POST .../runs/:runId/cancel``.

Streams are Mastra's workflow chunks, each followed by ``\\x1e``. Runs are the registry's
workflows' runs, saved in its storage (so runs listed here include those the AI SDK routes ran).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse, Response, StreamingResponse

from ..ai_sdk import ChatRequestError
from ..server import cancel_workflow_run
from ..storage import WorkflowRunQuery
from ._flows_http import Caller, check_id, flows_route, not_found, query_int, read_object
from ._workflow_info import workflow_info
from ._workflow_legs import Legs, visible
from ._workflow_live import LiveRuns, framed
from ._workflow_runs import RUN_FIELDS, run_item, run_result

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from starlette.requests import Request
    from starlette.routing import BaseRoute

    from ._context import ApiContext

__all__ = ["routes"]

_RUN_STATUSES = (
    "pending",
    "running",
    "success",
    "failed",
    "suspended",
    "canceled",
    "waiting",
    "tripwire",
    "paused",
)


def _stream(chunks: AsyncIterator[dict[str, Any]]) -> StreamingResponse:
    return StreamingResponse(framed(chunks), media_type="text/plain", headers={"cache-control": "no-cache"})


def _run_id(request: Request, *, required: bool = True) -> str | None:
    return check_id(request.query_params.get("runId"), "runId", required=required)


def _date(request: Request, name: str) -> Any:
    from datetime import datetime

    raw = request.query_params.get(name)
    if not raw:
        return None
    try:
        value = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise ChatRequestError(f"{name}: expected an ISO date, got {raw[:40]!r}", path=name) from None
    if value.tzinfo is None:
        raise ChatRequestError(f"{name}: expected a date with a time zone, got {raw[:40]!r}", path=name)
    return value


class _Routes:
    def __init__(self, context: ApiContext) -> None:
        self.context = context
        self.live = LiveRuns()
        self.legs = Legs(context, self.live)

    # ------------------------------------------------------------------------- descriptions

    async def list_workflows(self, request: Request, caller: Caller) -> Response:
        partial = request.query_params.get("partial") == "true"
        workflows = self.context.mastra.get_workflows()
        return JSONResponse({key: workflow_info(w, partial=partial) for key, w in workflows.items()})

    async def get_workflow(self, request: Request, caller: Caller) -> Response:
        return JSONResponse(workflow_info(self.legs.workflow(request.path_params["workflow_id"])))

    async def schedules(self, request: Request, caller: Caller) -> Response:
        # Mastra's scheduled workflow runs (cron triggers): this server schedules none
        check_id(request.query_params.get("workflowId"), "workflowId", required=False)
        return JSONResponse({"schedules": []})

    async def run_counts(self, request: Request, caller: Caller) -> Response:
        counts: dict[str, dict[str, int]] = {}
        for key, workflow in self.context.mastra.get_workflows().items():
            entry = counts[key] = {"running": 0, "suspended": 0}
            for status in ("running", "suspended"):
                query = WorkflowRunQuery(workflow_name=workflow.id, status=status, resource_id=caller.owner)
                entry[status] = (await workflow.storage.list_workflow_runs(query))[1]
        return JSONResponse(counts)

    # ------------------------------------------------------------------------- stored runs

    async def list_runs(self, request: Request, caller: Caller) -> Response:
        workflow = self.legs.workflow(request.path_params["workflow_id"])
        per_page = query_int(request, "perPage", minimum=1, maximum=1000)
        limit = request.query_params.get("limit")
        if per_page is None and limit not in (None, "false"):
            per_page = query_int(request, "limit", minimum=1, maximum=1000)
        page = query_int(request, "page")
        offset = query_int(request, "offset")
        if page is None and offset is not None and per_page:
            page = offset // per_page
        status = request.query_params.get("status") or None
        if status is not None and status not in _RUN_STATUSES:
            raise ChatRequestError(
                f"status: expected one of {list(_RUN_STATUSES)}, got {status[:40]!r}", path="status"
            )
        asked = check_id(request.query_params.get("resourceId"), "resourceId", required=False)
        if caller.owner is not None and asked is not None and asked != caller.owner:
            raise ChatRequestError("resourceId is not yours", status_code=403, path="resourceId")
        query = WorkflowRunQuery(
            workflow_name=workflow.id,
            resource_id=caller.owner if caller.owner is not None else asked,
            status=status,
            from_date=_date(request, "fromDate"),
            to_date=_date(request, "toDate"),
            page=page if per_page is not None else None,
            per_page=per_page,
        )
        runs, total = await workflow.storage.list_workflow_runs(query)
        return JSONResponse({"runs": [run_item(r) for r in runs], "total": total})

    async def get_run(self, request: Request, caller: Caller) -> Response:
        workflow = self.legs.workflow(request.path_params["workflow_id"])
        run_id = request.path_params["run_id"]
        fields = None
        if raw := request.query_params.get("fields"):
            fields = tuple(f.strip() for f in raw.split(",") if f.strip())
            bad = [f for f in fields if f not in RUN_FIELDS]
            if bad:
                raise ChatRequestError(
                    f"fields: {bad[0][:40]!r} is not a field; available: {', '.join(RUN_FIELDS)}",
                    path="fields",
                )
        await self.legs.stored(workflow, run_id, caller)
        await workflow.create_run(run_id)  # loading marks a run whose process died as failed
        record = await self.legs.stored(workflow, run_id, caller)
        return JSONResponse(run_result(record, fields))

    async def run_by_id(self, request: Request, caller: Caller) -> Response:
        if request.method == "DELETE":
            return await self.delete_run(request, caller)
        return await self.get_run(request, caller)

    async def delete_run(self, request: Request, caller: Caller) -> Response:
        workflow = self.legs.workflow(request.path_params["workflow_id"])
        run_id = request.path_params["run_id"]
        await self.legs.stored(workflow, run_id, caller)
        if self.live.get(workflow.id, run_id) is not None:
            raise ChatRequestError("the run is streaming; cancel it first", status_code=409)
        await workflow.storage.delete_workflow_snapshot(workflow.id, run_id)
        return JSONResponse({"message": "Workflow run deleted"})

    # ------------------------------------------------------------------------- running

    async def create_run(self, request: Request, caller: Caller) -> Response:
        workflow = self.legs.workflow(request.path_params["workflow_id"])
        body = await read_object(self.context, request)
        run_id = await self.legs.create(workflow, _run_id(request, required=False), caller, body)
        return JSONResponse({"runId": run_id})

    async def stream(self, request: Request, caller: Caller) -> Response:
        workflow = self.legs.workflow(request.path_params["workflow_id"])
        run_id = _run_id(request)
        body = await read_object(self.context, request)
        _, leg = await self.legs.start(workflow, run_id, caller, body, must_exist=False)
        return _stream(leg.chunks())

    async def start(self, request: Request, caller: Caller) -> Response:
        workflow = self.legs.workflow(request.path_params["workflow_id"])
        run_id = _run_id(request)
        body = await read_object(self.context, request)
        await self.legs.start(workflow, run_id, caller, body, must_exist=True)
        return JSONResponse({"message": "Workflow run started"})

    async def start_async(self, request: Request, caller: Caller) -> Response:
        workflow = self.legs.workflow(request.path_params["workflow_id"])
        run_id = _run_id(request, required=False)
        body = await read_object(self.context, request)
        _, leg = await self.legs.start(workflow, run_id, caller, body, must_exist=False)
        return JSONResponse(await leg.result())

    async def resume_stream(self, request: Request, caller: Caller) -> Response:
        workflow = self.legs.workflow(request.path_params["workflow_id"])
        run_id = _run_id(request)
        assert run_id is not None
        body = await read_object(self.context, request)
        _, leg = await self.legs.resume(workflow, run_id, caller, body)
        return _stream(leg.chunks())

    async def resume(self, request: Request, caller: Caller) -> Response:
        workflow = self.legs.workflow(request.path_params["workflow_id"])
        run_id = _run_id(request)
        assert run_id is not None
        await self.legs.resume(workflow, run_id, caller, await read_object(self.context, request))
        return JSONResponse({"message": "Workflow run resumed"})

    async def resume_async(self, request: Request, caller: Caller) -> Response:
        workflow = self.legs.workflow(request.path_params["workflow_id"])
        run_id = _run_id(request)
        assert run_id is not None
        _, leg = await self.legs.resume(workflow, run_id, caller, await read_object(self.context, request))
        return JSONResponse(await leg.result())

    async def observe(self, request: Request, caller: Caller) -> Response:
        workflow = self.legs.workflow(request.path_params["workflow_id"])
        run_id = _run_id(request)
        assert run_id is not None
        offset = query_int(request, "offset") or 0
        live = self.live.get(workflow.id, run_id)
        if live is not None and (caller.owner is None or live.run.resource_id == caller.owner):
            return _stream(live.chunks(offset))
        record = await self.legs.stored(workflow, run_id, caller)
        stored = self.legs.stored_legs
        active = await stored.active(workflow.id, run_id) if stored is not None else None
        if stored is not None and active is not None and stored.owns(active, record.resource_id):
            return _stream(stored.follow(active.stream_id, run_id, offset))

        async def nothing() -> AsyncIterator[dict[str, Any]]:
            return
            yield  # an async generator that ends at once: the run streams nothing now

        return _stream(nothing())

    async def cancel(self, request: Request, caller: Caller) -> Response:
        workflow = self.legs.workflow(request.path_params["workflow_id"])
        run_id = request.path_params["run_id"]
        live = self.live.get(workflow.id, run_id)
        if live is not None and (caller.owner is None or live.run.resource_id == caller.owner):
            await live.run.cancel()
            return JSONResponse({"message": "Workflow run cancelled"})
        record = await workflow.storage.find_workflow_run(workflow.id, run_id)
        if not visible(record, caller):
            raise not_found("Workflow run")
        assert record is not None
        stored = self.legs.stored_legs
        active = await stored.active(workflow.id, run_id) if stored is not None else None
        if stored is not None and active is not None:
            if stored.runner is None:  # recorded by another server's process, running there
                raise ChatRequestError(
                    f"run {run_id[:120]!r} is running in another server process; cancel it through that server",
                    status_code=409,
                )
            await stored.cancel_on_worker(workflow, run_id, active.stream_id, record.resource_id)
            return JSONResponse({"message": "Workflow run cancelled"})
        key = request.path_params["workflow_id"]
        context = self.context
        await cancel_workflow_run(
            context.mastra, key, run_id, record.resource_id, context.jobs, context.workflow_runner
        )
        return JSONResponse({"message": "Workflow run cancelled"})


def routes(context: ApiContext) -> list[BaseRoute]:
    """The workflows routes for ``context``'s registry."""
    r = _Routes(context)
    table: list[tuple[str, Any, list[str]]] = [
        ("/workflows", r.list_workflows, ["GET"]),
        ("/schedules", r.schedules, ["GET"]),
        ("/workflows/run-counts", r.run_counts, ["GET"]),
        ("/workflows/{workflow_id}", r.get_workflow, ["GET"]),
        ("/workflows/{workflow_id}/runs", r.list_runs, ["GET"]),
        ("/workflows/{workflow_id}/runs/{run_id}", r.run_by_id, ["GET", "DELETE"]),
        ("/workflows/{workflow_id}/runs/{run_id}/cancel", r.cancel, ["POST"]),
        ("/workflows/{workflow_id}/create-run", r.create_run, ["POST"]),
        ("/workflows/{workflow_id}/stream", r.stream, ["POST"]),
        ("/workflows/{workflow_id}/start", r.start, ["POST"]),
        ("/workflows/{workflow_id}/start-async", r.start_async, ["POST"]),
        ("/workflows/{workflow_id}/resume", r.resume, ["POST"]),
        ("/workflows/{workflow_id}/resume-async", r.resume_async, ["POST"]),
        ("/workflows/{workflow_id}/resume-stream", r.resume_stream, ["POST"]),
        ("/workflows/{workflow_id}/observe", r.observe, ["POST"]),
    ]
    return [
        flows_route(context, path, handler, methods, "workflow request") for path, handler, methods in table
    ]
