"""The Mastra API's memory routes (``packages/server/src/server/handlers/memory.ts``), what
client-js's memory methods and ``MemoryThread`` and Studio's thread views call:

* ``GET /memory/status``, ``GET /memory/config`` (``?agentId=``);
* ``GET /memory/threads`` (by ``resourceId`` and/or ``agentId``; paged and ordered),
  ``POST /memory/threads`` (create), ``GET`` / ``PATCH`` / ``DELETE /memory/threads/:threadId``;
* ``GET /memory/threads/:threadId/messages`` (paged), ``POST /memory/save-messages``,
  ``POST /memory/messages/delete``;
* ``GET`` / ``POST /memory/threads/:threadId/working-memory``.

Threads and messages are read through ``agentstream.memory.Memory`` in the shapes of
``server/_memory_routes.py`` (``thread_json`` / ``message_json``); who may touch which thread is
`MemoryAccess`'s rule.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse, Response

from ..ai_sdk import ChatRequestError
from ..storage import MessageRecord
from ._flows_http import Caller, check_id, flows_route, not_found, query_int, read_object
from ._memory_access import MemoryAccess, db_message, thread_out

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.routing import BaseRoute

    from ..memory import Memory
    from ..storage import ThreadRecord
    from ._context import ApiContext

__all__ = ["routes"]

_ROLES = ("user", "assistant", "system", "tool")
_MAX_MESSAGES = 1000


def _text(value: Any, field: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ChatRequestError(f"{field}: expected a string", path=field)
    return value


def _metadata(value: Any, field: str = "metadata") -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ChatRequestError(f"{field}: expected an object", path=field)
    return value


def _page(items: list[Any], request: Request, default_per_page: int) -> tuple[list[Any], dict[str, Any]]:
    page = query_int(request, "page") or 0
    raw = request.query_params.get("perPage")
    per_page: int | bool = (
        False if raw == "false" else query_int(request, "perPage", minimum=1) or default_per_page
    )
    if per_page is False:
        return items, {"total": len(items), "page": 0, "perPage": False, "hasMore": False}
    assert isinstance(per_page, int)
    start = page * per_page
    chosen = items[start : start + per_page]
    return chosen, {
        "total": len(items),
        "page": page,
        "perPage": per_page,
        "hasMore": start + per_page < len(items),
    }


def _order(threads: list[ThreadRecord], request: Request) -> list[ThreadRecord]:
    field = request.query_params.get("orderBy[field]", "createdAt")
    direction = request.query_params.get("orderBy[direction]", "DESC")
    if field not in ("createdAt", "updatedAt"):
        raise ChatRequestError("orderBy[field]: expected createdAt or updatedAt", path="orderBy.field")
    if direction not in ("ASC", "DESC"):
        raise ChatRequestError("orderBy[direction]: expected ASC or DESC", path="orderBy.direction")
    key = "created_at" if field == "createdAt" else "updated_at"
    return sorted(threads, key=lambda t: (getattr(t, key), t.id), reverse=direction == "DESC")


def _message(raw: Any, index: int, caller: Caller, access: MemoryAccess) -> MessageRecord:
    """One message of a save-messages body as a stored record (400 naming the field)."""
    where = f"messages[{index}]"
    if not isinstance(raw, dict):
        raise ChatRequestError(f"{where}: expected a message object", path=where)
    thread_id = check_id(_text(raw.get("threadId"), f"{where}.threadId"), f"{where}.threadId")
    resource = raw.get("resourceId")
    if resource is None:
        raise ChatRequestError(f"{where}.resourceId is required", path=f"{where}.resourceId")
    resource_id = access.resource(caller, resource, f"{where}.resourceId")
    role = raw.get("role")
    if role not in _ROLES:
        raise ChatRequestError(f"{where}.role: expected one of {list(_ROLES)}", path=f"{where}.role")
    content = raw.get("content")
    if isinstance(content, str):
        content = {"format": 2, "parts": [{"type": "text", "text": content}], "content": content}
    if (
        not isinstance(content, dict)
        or content.get("format") != 2
        or not isinstance(content.get("parts"), list)
    ):
        raise ChatRequestError(
            f"{where}.content: expected a string or {{format: 2, parts: [...]}}", path=f"{where}.content"
        )
    created = raw.get("createdAt")
    try:
        at = datetime.fromisoformat(created.replace("Z", "+00:00")) if isinstance(created, str) else None
    except ValueError:
        raise ChatRequestError(
            f"{where}.createdAt: expected an ISO date", path=f"{where}.createdAt"
        ) from None
    if at is not None and at.tzinfo is None:
        raise ChatRequestError(f"{where}.createdAt: expected a time zone", path=f"{where}.createdAt")
    message_id = check_id(_text(raw.get("id"), f"{where}.id"), f"{where}.id", required=False) or str(
        uuid.uuid4()
    )
    options: dict[str, Any] = {"created_at": at} if at is not None else {}
    assert thread_id is not None
    return MessageRecord(
        id=message_id,
        thread_id=thread_id,
        role=role,
        content=content,
        resource_id=resource_id,
        type=str(raw.get("type") or "v2"),
        **options,
    )


class _Routes:
    def __init__(self, context: ApiContext) -> None:
        self.context = context
        self.access = MemoryAccess(context)

    async def status(self, request: Request, caller: Caller) -> Response:
        check_id(request.query_params.get("agentId"), "agentId")
        memory = self.access.agent_memory(request)
        return JSONResponse(
            {"result": True, "memoryType": "local"} if memory is not None else {"result": False}
        )

    async def config(self, request: Request, caller: Caller) -> Response:
        check_id(request.query_params.get("agentId"), "agentId")
        config = self.access.memory(request).thread_config()
        config["observationalMemory"] = {"enabled": False}
        return JSONResponse({"config": config})

    async def threads(self, request: Request, caller: Caller) -> Response:
        if request.method == "POST":
            return await self.create_thread(request, caller)
        return await self.list_threads(request, caller)

    async def list_threads(self, request: Request, caller: Caller) -> Response:
        memory = self.access.memory(request)
        resource = self.access.resource(caller, request.query_params.get("resourceId"))
        if resource is not None:
            threads = await memory.list_threads(resource_id=resource)
        else:
            assert memory.storage is not None
            threads = await memory.storage.list_threads(resource_id=None)
        metadata = request.query_params.get("metadata")
        if metadata:
            import json

            try:
                wanted = json.loads(metadata)
            except ValueError:
                raise ChatRequestError("metadata: expected a JSON object", path="metadata") from None
            wanted = _metadata(wanted)
            assert wanted is not None
            threads = [t for t in threads if all((t.metadata or {}).get(k) == v for k, v in wanted.items())]
        chosen, paging = _page(_order(threads, request), request, 100)
        return JSONResponse({"threads": [thread_out(t) for t in chosen], **paging})

    async def create_thread(self, request: Request, caller: Caller) -> Response:
        memory = self.access.memory(request)
        body = await read_object(self.context, request)
        if body.get("resourceId") is None and caller.owner is None:
            raise ChatRequestError("resourceId is required", path="resourceId")
        resource = self.access.resource(caller, body.get("resourceId"))
        assert resource is not None
        thread_id = check_id(_text(body.get("threadId"), "threadId"), "threadId", required=False)
        if thread_id is not None and await memory.get_thread(thread_id) is not None:
            raise ChatRequestError(
                f"thread {thread_id[:120]!r} exists already", status_code=409, path="threadId"
            )
        thread = await memory.create_thread(
            resource_id=resource,
            thread_id=thread_id,
            title=_text(body.get("title"), "title"),
            metadata=_metadata(body.get("metadata")),
        )
        return JSONResponse(thread_out(thread))

    async def thread(self, request: Request, caller: Caller) -> Response:
        memory = self.access.memory(request)
        thread = await self.access.own_thread(memory, request.path_params["thread_id"], caller)
        if request.method == "GET":
            return JSONResponse(thread_out(thread))
        if request.method == "DELETE":
            await memory.delete_thread(thread.id)
            return JSONResponse({"result": "Thread deleted"})
        body = await read_object(self.context, request)
        if body.get("resourceId") not in (None, thread.resource_id):
            raise ChatRequestError("resourceId: a thread cannot move to another resource", path="resourceId")
        updated = await memory.update_thread(
            thread.id, title=_text(body.get("title"), "title"), metadata=_metadata(body.get("metadata"))
        )
        return JSONResponse(thread_out(updated))

    async def messages(self, request: Request, caller: Caller) -> Response:
        memory = self.access.memory(request)
        thread = await self.access.own_thread(memory, request.path_params["thread_id"], caller)
        found = await memory.list_messages(thread.id)
        chosen, paging = _page(found.messages, request, 40)
        return JSONResponse({"messages": [db_message(m) for m in chosen], **paging, "uiMessages": None})

    async def save_messages(self, request: Request, caller: Caller) -> Response:
        memory = self.access.memory(request)
        body = await read_object(self.context, request)
        raw = body.get("messages")
        if not isinstance(raw, list):
            raise ChatRequestError("messages: expected an array of messages", path="messages")
        if len(raw) > _MAX_MESSAGES:
            raise ChatRequestError(
                f"messages: at most {_MAX_MESSAGES} per request", status_code=413, path="messages"
            )
        records = [_message(m, i, caller, self.access) for i, m in enumerate(raw)]
        owners: dict[str, str | None] = {}
        for index, record in enumerate(records):
            if owners.setdefault(record.thread_id, record.resource_id) != record.resource_id:
                raise ChatRequestError(
                    "All messages for the same threadId must use the same resourceId.",
                    path=f"messages[{index}].resourceId",
                )
        await self._threads_for(memory, owners)
        await memory.save(records)
        return JSONResponse({"messages": [db_message(r) for r in records]})

    async def _threads_for(self, memory: Memory, owners: dict[str, str | None]) -> None:
        """Each thread the messages go to: the resource's (another's is 404), made when new."""
        for thread_id, resource in owners.items():
            thread = await memory.get_thread(thread_id)
            if thread is None:
                assert resource is not None
                await memory.create_thread(resource_id=resource, thread_id=thread_id)
            elif thread.resource_id != resource:
                raise not_found("Thread")

    async def delete_messages(self, request: Request, caller: Caller) -> Response:
        memory = self.access.memory(request)
        body = await read_object(self.context, request)
        ids = body.get("messageIds")
        if isinstance(ids, (str, dict)):
            ids = [ids]
        if not isinstance(ids, list) or not ids:
            raise ChatRequestError("messageIds: expected a non-empty array of ids", path="messageIds")
        wanted: list[str] = []
        for item in ids:
            value = item.get("id") if isinstance(item, dict) else item
            if not isinstance(value, str) or not value or len(wanted) >= _MAX_MESSAGES:
                raise ChatRequestError("messageIds: expected message ids (strings)", path="messageIds")
            wanted.append(value)
        assert memory.storage is not None
        mine = [m for m in wanted if await self._own_message(memory, m, caller)]
        count = await memory.delete_messages(mine) if mine else 0
        noun = "message" if count == 1 else "messages"
        return JSONResponse({"success": True, "message": f"{count} {noun} deleted successfully"})

    @staticmethod
    async def _own_message(memory: Memory, message_id: str, caller: Caller) -> bool:
        if caller.owner is None:
            return True
        assert memory.storage is not None
        for thread in await memory.storage.list_threads(resource_id=caller.owner):
            page = await memory.list_messages(thread.id)
            if any(m.id == message_id for m in page.messages):
                return True
        return False

    async def working_memory(self, request: Request, caller: Caller) -> Response:
        memory = self.access.memory(request)
        thread_id = request.path_params["thread_id"]
        if request.method == "POST":
            return await self._update_working_memory(request, caller, memory, thread_id)
        resource = self.access.resource(caller, request.query_params.get("resourceId"))
        thread = await memory.get_thread(thread_id)
        if thread is not None and caller.owner is not None and thread.resource_id != caller.owner:
            raise not_found("Thread")
        config = memory.working_memory
        source = "resource" if config.scope != "thread" and resource is not None else "thread"
        text = (
            await memory.get_working_memory(thread_id=thread_id, resource_id=resource)
            if config.enabled
            else None
        )
        return JSONResponse(
            {
                "workingMemory": text,
                "source": source,
                "workingMemoryTemplate": memory.get_working_memory_template(),
                "threadExists": thread is not None,
            }
        )

    async def _update_working_memory(
        self, request: Request, caller: Caller, memory: Memory, thread_id: str
    ) -> Response:
        body = await read_object(self.context, request)
        text = body.get("workingMemory")
        if not isinstance(text, str):
            raise ChatRequestError("workingMemory: expected a string", path="workingMemory")
        thread = await self.access.own_thread(memory, thread_id, caller)
        resource = self.access.resource(caller, body.get("resourceId")) or thread.resource_id
        if resource != thread.resource_id:
            raise ChatRequestError(
                "resourceId: not the thread's resource", status_code=403, path="resourceId"
            )
        if not memory.working_memory.enabled:
            raise ChatRequestError("Working memory is not enabled for this memory instance")
        await memory.update_working_memory(text, thread_id=thread.id, resource_id=resource)
        return JSONResponse({"success": True})


def routes(context: ApiContext) -> list[BaseRoute]:
    """The memory routes for ``context``'s registry."""
    r = _Routes(context)
    table: list[tuple[str, Any, list[str]]] = [
        ("/memory/status", r.status, ["GET"]),
        ("/memory/config", r.config, ["GET"]),
        ("/memory/threads", r.threads, ["GET", "POST"]),
        ("/memory/save-messages", r.save_messages, ["POST"]),
        ("/memory/messages/delete", r.delete_messages, ["POST"]),
        ("/memory/threads/{thread_id}", r.thread, ["GET", "PATCH", "DELETE"]),
        ("/memory/threads/{thread_id}/messages", r.messages, ["GET"]),
        ("/memory/threads/{thread_id}/working-memory", r.working_memory, ["GET", "POST"]),
    ]
    return [
        flows_route(context, path, handler, methods, "memory request") for path, handler, methods in table
    ]
