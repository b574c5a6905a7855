"""Whose memory a memory route reads, and which threads the caller may touch.

The memory is the ``agentId``'s (its ``Memory``, bound to the registry's storage), else the
registry's storage (Mastra's ``allowMissingAgent``: an unknown agent id falls back to storage).
With an auth hook a caller acts for exactly one resource, its `owner_key` (the rule of
``server/_memory_routes.py`` and of the agents routes' ``memory`` option): a ``resourceId``
naming another is refused (403) and another resource's thread does not exist for it (404).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..ai_sdk import ChatRequestError
from ..memory import Memory
from ..server import message_json, thread_json
from ._flows_http import Caller, check_id, not_found

if TYPE_CHECKING:
    from starlette.requests import Request

    from ..storage import MessageRecord, ThreadRecord
    from ._context import ApiContext

__all__ = ["MemoryAccess", "db_message", "thread_out"]


def thread_out(thread: ThreadRecord) -> dict[str, Any]:
    """A thread as Mastra's ``StorageThreadType`` (no ``metadata`` key when it has none)."""
    out = thread_json(thread)
    if out.get("metadata") is None:
        out.pop("metadata", None)
    return out


def db_message(record: MessageRecord) -> dict[str, Any]:
    """A stored message as Mastra's ``MastraDBMessage``, with its ``type``."""
    return {**message_json(record), "type": record.type}


class MemoryAccess:
    """The memory of a request and the caller's rights in it."""

    def __init__(self, context: ApiContext) -> None:
        self.context = context

    def agent_memory(self, request: Request) -> Memory | None:
        """The ``agentId``'s memory, the storage's when the agent is unknown or has none;
        ``None`` when the app has neither."""
        mastra = self.context.mastra
        agent_id = check_id(request.query_params.get("agentId"), "agentId", required=False)
        agent = mastra.get_agents().get(agent_id) if agent_id else None
        if agent is not None:
            try:
                return agent._memory_for_run()
            except ValueError:
                return None
        return Memory(mastra.storage) if mastra.storage is not None else None

    def memory(self, request: Request) -> Memory:
        memory = self.agent_memory(request)
        if memory is None:
            raise ChatRequestError("Memory is not initialized", status_code=400)
        return memory

    @staticmethod
    def resource(caller: Caller, asked: Any, field: str = "resourceId") -> str | None:
        """The resource the caller acts for: its own with auth (another named is 403), else what
        it names (``None``: any). client-js sends the text ``undefined`` for a missing one."""
        if asked in (None, "", "undefined"):
            asked = None
        elif not isinstance(asked, str):
            raise ChatRequestError(f"{field}: expected a string", path=field)
        checked = check_id(asked, field, required=False)
        if caller.owner is not None:
            if checked is not None and checked != caller.owner:
                raise ChatRequestError(f"{field} is not yours", status_code=403, path=field)
            return caller.owner
        return checked

    @staticmethod
    async def own_thread(memory: Memory, thread_id: str, caller: Caller) -> ThreadRecord:
        """The caller's thread: 404 for none, and for another resource's."""
        thread = await memory.get_thread(thread_id)
        if thread is None or (caller.owner is not None and thread.resource_id != caller.owner):
            raise not_found("Thread")
        return thread
