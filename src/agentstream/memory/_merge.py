"""A resumed run's answer stored as the rest of the message it continues (Mastra's
``MessageMerger.merge``, @mastra/core message-list).

A run that stops for a human (an approval, a suspended tool) is stored with its assistant message
so far, the call in state ``call``. The leg that resumes it answers in the same response: Mastra's
message list holds the suspended message, and the resumed leg's parts merge into it, so the thread
keeps one assistant message whose call now has its result (state ``result``) or its refusal
(``output-denied`` with the ``approval``), followed by the parts the resumed leg streamed. Stored
as two messages instead, a client reading the thread back (Studio after a reload) shows the call
twice, once without its result.

Where Mastra appends a resumed step's text right after the call's part (it starts a step only
before text), a ``step-start`` is put before any non-call part that follows a call: the history
loader (`db_messages_to_prompt`) splits steps there, so the model sees the call, its result, then
the answer, in that order.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import msgspec

from ..storage import MessageRecord, Storage

__all__ = ["merge_resumed"]

_LOOK_BACK = 20
"""How many of the thread's last messages are searched for the message a resumed leg continues."""


def _call_ids(record: MessageRecord) -> set[str]:
    parts = record.content.get("parts") if isinstance(record.content, dict) else None
    return {
        str(p["toolInvocation"].get("toolCallId"))
        for p in parts or []
        if isinstance(p, dict)
        and p.get("type") == "tool-invocation"
        and isinstance(p.get("toolInvocation"), dict)
    }


async def merge_resumed(store: Storage, answer: Sequence[MessageRecord]) -> list[MessageRecord]:
    """``answer`` (a resumed leg's assistant record) merged into the thread's assistant message
    that holds the call it resumed, when there is one: that message's id and ``createdAt`` kept;
    otherwise ``answer`` unchanged."""
    if len(answer) != 1 or answer[0].role != "assistant":
        return list(answer)
    incoming = answer[0]
    calls = _call_ids(incoming)
    if not calls:
        return list(answer)
    recent = await store.list_messages(incoming.thread_id, last=_LOOK_BACK)
    for previous in reversed(recent.messages):
        if previous.role == "assistant" and previous.id != incoming.id and _call_ids(previous) & calls:
            return [merged(previous, incoming)]
    return list(answer)


def merged(previous: MessageRecord, incoming: MessageRecord) -> MessageRecord:
    """``incoming``'s parts merged into ``previous`` as Mastra merges a response into the latest
    assistant message: a call's result or refusal updates the call's part in place (the
    arguments merged), every other part is appended; metadata merged, ``content`` the latest
    text; ``previous``'s id and creation time kept."""
    content: dict[str, Any] = copy.deepcopy(previous.content) if isinstance(previous.content, dict) else {}
    parts: list[dict[str, Any]] = list(content.get("parts") or [])
    new: dict[str, Any] = incoming.content if isinstance(incoming.content, dict) else {}
    for part in new.get("parts") or []:
        invocation = part.get("toolInvocation") if part.get("type") == "tool-invocation" else None
        existing = _find_call(parts, invocation.get("toolCallId")) if isinstance(invocation, dict) else None
        if existing is None or not isinstance(invocation, dict):
            if part.get("type") not in ("step-start", "tool-invocation") and _ends_with_call(parts):
                parts.append(_step_start(parts))
            parts.append(copy.deepcopy(part))
            continue
        old = existing["toolInvocation"]
        update = {k: v for k, v in invocation.items() if k != "args"}
        existing["toolInvocation"] = {
            **old,
            **update,
            "args": {**(old.get("args") or {}), **(invocation.get("args") or {})},
        }
        if part.get("providerMetadata"):
            existing["providerMetadata"] = {
                **existing.get("providerMetadata", {}),
                **part["providerMetadata"],
            }
    content["parts"] = parts
    if new.get("metadata"):
        content["metadata"] = {**(content.get("metadata") or {}), **new["metadata"]}
    if new.get("content"):
        content["content"] = new["content"]
    return msgspec.structs.replace(previous, content=content)


def _ends_with_call(parts: list[dict[str, Any]]) -> bool:
    return bool(parts) and parts[-1].get("type") == "tool-invocation"


def _step_start(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """A ``step-start`` labelled with the model of the message's last one (as Mastra's)."""
    earlier = next((p for p in reversed(parts) if p.get("type") == "step-start"), None)
    return {"type": "step-start", **({"model": earlier["model"]} if earlier and earlier.get("model") else {})}


def _find_call(parts: list[dict[str, Any]], call_id: Any) -> dict[str, Any] | None:
    for part in reversed(parts):
        invocation = part.get("toolInvocation") if part.get("type") == "tool-invocation" else None
        if isinstance(invocation, dict) and invocation.get("toolCallId") == call_id:
            found: dict[str, Any] = part
            return found
    return None
