"""The memory API over HTTP for UIs, in the shapes Mastra's client reads:

* ``GET /api/memory/threads?resourceId=&agentId=`` → ``{threads, total, page, perPage, hasMore}``
* ``GET /api/memory/threads/{threadId}?agentId=`` → the thread
* ``GET /api/memory/threads/{threadId}/messages?agentId=&page=&perPage=`` → ``{messages, total,
  page, perPage, hasMore}`` (stored ``MastraDBMessage`` records)
* ``DELETE /api/memory/threads/{threadId}?agentId=`` → ``{result: "Thread deleted"}``

Behind the app's `RequestGuard`. With an auth hook, a principal acts for exactly one resource
(``resource_for(principal)``, default its `owner_key`): another ``resourceId`` is refused (403)
and another resource's thread answers 404, as if it did not exist. Without an auth hook (a local,
single-user app) ``resourceId`` is taken as given.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..storage import MessageRecord, ThreadRecord
from ._owner import owner_key

if TYPE_CHECKING:
    from .._mastra import Mastra
    from ..memory import Memory

__all__ = ["memory_routes", "message_json", "thread_json"]


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def thread_json(thread: ThreadRecord) -> dict[str, Any]:
    """A thread as Mastra's ``StorageThreadType`` on the wire."""
    return {
        "id": thread.id,
        "resourceId": thread.resource_id,
        "title": thread.title if thread.title is not None else "",
        "metadata": thread.metadata,
        "createdAt": _iso(thread.created_at),
        "updatedAt": _iso(thread.updated_at),
    }


def message_json(record: MessageRecord) -> dict[str, Any]:
    """A stored message as Mastra's ``MastraDBMessage`` on the wire."""
    out: dict[str, Any] = {
        "id": record.id,
        "role": record.role,
        "content": record.content,
        "createdAt": _iso(record.created_at),
        "threadId": record.thread_id,
    }
    if record.resource_id is not None:
        out["resourceId"] = record.resource_id
    return out


def _default_resource(principal: object) -> str:
    """The resource a principal acts for: its owner key (the one owner rule of every route)."""
    key = owner_key(principal)
    if key is None:
        raise TypeError("the memory API needs an auth hook whose principal has an owner key")
    return key


def memory_routes(
    mastra: Mastra, guard: Any, *, resource_for: Callable[[object], str] = _default_resource
) -> list[Any]:
    """The Starlette routes of the memory API for ``mastra``'s agents (their memory, or the
    Mastra's storage)."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from ..ai_sdk import ChatRequestError
    from ._errors import error_response

    class _NotFound(ChatRequestError):
        def __init__(self, what: str) -> None:
            super().__init__(f"{what} not found", status_code=404)

    def memory_of(request: Request) -> Memory:
        from ..memory import Memory

        agent_id = request.query_params.get("agentId")
        if agent_id:
            agents = mastra.get_agents()
            if agent_id not in agents:
                raise _NotFound(f"agent {agent_id!r}")
            memory: Memory = agents[agent_id]._memory_for_run()
            return memory
        if mastra.storage is None:
            raise ChatRequestError("this app has no storage: no memory to read", status_code=404)
        return Memory(mastra.storage)

    async def caller(request: Request) -> str | None:
        """The resource the caller acts for (``None``: no auth hook, any resource)."""
        principal = await guard.admit(request)
        if guard.auth is None:
            return None
        return resource_for(principal)

    async def own_thread(request: Request, memory: Memory, acting: str | None) -> ThreadRecord:
        thread = await memory.get_thread(request.path_params["thread_id"])
        if thread is None or (acting is not None and thread.resource_id != acting):
            raise _NotFound("thread")  # another resource's thread does not exist for this caller
        return thread

    async def list_threads(request: Request) -> JSONResponse:
        try:
            acting = await caller(request)
            asked = request.query_params.get("resourceId") or request.query_params.get("resourceid")
            if acting is not None and asked and asked != acting:
                raise ChatRequestError("resourceId is not yours", status_code=403)
            resource = asked or acting
            if not resource:
                raise ChatRequestError("resourceId is required", status_code=400)
            threads = await memory_of(request).list_threads(resource_id=resource)
        except ChatRequestError as exc:
            return error_response(exc)
        return JSONResponse(
            {
                "threads": [thread_json(t) for t in threads],
                "total": len(threads),
                "page": 0,
                "perPage": False,
                "hasMore": False,
            }
        )

    async def get_thread(request: Request) -> JSONResponse:
        try:
            memory = memory_of(request)
            thread = await own_thread(request, memory, await caller(request))
        except ChatRequestError as exc:
            return error_response(exc)
        return JSONResponse(thread_json(thread))

    async def delete_thread(request: Request) -> JSONResponse:
        try:
            memory = memory_of(request)
            thread = await own_thread(request, memory, await caller(request))
            await memory.delete_thread(thread.id)
        except ChatRequestError as exc:
            return error_response(exc)
        return JSONResponse({"result": "Thread deleted"})

    def _int(request: Request, name: str) -> int | None:
        raw = request.query_params.get(name)
        if raw is None:
            return None
        if not raw.isdigit():
            raise ChatRequestError(f"{name} must be a non-negative integer, got {raw!r}", status_code=400)
        return int(raw)

    async def list_messages(request: Request) -> JSONResponse:
        try:
            memory = memory_of(request)
            thread = await own_thread(request, memory, await caller(request))
            page, per_page = _int(request, "page"), _int(request, "perPage")
            if per_page is not None and page is None:
                page = 0
            found = await memory.list_messages(thread.id, page=page, per_page=per_page)
        except ChatRequestError as exc:
            return error_response(exc)
        return JSONResponse(
            {
                "messages": [message_json(m) for m in found.messages],
                "total": found.total,
                "page": found.page if found.page is not None else 0,
                "perPage": found.per_page if found.per_page is not None else False,
                "hasMore": found.has_more,
            }
        )

    return [
        Route("/api/memory/threads", list_threads, methods=["GET"]),
        Route("/api/memory/threads/{thread_id}", get_thread, methods=["GET"]),
        Route("/api/memory/threads/{thread_id}", delete_thread, methods=["DELETE"]),
        Route("/api/memory/threads/{thread_id}/messages", list_messages, methods=["GET"]),
    ]
