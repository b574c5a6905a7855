"""Follow-up chat requests that answer a suspended run: approvals on tool parts, or ``resumeData``.

AI SDK 6/7 clients answer a ``tool-approval-request`` on the tool part itself (``state:
"approval-responded"``, ``approval: {id, approved, reason?}``) and send the whole conversation
again; Mastra's own form is ``{resumeData, runId, toolCallId?}`` in the body. Either way the run is
restored from its snapshot and its continuation streams into the same assistant message.

A run may only be resumed from the chat (request ``id``) and by the owner (the authenticated
principal) that saw it suspend: `RunOwners` records that pair when a suspension reaches the
client, and a follow-up naming a run without a matching record is refused (403). Run ids are
random, but they travel in every approval id and data part, so they are not a secret.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ._convert import UIChunk, to_ai_sdk_stream
from ._errors import ChatRequestError

__all__ = [
    "APPROVAL_ID_SEPARATOR",
    "RUN_OWNERS",
    "ResumeTarget",
    "RunOwners",
    "approval_targets",
    "body_target",
    "stream_resumed",
    "suspended_run_id",
]

APPROVAL_ID_SEPARATOR = "::"
"""``approvalId`` of a ``tool-approval-request`` is ``<runId>::<toolCallId>`` (Mastra's)."""

RUN_OWNERS = "agentstream:chat-run-owner"
"""Workflow-snapshot name under which `RunOwners` keeps who may resume a run (key: run id)."""


@dataclass(frozen=True)
class ResumeTarget:
    """One suspended tool call to answer: ``resume_data`` for the run ``run_id``."""

    run_id: str
    resume_data: dict[str, Any]
    tool_call_id: str | None = None


def _responded(part: Any) -> bool:
    return isinstance(part, Mapping) and part.get("state") == "approval-responded"


def _is_tool_part(part: Mapping[str, Any]) -> bool:
    kind = part.get("type")
    return isinstance(kind, str) and (kind.startswith("tool-") or kind == "dynamic-tool")


def _target(part: Mapping[str, Any], path: str) -> ResumeTarget:
    approval = part.get("approval")
    tool_call_id = part.get("toolCallId")
    if not _is_tool_part(part) or not isinstance(approval, Mapping):
        raise ChatRequestError(
            f"{path}: an 'approval-responded' part must be a tool part with an approval", path=path
        )
    approval_id, approved, reason = approval.get("id"), approval.get("approved"), approval.get("reason")
    if not isinstance(approval_id, str) or not isinstance(approved, bool):
        raise ChatRequestError(
            f"{path}.approval: expected {{id: string, approved: boolean}}, got {_shape(approval)}",
            path=f"{path}.approval",
        )
    if reason is not None and not isinstance(reason, str):
        raise ChatRequestError(f"{path}.approval.reason: expected a string", path=f"{path}.approval.reason")
    if not isinstance(tool_call_id, str) or not tool_call_id:
        raise ChatRequestError(f"{path}.toolCallId: expected a non-empty string", path=f"{path}.toolCallId")
    # The tool call id may itself contain the separator: match it as a suffix, never split.
    suffix = APPROVAL_ID_SEPARATOR + tool_call_id
    run_id = approval_id[: -len(suffix)] if approval_id.endswith(suffix) else ""
    if not run_id:
        raise ChatRequestError(
            f"{path}.approval.id: expected '<runId>{APPROVAL_ID_SEPARATOR}{_clip(tool_call_id)}', "
            f"got {_clip(approval_id)!r}",
            path=f"{path}.approval.id",
        )
    data: dict[str, Any] = {"approved": approved}
    if reason is not None:
        data["reason"] = reason
    return ResumeTarget(run_id=run_id, resume_data=data, tool_call_id=tool_call_id)


def approval_targets(messages: Sequence[Mapping[str, Any]]) -> list[ResumeTarget]:
    """The approvals answered on the trailing assistant message (empty when there are none).

    Only that message can be continued by one response stream, so an answer found only in an
    earlier assistant message while the last one still waits is refused, as is an ambiguous one
    (two answers for one call); Mastra's ``handleChatStream`` fails closed the same way.
    """
    if not messages or messages[-1].get("role") != "assistant":
        return []
    last = len(messages) - 1
    parts = messages[-1].get("parts") or []
    responded = [(j, p) for j, p in enumerate(parts) if _responded(p)]
    if not responded:
        waiting = any(isinstance(p, Mapping) and p.get("state") == "approval-requested" for p in parts)
        earlier = any(
            m.get("role") == "assistant" and any(_responded(p) for p in m.get("parts") or [])
            for m in messages[:-1]
        )
        if waiting and earlier:
            raise ChatRequestError(
                "an approval answered in an earlier assistant message cannot be resumed: answer it on "
                "the last assistant message",
                path=f"messages[{last}].parts",
            )
        return []
    targets: list[ResumeTarget] = []
    seen: set[str] = set()
    for j, part in responded:
        path = f"messages[{last}].parts[{j}]"
        target = _target(part, path)
        if target.tool_call_id in seen:
            raise ChatRequestError(
                f"{path}: tool call {_clip(str(target.tool_call_id))!r} is answered twice", path=path
            )
        seen.add(str(target.tool_call_id))
        targets.append(target)
    return targets


def body_target(extra: Mapping[str, Any]) -> ResumeTarget | None:
    """Mastra's ``{resumeData, runId, toolCallId?}`` body fields as a target (``None`` without)."""
    data = extra.get("resumeData")
    if data is None:
        return None
    run_id, tool_call_id = extra.get("runId"), extra.get("toolCallId")
    if not isinstance(run_id, str) or not run_id:
        raise ChatRequestError("runId is required when resumeData is provided", path="runId")
    if not isinstance(data, Mapping):
        raise ChatRequestError(f"resumeData: expected an object, got {_shape(data)}", path="resumeData")
    if tool_call_id is not None and not isinstance(tool_call_id, str):
        raise ChatRequestError(
            f"toolCallId: expected a string, got {_shape(tool_call_id)}", path="toolCallId"
        )
    return ResumeTarget(run_id=run_id, resume_data=dict(data), tool_call_id=tool_call_id)


class _SnapshotStore(Protocol):
    async def persist_workflow_snapshot(self, workflow_name: str, run_id: str, snapshot: Any) -> None: ...
    async def load_workflow_snapshot(self, workflow_name: str, run_id: str) -> Any: ...


class RunOwners:
    """Who may resume which run from a chat: ``{chatId, owner}`` per run id, in the storage.

    ``owner`` is the caller's identity (`chat_route` passes the authenticated principal); without
    authentication it is ``None`` and only the chat id must match.
    """

    def __init__(self, storage: _SnapshotStore | None, *, chat_id: str | None, owner: str | None) -> None:
        self._storage = storage
        self._record = {"chatId": chat_id, "owner": owner}
        self._bound: set[str] = set()

    async def bind(self, run_id: str) -> None:
        """Record that this chat and owner saw run ``run_id`` suspend (once per run per request)."""
        if self._storage is None or run_id in self._bound:
            return
        self._bound.add(run_id)
        await self._storage.persist_workflow_snapshot(RUN_OWNERS, run_id, dict(self._record))

    async def check(self, run_id: str, path: str) -> None:
        """Refuse (403) unless run ``run_id`` suspended in this chat for this owner."""
        if self._storage is None:
            raise ChatRequestError(
                "resuming a run from a chat needs the Mastra's storage (the registry has none)", path=path
            )
        record = await self._storage.load_workflow_snapshot(RUN_OWNERS, run_id)
        if record != self._record:
            # One answer for unknown runs and other users' runs: which run ids exist is not revealed.
            raise ChatRequestError(
                f"run {_clip(run_id)!r} is not waiting for an answer from this chat",
                status_code=403,
                path=path,
            )

    async def check_new_run(self, run_id: str) -> None:
        """A fresh run may not take the id of a run that suspended for another chat or owner."""
        if self._storage is None:
            return
        record = await self._storage.load_workflow_snapshot(RUN_OWNERS, run_id)
        if record is not None and record != self._record:
            raise ChatRequestError(
                f"runId {_clip(run_id)!r} belongs to another chat", status_code=403, path="runId"
            )


def suspended_run_id(part: Mapping[str, Any]) -> str | None:
    """The run a UI part announces as suspended (``data-tool-call-approval`` / ``-suspended``)."""
    if part.get("type") not in ("data-tool-call-approval", "data-tool-call-suspended"):
        return None
    data = part.get("data")
    run_id = data.get("runId") if isinstance(data, Mapping) else None
    return run_id if isinstance(run_id, str) and run_id else None


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _shape(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, Mapping):
        return "an object with keys " + ", ".join(sorted(str(k) for k in value)[:8])
    return {str: "a string", list: "an array", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )


async def stream_resumed(
    agent: Any,
    targets: Sequence[ResumeTarget],
    options: Mapping[str, Any],
    convert: Mapping[str, Any],
    *,
    frame: bool,
) -> AsyncIterator[UIChunk]:
    """The continuation of each target's run, in order, as one UI message stream.

    With ``frame`` (the approvals of AI SDK 6/7, as Mastra does), the response opens with one
    ``start`` for the continued message (a resumed run has none of its own) and ends with the last
    leg's ``finish`` only; an ``error`` or ``abort`` stops before the later legs run their tools.
    """
    send_start, send_finish = convert.get("send_start", True), convert.get("send_finish", True)
    last_message_id = convert.get("last_message_id")
    started, final_finish = not (frame and send_start), None
    for target in targets:
        output = agent.resume_stream(
            target.resume_data, run_id=target.run_id, tool_call_id=target.tool_call_id, **options
        )
        stream = to_ai_sdk_stream(output, **convert)
        leg_finish = None
        try:
            async for part in stream:
                if not frame:
                    yield part
                    continue
                if part["type"] == "start":
                    if not started:
                        started = True
                        yield part
                    continue
                if not started:
                    started = True
                    yield {"type": "start", **({"messageId": last_message_id} if last_message_id else {})}
                if part["type"] == "finish":
                    leg_finish = part
                    continue
                yield part
                if part["type"] in ("error", "abort"):
                    return
        finally:
            await stream.aclose()  # type: ignore[attr-defined]
            await output.aclose()
        final_finish = leg_finish
    if frame:
        if not started:
            yield {"type": "start", **({"messageId": last_message_id} if last_message_id else {})}
        if send_finish:
            yield final_finish or {"type": "finish"}
