"""Human in the loop: a run that stops for a tool approval or a tool's ``context.suspend()``.

A suspended run ends its stream with ``tool-call-approval`` / ``tool-call-suspended`` (no
``step-finish``, no ``finish``) and is kept as one JSON snapshot in the storage's workflow-snapshot
domain (name `SNAPSHOT_WORKFLOW`, key: the run id). The snapshot holds what the loop needs to go
on (the prompt so far, the finished steps, the suspended step and the results of its calls that
already ran) and what ``ModelOutput`` had counted (`ModelOutput.serialize_state`).

A later leg (`Agent.approve_tool_call`, `decline_tool_call`, `resume_stream`), in this process or
another one with the same storage, claims the snapshot with a compare-and-set on its ``status``
(``suspended`` → ``running``), so that two legs racing for one run run its tool once; the loser
gets a `ResumeError`. A leg that ends writes ``finished`` (or a new ``suspended`` snapshot when
the run stops again).

A claimed (``running``) snapshot names its process and a lease the leg renews
(``storage.run_owner_record``, as a workflow run's). When that process died (kill -9, a crash, a
host gone) the run would stay ``running`` for good and every answer to it would hear "already
being resumed": whoever loads it next, in any process sharing the store, finds the owner gone or
its lease expired and marks it ``failed`` with `LOST_RUN` and a sentence saying so; resuming it is
then a `ResumeError` with status ``"lost"`` that tells the truth. The leg is not run again: its
tool may have had effects half-way (docs/decisions/issue-22-dead-runs.md).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..chunks import (
    ChunkFrom,
    ToolCallApproval,
    ToolCallApprovalPayload,
    ToolCallSuspended,
    ToolCallSuspendedPayload,
    error_to_dict,
    to_jsonable,
)
from ..memory import resolve_memory_option
from ._call_index import SuspendedCalls
from ._hooks import PendingToolCall, StepInfo

if TYPE_CHECKING:
    from ..storage import Storage

log = logging.getLogger("agentstream.agent")

__all__ = [
    "APPROVAL_RESUME_SCHEMA",
    "DECLINED_REASON",
    "LOST_RUN",
    "PENDING_THREAD_KEY",
    "SNAPSHOT_WORKFLOW",
    "ApprovalPolicy",
    "ResumeDecision",
    "ResumeError",
    "ResumePoint",
    "RunSnapshots",
    "Suspension",
    "restored_error",
]

SNAPSHOT_WORKFLOW = "agentstream:agent-run"
"""The workflow name under which suspended agent runs are kept in the workflow-snapshot domain."""

LOST_RUN = "AgentRunLost"
"""``error.name`` of a resumed run marked failed because the process running it died."""

PENDING_THREAD_KEY = "agentstream:suspended-run"
"""Thread-state key naming the suspended run of a memory thread (for ``auto_resume_suspended_tools``)."""

APPROVAL_RESUME_SCHEMA = (
    '{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"approved":'
    '{"type":"boolean","description":"Controls if the tool call is approved or not, should be true '
    'when approved and false when declined"},"reason":{"description":"Optional explanation for the '
    'decision, surfaced to the model when the tool call is declined","type":"string"}},"required":'
    '["approved"],"additionalProperties":false}'
)
"""``resumeSchema`` of every ``tool-call-approval`` chunk (Mastra's, byte for byte)."""

DECLINED_REASON = "Tool call was not approved by the user"
"""What the model is told about a declined call when no reason is given."""

ApprovalPolicy = Callable[[str, Any], bool | Awaitable[bool]]
"""``require_tool_approval`` as a callable: ``(tool_name, args) -> bool`` (may be async)."""


class ResumeError(RuntimeError):
    """A run cannot be resumed: unknown, finished, already resumed, or not waiting for that call.

    ``status`` says which: ``"not-found"``, ``"finished"``, ``"running"`` (another leg resumed it),
    ``"lost"`` (the process running a resumed leg died; the run was marked failed), ``"mismatch"``
    (another agent's run, another tool call, or the wrong kind of answer).
    """

    def __init__(self, message: str, *, run_id: str, status: str) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.status = status


@dataclass
class Suspension:
    """Why a step stopped: a call waits for approval, or a tool called ``context.suspend()``."""

    kind: Literal["approval", "suspend"]
    call: PendingToolCall
    payload: Any = None
    """The tool's suspend payload (``kind == "suspend"``)."""
    resume_schema: str | None = None
    """The JSON Schema (as a JSON string) of the data that resumes the call."""

    def chunk(self, run_id: str) -> ToolCallApproval | ToolCallSuspended:
        """The chunk that ends the suspended leg's stream."""
        call = self.call
        args = call.exec_args if isinstance(call.exec_args, dict) else {}
        if self.kind == "approval":
            return ToolCallApproval(
                run_id=run_id,
                from_=ChunkFrom.AGENT,
                payload=ToolCallApprovalPayload(
                    tool_call_id=call.call_id,
                    tool_name=call.name,
                    args=args,
                    resume_schema=APPROVAL_RESUME_SCHEMA,
                ),
            )
        return ToolCallSuspended(
            run_id=run_id,
            from_=ChunkFrom.AGENT,
            payload=ToolCallSuspendedPayload(
                tool_call_id=call.call_id,
                tool_name=call.name,
                suspend_payload=self.payload,
                args=args,
                resume_schema=self.resume_schema,
            ),
        )

    def to_json(self) -> dict[str, Any]:
        """The pending call as stored in the snapshot (``pending``)."""
        return {
            "kind": self.kind,
            "toolCallId": self.call.call_id,
            "toolName": self.call.name,
            "args": to_jsonable(self.call.exec_args),
            "suspendPayload": to_jsonable(self.payload),
            "resumeSchema": APPROVAL_RESUME_SCHEMA if self.kind == "approval" else self.resume_schema,
        }


@dataclass(frozen=True)
class ResumeDecision:
    """How a leg answers the pending call: approve it, decline it, or resume it with data."""

    tool_call_id: str
    action: Literal["approve", "decline", "resume"]
    reason: str | None = None
    resume_data: Any = None


@dataclass
class ResumePoint:
    """Where `run_loop` continues a suspended run (``RunConfig.resume``): the loop's state when it
    stopped, and the answer to the pending call. No ``start`` chunk is streamed; the loop runs the
    suspended step's remaining tool calls, closes that step and goes on."""

    messages: list[dict[str, Any]]
    first_non_system: int
    user_count: int
    steps: list[StepInfo]
    step: dict[str, Any]
    """The suspended step: ``number``, ``createdAt``, ``text``, ``usage``, ``finishReason``,
    ``rawReason``, ``warnings``, ``metadata``, ``content`` (the assistant message) and ``calls``."""
    completed: dict[str, tuple[bool, Any]]
    """Results of the step's calls that already ran, by call id (``(failed, value)``)."""
    approved: list[str]
    decision: ResumeDecision | None = None
    """The answer to the pending call (``None`` while the state is being stored)."""

    def calls(self) -> list[PendingToolCall]:
        """The suspended step's client tool calls, in call order."""
        return [
            PendingToolCall(
                call_id=c["callId"],
                name=c["name"],
                exec_args=c["execArgs"],
                history_args=c["historyArgs"],
                provider_executed=c.get("providerExecuted"),
            )
            for c in self.step["calls"]
        ]

    def to_json(self) -> dict[str, Any]:
        """The loop state as stored in the snapshot (``loop``); the decision is not stored."""
        return {
            "messages": to_jsonable(self.messages),
            "firstNonSystem": self.first_non_system,
            "userCount": self.user_count,
            "steps": [to_jsonable(asdict(s)) for s in self.steps],
            "step": to_jsonable(self.step),
            "completed": {
                k: [failed, error_to_dict(v) if failed and isinstance(v, BaseException) else to_jsonable(v)]
                for k, (failed, v) in self.completed.items()
            },
            "approved": list(self.approved),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], decision: ResumeDecision) -> ResumePoint:
        """The loop state of a stored snapshot, answered by ``decision``."""
        completed: dict[str, tuple[bool, Any]] = {}
        for key, (failed, value) in dict(data["completed"]).items():
            completed[key] = (True, restored_error(value)) if failed else (False, value)
        return cls(
            messages=list(data["messages"]),
            first_non_system=int(data["firstNonSystem"]),
            user_count=int(data["userCount"]),
            steps=[StepInfo(**s) for s in data["steps"]],
            step=dict(data["step"]),
            completed=completed,
            approved=list(data.get("approved", [])),
            decision=decision,
        )


class _RestoredToolError(Exception):
    """A tool's error from an earlier leg of the run (its ``{name, message, ...}`` as stored)."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        super().__init__(str(data.get("message", "")))
        self.name = str(data.get("name", "Error"))
        self.details = {k: v for k, v in data.items() if k not in ("name", "message")}


def restored_error(value: Any) -> BaseException:
    """A stored tool error (``{name, message, ...}``) as an exception that encodes the same way."""
    if isinstance(value, Mapping):
        return _RestoredToolError(value)
    return _RestoredToolError({"name": "Error", "message": str(value)})


@dataclass
class RunSnapshots:
    """Suspended runs of one agent in a storage's workflow-snapshot domain.

    Without a storage the agent uses an in-process `InMemoryStore` (runs are then resumable only
    from this process).
    """

    storage: Storage
    agent_id: str
    calls: SuspendedCalls | None = None
    """The agent's in-process index of which run waits for which call (``tool_call_id`` alone)."""

    async def save(self, run_id: str, snapshot: dict[str, Any], *, resource_id: str | None = None) -> None:
        """Keep a run that just suspended (status ``suspended``)."""
        snapshot = {**snapshot, "status": "suspended", "agentId": self.agent_id, "runId": run_id}
        await self.storage.persist_workflow_snapshot(
            SNAPSHOT_WORKFLOW, run_id, snapshot, resource_id=resource_id
        )
        call = (snapshot.get("pending") or {}).get("toolCallId")
        if self.calls is not None and isinstance(call, str):
            self.calls.add(call, run_id)

    async def load(self, run_id: str) -> dict[str, Any]:
        """The suspended run's snapshot; `ResumeError` when it cannot be resumed."""
        found = await self.storage.load_workflow_snapshot(SNAPSHOT_WORKFLOW, run_id)
        if not isinstance(found, dict):
            raise ResumeError(
                f"no suspended run {run_id!r} to resume (unknown run id, or the run never suspended)",
                run_id=run_id,
                status="not-found",
            )
        if found.get("agentId") != self.agent_id:
            raise ResumeError(
                f"run {run_id!r} belongs to agent {found.get('agentId')!r}, not {self.agent_id!r}",
                run_id=run_id,
                status="mismatch",
            )
        from ..storage import run_lost_reason  # the agent package does not import storage at load

        if (reason := run_lost_reason(found)) is not None:
            found = await self._mark_lost(run_id, found, reason)
        _check_status(run_id, found.get("status"), found.get("error"))
        return found

    async def _mark_lost(self, run_id: str, found: dict[str, Any], reason: str) -> dict[str, Any]:
        """A claimed run whose process died: stored ``failed`` (once, whoever looks first)."""
        failed = {
            "status": "failed",
            "agentId": self.agent_id,
            "runId": run_id,
            "error": lost_error(run_id, reason),
        }
        if not await self.storage.compare_and_set_workflow_snapshot(
            SNAPSHOT_WORKFLOW, run_id, failed, expected_status="running"
        ):
            current = await self.storage.load_workflow_snapshot(SNAPSHOT_WORKFLOW, run_id)
            return current if isinstance(current, dict) else failed
        if self.calls is not None:
            self.calls.discard(run_id)
        thread_id = _thread_of(found)
        if thread_id is not None:  # the thread's next message must not try to auto-resume it
            await self.clear_thread(thread_id, run_id)
        log.warning("agent %s run %s: %s; marked failed", self.agent_id, run_id, reason)
        return failed

    async def lost(self, run_id: str) -> str | None:
        """Why the run was marked lost (its process died during a resumed leg), or ``None``."""
        found = await self.storage.load_workflow_snapshot(SNAPSHOT_WORKFLOW, run_id)
        if not isinstance(found, dict) or found.get("agentId") != self.agent_id:
            return None
        if found.get("status") == "running":  # not looked at since its process died
            try:
                found = await self.load(run_id)
            except ResumeError as exc:
                return str(exc) if exc.status == "lost" else None
        error = found.get("error")
        lost = found.get("status") == "failed" and isinstance(error, dict) and error.get("name") == LOST_RUN
        return str(error["message"]) if lost and isinstance(error, dict) else None

    async def claim(self, run_id: str, snapshot: dict[str, Any]) -> dict[str, Any]:
        """Take the run for one leg: ``suspended`` → ``running`` (with this process as its owner),
        atomically in the storage; the claimed snapshot, for `renew`."""
        from ..storage import run_owner_record

        claimed = {**snapshot, "status": "running", "owner": run_owner_record()}
        won = await self.storage.compare_and_set_workflow_snapshot(
            SNAPSHOT_WORKFLOW, run_id, claimed, expected_status="suspended"
        )
        if not won:
            current = await self.storage.load_workflow_snapshot(SNAPSHOT_WORKFLOW, run_id)
            status = current.get("status") if isinstance(current, dict) else None
            _check_status(run_id, status if status != "suspended" else "running")
            raise ResumeError(f"no suspended run {run_id!r} to resume", run_id=run_id, status="not-found")
        return claimed

    async def renew(self, run_id: str, claimed: dict[str, Any]) -> bool:
        """Extend the running leg's lease; ``False`` when the run is no longer ``running`` (marked
        lost by another process after a long stall: the leg goes on, but the lease is not revived)."""
        from ..storage import run_owner_record

        renewed = {**claimed, "owner": run_owner_record()}
        return await self.storage.compare_and_set_workflow_snapshot(
            SNAPSHOT_WORKFLOW, run_id, renewed, expected_status="running"
        )

    async def mark_thread(self, thread_id: str, run_id: str, pending: Mapping[str, Any]) -> None:
        """Remember that the memory thread's last run is suspended on ``pending``."""
        await self.storage.set_thread_state(
            thread_id, PENDING_THREAD_KEY, {"runId": run_id, "agentId": self.agent_id, **pending}
        )
        if self.calls is not None:
            self.calls.add_thread(thread_id, run_id)

    async def pending_for_thread(self, thread_id: str) -> dict[str, Any] | None:
        """This agent's suspended run of the thread (``{"runId", "kind", "toolCallId", ...}``)."""
        found = await self.storage.get_thread_state(thread_id, PENDING_THREAD_KEY)
        if isinstance(found, dict) and found.get("agentId") == self.agent_id:
            return found
        return None

    async def clear_thread(self, thread_id: str, run_id: str) -> None:
        """Forget the thread's suspended run once it went on (only if it still names ``run_id``)."""
        found = await self.storage.get_thread_state(thread_id, PENDING_THREAD_KEY)
        if isinstance(found, dict) and found.get("runId") == run_id:
            await self.storage.delete_thread_state(thread_id, PENDING_THREAD_KEY)

    async def finish(self, run_id: str, status: str = "finished") -> None:
        """Mark a resumed run as over (a later resume gets a clear `ResumeError`)."""
        if self.calls is not None:
            self.calls.discard(run_id)
        await self.storage.persist_workflow_snapshot(
            SNAPSHOT_WORKFLOW, run_id, {"status": status, "agentId": self.agent_id, "runId": run_id}
        )


def _thread_of(snapshot: Mapping[str, Any]) -> str | None:
    options = snapshot.get("options")
    memory = options.get("memory") if isinstance(options, Mapping) else None
    try:
        return resolve_memory_option(memory).thread_id if memory is not None else None
    except (TypeError, ValueError):
        return None


def lost_error(run_id: str, reason: str) -> dict[str, Any]:
    """The ``error`` of a lost run's ``failed`` snapshot."""
    return {
        "name": LOST_RUN,
        "message": (
            f"run {run_id[:120]!r} stopped while a resumed leg was running: {reason}. It was marked "
            "failed; the tool call being answered may have run part-way. Send a new message to go on."
        ),
    }


def _check_status(run_id: str, status: Any, error: Any = None) -> None:
    if status == "suspended":
        return
    if status == "failed" and isinstance(error, dict) and error.get("name") == LOST_RUN:
        raise ResumeError(str(error.get("message")), run_id=run_id, status="lost")
    if status == "running":
        raise ResumeError(
            f"run {run_id!r} is already being resumed (approve, decline or resume it only once)",
            run_id=run_id,
            status="running",
        )
    if status in ("finished", "failed", "canceled"):
        raise ResumeError(
            f"run {run_id!r} has already finished ({status}); only a suspended run can be resumed",
            run_id=run_id,
            status="finished",
        )
    raise ResumeError(f"no suspended run {run_id!r} to resume", run_id=run_id, status="not-found")
