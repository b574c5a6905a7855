"""A chat request's ``memory: {thread, resource}`` (Mastra's chat route passes the body's options to
``agent.stream``, ``memory`` among them), checked before anything runs.

A request names the memory thread it continues; with an auth hook the resource is the
principal's own (its owner key, as for the memory API's routes: ``server._memory_routes``) and
given or left out, never another's, and a thread that belongs to another resource is refused
(403) before the agent runs, instead of failing in the stream with the other resource's id.
Without an auth hook (one local user) the resource is taken as given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._errors import ChatRequestError, _clip

__all__ = ["request_memory"]

_KEYS = frozenset({"thread", "resource", "options"})


def _refuse(path: str, message: str, status: int = 400) -> ChatRequestError:
    return ChatRequestError(f"{path}: {message}", status_code=status, path=path)


_MAX_TITLE = 1000


def _thread_id(thread: Any, max_id: int) -> str:
    if isinstance(thread, Mapping):
        unknown = sorted(set(thread) - {"id", "title", "metadata"})
        if unknown:
            raise _refuse(
                "memory.thread",
                f"unknown key(s) {', '.join(map(repr, unknown))} (known: id, metadata, title)",
            )
        title = thread.get("title")
        if title is not None and (not isinstance(title, str) or len(title) > _MAX_TITLE):
            raise _refuse("memory.thread.title", f"expected a string of at most {_MAX_TITLE} characters")
        if thread.get("metadata") is not None and not isinstance(thread.get("metadata"), Mapping):
            raise _refuse("memory.thread.metadata", "expected an object")
    ident = thread.get("id") if isinstance(thread, Mapping) else thread
    path = "memory.thread.id" if isinstance(thread, Mapping) else "memory.thread"
    if not isinstance(ident, str) or not ident:
        raise _refuse(path, f"expected a thread id (a non-empty string), got {_clip(repr(ident), 80)}")
    if len(ident) > max_id:
        raise _refuse(path, f"expected an id of at most {max_id} characters, got {len(ident)}")
    return ident


def _resource(given: Any, owner: str | None, max_id: int) -> str:
    if owner is not None:
        if given is not None and given != owner:
            raise _refuse(
                "memory.resource",
                "a signed-in user's memory is their own resource: leave memory.resource out, or give your own",
                403,
            )
        return owner
    if not isinstance(given, str) or not given:
        raise _refuse(
            "memory.resource", f"expected a resource id (a non-empty string), got {_clip(repr(given), 80)}"
        )
    if len(given) > max_id:
        raise _refuse("memory.resource", f"expected an id of at most {max_id} characters, got {len(given)}")
    return given


async def request_memory(agent: Any, given: Any, owner: str | None, *, max_id: int) -> dict[str, Any] | None:
    """The ``memory`` option for ``agent.stream`` from the body's ``memory`` (``None``: none given);
    `ChatRequestError` (400/403) naming the field otherwise."""
    if given is None:
        return None
    if not isinstance(given, Mapping):
        raise _refuse("memory", f"expected an object {{thread, resource}}, got {type(given).__name__}")
    unknown = sorted(set(given) - _KEYS)
    if unknown:
        raise _refuse(
            "memory", f"unknown key(s) {', '.join(map(repr, unknown))} (known: options, resource, thread)"
        )
    thread_id = _thread_id(given.get("thread"), max_id)
    resource = _resource(given.get("resource"), owner, max_id)
    get_memory = getattr(agent, "get_memory", None)
    memory = await get_memory() if get_memory is not None else None
    if memory is None:
        raise _refuse(
            "memory",
            f"agent {_clip(str(getattr(agent, 'id', '')), 120)!r} has no memory (Agent(memory=Memory(...)) and storage to keep its threads in)",
        )
    found = await memory.get_thread(thread_id)
    if found is not None and found.resource_id != resource:
        # Not whose it is: the id is the client's, the owner is not theirs to learn.
        raise _refuse("memory.thread", "this thread belongs to another resource", 403)
    option: dict[str, Any] = {"thread": given["thread"], "resource": resource}
    if "options" in given:
        option["options"] = given["options"]
    return option
