"""``Memory``: conversation history in the storage's threads/messages domain (Mastra ``@mastra/memory``).

A run with ``memory={"thread": ..., "resource": ...}`` loads the thread's last messages in front of
the new input and, when the run ends, stores the turn as ``MastraDBMessage`` records (content format
2): the new user message(s), then one assistant message with the turn's parts in order:
``step-start``, ``reasoning``, ``text``, ``tool-invocation`` (``state: 'result'`` with the result, or
``'call'`` if it never got one) and non-transient ``data-*`` parts. Background-task results replace
their placeholder in the stored invocation when the task finishes (``Memory.inject_result``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

from ..chunks import Chunk, chunk_to_dict
from ..storage import MessageRecord, Storage, ThreadRecord

__all__ = ["Memory", "MemoryScope", "TurnRecorder", "db_messages_to_prompt", "resolve_memory_option"]

DEFAULT_LAST_MESSAGES = 10
"""Mastra ``Memory`` ``options.lastMessages`` default."""


@dataclass(frozen=True)
class MemoryScope:
    """The ``memory=`` option of ``stream``/``generate``, resolved."""

    thread_id: str
    resource_id: str
    title: str | None = None
    metadata: dict[str, Any] | None = None


def resolve_memory_option(value: Any) -> MemoryScope:
    """``{"thread": id | {"id", "title"?, "metadata"?}, "resource": id}`` → ``MemoryScope``."""
    if not isinstance(value, Mapping):
        raise TypeError(f'memory= must be a dict {{"thread": ..., "resource": ...}}, got {value!r}')
    unknown = set(value) - {"thread", "resource"}
    if unknown:
        raise TypeError(f"unknown memory option(s): {', '.join(sorted(unknown))} (known: resource, thread)")
    thread = value.get("thread")
    resource = value.get("resource")
    title: str | None = None
    metadata: dict[str, Any] | None = None
    if isinstance(thread, Mapping):
        title = thread.get("title")
        metadata = dict(thread["metadata"]) if thread.get("metadata") is not None else None
        thread = thread.get("id")
    if not isinstance(thread, str) or not thread:
        raise ValueError('memory= needs a thread id: {"thread": "<id>" | {"id": "<id>"}, "resource": ...}')
    if not isinstance(resource, str) or not resource:
        raise ValueError('memory= needs a resource id: {"thread": ..., "resource": "<id>"}')
    return MemoryScope(thread, resource, title, metadata)


class Memory:
    """Thread history for an agent (``Agent(memory=Memory(...))``).

    ``storage`` defaults to the storage of the ``Mastra`` the agent is registered in.
    ``last_messages`` is how many stored messages are loaded in front of the input (``None``: all).
    """

    def __init__(self, storage: Storage | None = None, *, last_messages: int | None = DEFAULT_LAST_MESSAGES):
        if last_messages is not None and (not isinstance(last_messages, int) or last_messages < 0):
            raise ValueError(f"last_messages must be a non-negative int or None, got {last_messages!r}")
        self.storage = storage
        self.last_messages = last_messages

    def bound(self, storage: Storage) -> Memory:
        """This memory over ``storage`` when it has none of its own."""
        return self if self.storage is not None else Memory(storage, last_messages=self.last_messages)

    def _store(self) -> Storage:
        if self.storage is None:
            raise RuntimeError(
                "this Memory has no storage: pass Memory(storage) or register the agent in a Mastra"
            )
        return self.storage

    async def ensure_thread(self, scope: MemoryScope) -> ThreadRecord:
        """The scope's thread, created if missing; `ValueError` if it belongs to another resource."""
        store = self._store()
        found = await store.find_thread(scope.thread_id)
        if found is not None:
            if found.resource_id != scope.resource_id:
                raise ValueError(
                    f"thread {scope.thread_id!r} belongs to resource {found.resource_id!r}, "
                    f"not {scope.resource_id!r}"
                )
            return found
        return await store.save_thread(
            ThreadRecord(
                id=scope.thread_id, resource_id=scope.resource_id, title=scope.title, metadata=scope.metadata
            )
        )

    async def recall(self, scope: MemoryScope) -> list[MessageRecord]:
        """The thread's last ``last_messages`` stored messages (oldest first)."""
        await self.ensure_thread(scope)
        if self.last_messages == 0:
            return []
        page = await self._store().list_messages(scope.thread_id, last=self.last_messages)
        return list(page.messages)

    async def history(self, scope: MemoryScope) -> list[dict[str, Any]]:
        """``recall`` as V2 prompt messages."""
        return db_messages_to_prompt(await self.recall(scope))

    async def save(self, records: Sequence[MessageRecord]) -> None:
        """Store a turn's records after the thread's last message (timestamps kept strictly
        increasing, so that the chronological listing is the conversation order)."""
        if not records:
            return
        store = self._store()
        out: list[MessageRecord] = []
        last = await store.list_messages(records[0].thread_id, last=1)
        floor = last.messages[-1].created_at if last.messages else None
        for record in records:
            if floor is not None and record.created_at <= floor:
                record = msgspec.structs.replace(record, created_at=floor + timedelta(milliseconds=1))
            floor = record.created_at
            out.append(record)
        await store.save_messages(out)

    async def remember(
        self,
        source: AsyncIterator[Chunk],
        scope: MemoryScope,
        prompt: list[dict[str, Any]],
        inputs: list[dict[str, Any]],
        *,
        message_id: str,
        load: bool = True,
    ) -> AsyncIterator[Chunk]:
        """A run's chunks, with the thread's history loaded into ``prompt`` (after its system
        messages) before the run starts and the turn (``inputs`` and the response) stored after.

        ``load=False``: the history is already in the prompt (an until-idle continuation); only the
        thread is ensured.

        The user's message(s) are stored when the turn is accepted, before its first chunk: an
        answered request never loses its input, even if the process dies mid-answer. The
        assistant's message is stored when the turn finishes (or stops for a human); an aborted or
        failed turn's partial answer is not (Mastra's default, ``persistPartialOnAbort: false``).
        A turn blocked by a tripwire takes its user message out again, so that a refused prompt
        never reaches the model through the history of the next turn
        (docs/decisions/issue-22-persistence.md).
        """
        if load:
            history = await self.history(scope)
            at = next((i for i, m in enumerate(prompt) if m.get("role") != "system"), len(prompt))
            prompt[at:at] = history
        else:
            await self.ensure_thread(scope)
        recorder = TurnRecorder(scope)
        accepted = recorder.user_records(inputs)
        await self.save(accepted)
        finished = broken = blocked = False
        try:
            async for chunk in source:
                recorder.observe(chunk)
                kind = getattr(chunk, "type", None)
                # a run that stops for a human is stored too: the leg that resumes it stores the rest
                finished = finished or kind in ("finish", "tool-call-approval", "tool-call-suspended")
                broken = broken or kind in ("abort", "error", "tripwire")
                blocked = blocked or kind == "tripwire"
                yield chunk
        finally:
            # also when the reader closes this source at its last chunk (a tripwire ends the run)
            if blocked and accepted:
                await self._store().delete_messages([record.id for record in accepted])
            elif finished and not broken:
                await self.save(recorder.assistant_records(message_id=message_id))

    async def inject_result(
        self,
        scope: MemoryScope,
        *,
        tool_call_id: str,
        task_id: str,
        status: str,
        result: Any = None,
        error: str | None = None,
    ) -> bool:
        """Replace the stored invocation of a background tool call with its final outcome.

        Mastra's result injector: ``result`` for a completed task, ``"Background task failed: <msg>"``
        (``isError``) for a failed one; ``providerMetadata.mastra.backgroundTask`` gets the status.
        False if no stored message holds that call.
        """
        store = self._store()
        page = await store.list_messages(scope.thread_id)
        for record in reversed(page.messages):
            if record.role != "assistant":
                continue
            parts = record.content.get("parts")
            if not isinstance(parts, list):
                continue
            changed = False
            new_parts: list[Any] = []
            for part in parts:
                inv = part.get("toolInvocation") if isinstance(part, dict) else None
                if (
                    isinstance(part, dict)
                    and part.get("type") == "tool-invocation"
                    and isinstance(inv, dict)
                    and inv.get("toolCallId") == tool_call_id
                ):
                    inv = dict(inv)
                    if status == "completed":
                        inv.update(state="result", result=result)
                        inv.pop("isError", None)
                    elif status == "failed":
                        inv.update(state="result", result=f"Background task failed: {error}", isError=True)
                    part = {
                        **part,
                        "toolInvocation": inv,
                        "providerMetadata": {
                            "mastra": {"backgroundTask": {"taskId": task_id, "status": status}}
                        },
                    }
                    changed = True
                new_parts.append(part)
            if changed:
                content = dict(record.content)
                content["parts"] = new_parts
                await store.save_messages([msgspec.structs.replace(record, content=content)])
                return True
        return False


# ------------------------------------------------------------------------------------- recording


def _text_of(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def _user_parts(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text":
            parts.append({"type": "text", "text": part.get("text", "")})
        elif part.get("type") == "file":
            data = part.get("data")
            parts.append(
                {
                    "type": "file",
                    "data": data if isinstance(data, str) else "",
                    "mimeType": part.get("mediaType"),
                }
            )
    return parts


@dataclass
class TurnRecorder:
    """Collects one turn's chunks into the assistant message Mastra stores."""

    scope: MemoryScope
    parts: list[dict[str, Any]] = field(default_factory=list)
    _text: dict[str, Any] | None = None
    _reasoning: dict[str, Any] | None = None
    _calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    background: dict[str, dict[str, Any]] = field(default_factory=dict)

    def observe(self, chunk: Any) -> None:
        """Fold one chunk of the turn into the message parts being recorded."""
        kind = getattr(chunk, "type", "")
        payload: Any = getattr(chunk, "payload", None)
        if kind == "step-start":
            self.parts.append({"type": "step-start"})
            self._text = self._reasoning = None
        elif kind == "text-delta":
            text = self._text
            if text is None:
                text = self._text = {"type": "text", "text": ""}
                self.parts.append(text)
            text["text"] += payload.text
        elif kind == "text-end":
            self._text = None
        elif kind == "reasoning-delta":
            reasoning = self._reasoning
            if reasoning is None:
                reasoning = self._reasoning = {
                    "type": "reasoning",
                    "reasoning": "",
                    "details": [{"type": "text", "text": ""}],
                }
                self.parts.append(reasoning)
            reasoning["reasoning"] += payload.text
            reasoning["details"][0]["text"] += payload.text
        elif kind == "reasoning-end":
            self._reasoning = None
        elif kind == "tool-call":
            self._text = self._reasoning = None
            inv = {
                "state": "call",
                "toolCallId": payload.tool_call_id,
                "toolName": payload.tool_name,
                "args": chunk_to_dict(chunk)["payload"].get("args", {}),
            }
            self._calls[payload.tool_call_id] = inv
            self.parts.append({"type": "tool-invocation", "toolInvocation": inv})
        elif kind in ("tool-result", "tool-error"):
            found = self._calls.get(payload.tool_call_id)
            if found is not None:
                inv = found
            else:
                args = chunk_to_dict(chunk)["payload"].get("args", {})
                inv = {"toolCallId": payload.tool_call_id, "toolName": payload.tool_name, "args": args}
                self.parts.append({"type": "tool-invocation", "toolInvocation": inv})
            inv["state"] = "result"
            if kind == "tool-result":
                inv["result"] = payload.result
                meta = payload.provider_metadata
                if isinstance(meta, Mapping) and isinstance(meta.get("mastra"), Mapping):
                    bg = meta["mastra"].get("backgroundTask")
                    if bg is not None:
                        for part in self.parts:
                            if part.get("toolInvocation") is inv:
                                part["providerMetadata"] = {"mastra": {"backgroundTask": dict(bg)}}
            else:
                error = payload.error
                inv["result"] = str(error.get("message", error)) if isinstance(error, Mapping) else str(error)
                inv["isError"] = True
        elif kind == "background-task-started":
            self.background[payload.tool_call_id] = {"taskId": payload.task_id}
        elif isinstance(kind, str) and kind.startswith("data-"):
            d = chunk_to_dict(chunk)
            if d.get("transient"):
                return
            part = {"type": kind, "data": d.get("data")}
            if d.get("id") is not None:
                part["id"] = d["id"]
            self.parts.append(part)

    def records(
        self, inputs: Sequence[Mapping[str, Any]], *, message_id: str | None, now: datetime | None = None
    ) -> list[MessageRecord]:
        """The new user message(s) and the assistant message (skipped if it has no content)."""
        users = self.user_records(inputs, now=now)
        base = (now or datetime.now(UTC)) + timedelta(milliseconds=len(users))
        return [*users, *self.assistant_records(message_id=message_id, now=base)]

    def user_records(
        self, inputs: Sequence[Mapping[str, Any]], *, now: datetime | None = None
    ) -> list[MessageRecord]:
        """The turn's new user message(s), as stored."""
        base = now or datetime.now(UTC)
        out: list[MessageRecord] = []
        i = 0
        for message in inputs:
            if message.get("role") != "user":
                continue
            parts = _user_parts(message)
            out.append(
                MessageRecord(
                    id=str(uuid.uuid4()),
                    thread_id=self.scope.thread_id,
                    resource_id=self.scope.resource_id,
                    role="user",
                    content={"format": 2, "parts": parts, "content": _text_of(message)},
                    created_at=base + timedelta(milliseconds=i),
                )
            )
            i += 1
        return out

    def assistant_records(
        self, *, message_id: str | None, now: datetime | None = None
    ) -> list[MessageRecord]:
        """The assistant message of the turn so far (none if it has no content)."""
        out: list[MessageRecord] = []
        if any(p.get("type") != "step-start" for p in self.parts):
            content: dict[str, Any] = {"format": 2, "parts": json.loads(json.dumps(self.parts, default=str))}
            text = "".join(p["text"] for p in self.parts if p.get("type") == "text")
            if text:
                content["content"] = text
            if self.background:
                content["metadata"] = {"backgroundTasks": self.background}
            out.append(
                MessageRecord(
                    id=message_id or str(uuid.uuid4()),
                    thread_id=self.scope.thread_id,
                    resource_id=self.scope.resource_id,
                    role="assistant",
                    content=content,
                    created_at=now or datetime.now(UTC),
                )
            )
        return out


# ------------------------------------------------------------------------------------- loading


def _model_output(result: Any, is_error: bool) -> dict[str, Any]:
    if is_error:
        return {"type": "error-text", "value": str(result)}
    if isinstance(result, str):
        return {"type": "text", "value": result}
    return {"type": "json", "value": result}


def db_messages_to_prompt(records: Sequence[MessageRecord]) -> list[dict[str, Any]]:
    """Stored format-2 messages → V2 prompt messages (the model's view of the history).

    Assistant messages are split at ``step-start``: each step becomes an assistant message
    (reasoning, text, tool calls) followed by a tool message with its results. Invocations without
    a result and ``data-*`` parts are left out (the model never saw them).
    """
    out: list[dict[str, Any]] = []
    for record in records:
        parts = record.content.get("parts")
        parts = parts if isinstance(parts, list) else []
        if record.role == "user":
            content = [
                {"type": "text", "text": str(p.get("text", ""))}
                for p in parts
                if isinstance(p, dict) and p.get("type") == "text"
            ]
            if content:
                out.append({"role": "user", "content": content})
            continue
        if record.role == "system":
            text = "".join(
                str(p.get("text", "")) for p in parts if isinstance(p, dict) and p.get("type") == "text"
            )
            out.append({"role": "system", "content": text})
            continue
        steps: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = [([], [])]
        for part in parts:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            assistant, results = steps[-1]
            if kind == "step-start":
                if assistant or results:
                    steps.append(([], []))
            elif kind == "text" and part.get("text"):
                assistant.append({"type": "text", "text": part["text"]})
            elif kind == "reasoning" and part.get("reasoning"):
                assistant.append({"type": "reasoning", "text": part["reasoning"]})
            elif kind == "tool-invocation":
                inv = part.get("toolInvocation")
                if not isinstance(inv, dict) or inv.get("state") != "result":
                    continue
                call = {
                    "type": "tool-call",
                    "toolCallId": inv.get("toolCallId"),
                    "toolName": inv.get("toolName"),
                    "input": inv.get("args") or {},
                }
                assistant.append(call)
                results.append(
                    {
                        "type": "tool-result",
                        "toolCallId": inv.get("toolCallId"),
                        "toolName": inv.get("toolName"),
                        "output": _model_output(inv.get("result"), bool(inv.get("isError"))),
                    }
                )
        for assistant, results in steps:
            if assistant:
                out.append({"role": "assistant", "content": assistant})
            if results:
                out.append({"role": "tool", "content": results})
    return out
