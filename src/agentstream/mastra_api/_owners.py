"""Who may do what through the agents routes, by the one owner rule (`owner_key`):

* ``memory``: with an auth hook a caller acts for exactly one resource, its owner key: it
  replaces whatever ``memory.resource`` says (Mastra's ``getEffectiveResourceId``), and a thread
  that exists under another resource is refused (403, Mastra's ``enforceThreadAccess``).
* suspended runs: a run that suspends in an answer of these routes is recorded with the caller's
  owner; approving, declining or resuming it needs the same owner (one 404 for unknown runs and
  other callers' runs, so which runs exist is not revealed). A new run may not take a suspended
  run's id. Without auth (a local, single-user server) the owner is ``None`` and only the run
  must exist.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..server import owner_key
from ._http import ApiError

if TYPE_CHECKING:
    from ..agent import Agent
    from ._context import ApiContext

__all__ = ["RUN_OWNERS", "bind_run", "check_new_run", "check_run", "memory_option"]

RUN_OWNERS = "agentstream:mastra-api-run-owner"
"""The workflow-snapshot name run owners are kept under in the Mastra's storage."""


def _thread_id(thread: Any) -> Any:
    return thread.get("id") if isinstance(thread, Mapping) else thread


async def memory_option(
    context: ApiContext, agent: Agent, body: Mapping[str, Any], principal: object
) -> dict[str, Any] | None:
    """The run's ``memory`` option from the body (``memory: {thread, resource}``, or client-js's
    ``threadId`` / ``resourceId``), checked against the caller; ``None`` without one."""
    given = body.get("memory")
    if given is not None and not isinstance(given, Mapping):
        raise ApiError(f"memory: expected an object {{thread, resource}}, got {type(given).__name__}")
    memory: dict[str, Any] = dict(given or {})
    if "thread" not in memory and isinstance(body.get("threadId"), str):
        memory["thread"] = body["threadId"]
    if "resource" not in memory and isinstance(body.get("resourceId"), str):
        memory["resource"] = body["resourceId"]
    if not memory:
        return None
    acting = owner_key(principal) if context.guard.auth is not None else None
    resource = memory.get("resource")
    if acting is not None:
        # Mastra's getEffectiveResourceId: the server's resource for the caller wins over the body's.
        memory["resource"] = resource = acting
    thread_id = _thread_id(memory.get("thread"))
    if not isinstance(thread_id, str) or not thread_id:
        raise ApiError("memory.thread: expected a thread id (a string, or an object with an 'id')")
    if not isinstance(resource, str) or not resource:
        raise ApiError("memory.resource: expected a resource id (a non-empty string)")
    unknown = set(memory) - {"thread", "resource", "options"}
    for key in unknown:
        memory.pop(key)
    thread = await agent._memory_for_run().get_thread(thread_id)
    if thread is not None and thread.resource_id != resource:
        raise ApiError(f"memory.thread {thread_id[:80]!r} belongs to another resource", 403)
    return memory


async def _record(context: ApiContext, run_id: str) -> Any:
    return await context.mastra.storage.load_workflow_snapshot(RUN_OWNERS, run_id)


def _owner(context: ApiContext, principal: object) -> str | None:
    return owner_key(principal) if context.guard.auth is not None else None


async def bind_run(context: ApiContext, run_id: str, principal: object) -> None:
    """Record that ``run_id`` suspended for this caller."""
    record = {"owner": _owner(context, principal)}
    await context.mastra.storage.persist_workflow_snapshot(RUN_OWNERS, run_id, record)


async def check_run(context: ApiContext, run_id: Any, principal: object) -> str:
    """``run_id`` if it suspended in these routes for this caller; 400 / 404 otherwise."""
    if not isinstance(run_id, str) or not run_id:
        raise ApiError("Run id is required")
    record = await _record(context, run_id)
    if not isinstance(record, Mapping) or record.get("owner") != _owner(context, principal):
        raise ApiError(f"no suspended run {run_id[:80]!r} of yours", 404)
    return run_id


async def check_new_run(context: ApiContext, run_id: Any, principal: object) -> str | None:
    """A client-chosen ``runId`` for a new run: refused (403) when it names another caller's run."""
    if run_id is None:
        return None
    if not isinstance(run_id, str) or not run_id or len(run_id) > 200:
        raise ApiError("runId: expected a non-empty string of at most 200 characters")
    record = await _record(context, run_id)
    if record is not None and (
        not isinstance(record, Mapping) or record.get("owner") != _owner(context, principal)
    ):
        raise ApiError(f"runId {run_id[:80]!r} belongs to another caller", 403)
    return run_id
