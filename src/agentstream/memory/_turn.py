"""One turn as stored (``TurnRecorder``) and stored messages as the model sees them
(``db_messages_to_prompt``): Mastra's ``MastraDBMessage`` format 2 both ways."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from ..chunks import chunk_to_dict
from ..storage import MessageRecord
from ._scope import MemoryScope

__all__ = ["TurnRecorder", "db_messages_to_prompt"]


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


def _created_at(part: Mapping[str, Any], default: int) -> int:
    options = part.get("providerOptions")
    mastra = options.get("mastra") if isinstance(options, Mapping) else None
    found = mastra.get("createdAt") if isinstance(mastra, Mapping) else None
    return int(found) if isinstance(found, int | float) else default


def _user_parts(message: Mapping[str, Any], now_ms: int) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content, "createdAt": now_ms}]
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text":
            parts.append(
                {"type": "text", "text": part.get("text", ""), "createdAt": _created_at(part, now_ms)}
            )
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
    """Collects one turn's chunks into the assistant message Mastra stores.

    As Mastra: the first step's ``step-start`` is not stored, later ones carry ``createdAt`` and
    ``model`` (``provider/modelId``); text parts carry ``createdAt`` (ms); calls of
    ``skip_tools`` (``updateWorkingMemory``) are left out.
    """

    scope: MemoryScope
    now_ms: Callable[[], int] | None = None
    skip_tools: set[str] = field(default_factory=set)
    parts: list[dict[str, Any]] = field(default_factory=list)
    _steps: int = 0
    _model: dict[str, str] = field(default_factory=dict)
    _text: dict[str, Any] | None = None
    _reasoning: dict[str, Any] | None = None
    _calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    background: dict[str, dict[str, Any]] = field(default_factory=dict)

    def observe(self, chunk: Any) -> None:
        """Fold one chunk of the turn into the message parts being recorded."""
        kind = getattr(chunk, "type", "")
        payload: Any = getattr(chunk, "payload", None)
        if kind == "step-start":
            self._steps += 1
            if self._steps > 1:
                self.parts.append({"type": "step-start", "createdAt": self._ms()})
            self._text = self._reasoning = None
        elif kind == "step-finish":
            meta = (chunk_to_dict(chunk).get("payload") or {}).get("metadata") or {}
            model = meta.get("modelMetadata") or {}
            if model.get("modelId"):
                self._model = {
                    "modelId": str(model["modelId"]),
                    "provider": str(model.get("modelProvider", "")),
                }
        elif kind == "text-delta":
            text = self._text
            if text is None:
                text = self._text = {"type": "text", "text": "", "createdAt": self._ms()}
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
        elif kind in ("tool-call", "tool-result", "tool-error") and payload.tool_name in self.skip_tools:
            self._text = self._reasoning = None
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
        elif kind == "tool-output-denied":
            # a declined call (Mastra's updateToolInvocation: state output-denied, the approval kept)
            found = self._calls.get(payload.tool_call_id)
            if found is None:
                args = chunk_to_dict(chunk)["payload"].get("args", {})
                found = {"toolCallId": payload.tool_call_id, "toolName": payload.tool_name, "args": args}
                self.parts.append({"type": "tool-invocation", "toolInvocation": found})
            found["state"] = "output-denied"
            found["approval"] = dict(payload.approval)
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

    def _ms(self) -> int:
        if self.now_ms is not None:
            return self.now_ms()
        return int(datetime.now(UTC).timestamp() * 1000)

    def records(
        self, inputs: Sequence[Mapping[str, Any]], *, message_id: str | None, now: datetime | None = None
    ) -> list[MessageRecord]:
        """The new user message(s) and the assistant message (skipped if it has no content)."""
        users = self.user_records(inputs, now=now)
        base = (now or datetime.fromtimestamp(self._ms() / 1000, UTC)) + timedelta(milliseconds=len(users))
        return [*users, *self.assistant_records(message_id=message_id, now=base)]

    def user_records(
        self,
        inputs: Sequence[Mapping[str, Any]],
        *,
        now: datetime | None = None,
        ids: Sequence[str | None] = (),
    ) -> list[MessageRecord]:
        """The turn's new user message(s), as stored; ``ids[i]`` (when given) is ``inputs[i]``'s id."""
        base = now or datetime.fromtimestamp(self._ms() / 1000, UTC)
        out: list[MessageRecord] = []
        i = 0
        for index, message in enumerate(inputs):
            if message.get("role") != "user":
                continue
            parts = _user_parts(message, self._ms())
            given = ids[index] if index < len(ids) else None
            out.append(
                MessageRecord(
                    # a message sent with its id keeps it (Mastra's MessageList): a client that shows
                    # it before the answer (Studio's pending message) finds it again in the thread
                    id=given or str(uuid.uuid4()),
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
            parts = json.loads(json.dumps(self.parts, default=str))
            if self._model:
                label = f"{self._model['provider']}/{self._model['modelId']}"
                for part in parts:
                    if part.get("type") == "step-start":
                        part["model"] = label
            content: dict[str, Any] = {"format": 2, "parts": parts}
            text = "".join(p["text"] for p in self.parts if p.get("type") == "text")
            if text:
                content["content"] = text
            metadata: dict[str, Any] = dict(self._model)
            if self.background:
                metadata["backgroundTasks"] = self.background
            if metadata:
                content["metadata"] = metadata
            out.append(
                MessageRecord(
                    id=message_id or str(uuid.uuid4()),
                    thread_id=self.scope.thread_id,
                    resource_id=self.scope.resource_id,
                    role="assistant",
                    content=content,
                    created_at=now or datetime.fromtimestamp(self._ms() / 1000, UTC),
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


def _text_part(part: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "text", "text": str(part.get("text", ""))}
    if isinstance(part.get("createdAt"), int | float):
        out["providerOptions"] = {"mastra": {"createdAt": part["createdAt"]}}
    return out


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
            content = [_text_part(p) for p in parts if isinstance(p, dict) and p.get("type") == "text"]
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
                assistant.append(_text_part(part))
            elif kind == "reasoning" and part.get("reasoning"):
                assistant.append({"type": "reasoning", "text": part["reasoning"]})
            elif kind == "tool-invocation":
                inv = part.get("toolInvocation")
                if isinstance(inv, dict) and inv.get("state") == "output-denied":
                    # the model is told why the call did not run (Mastra: the approval's reason)
                    approval = inv.get("approval")
                    given = approval.get("reason") if isinstance(approval, dict) else None
                    reason = given or "Tool call was not approved by the user"
                    inv = {**inv, "state": "result", "result": reason}
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
                        "input": inv.get("args") or {},
                    }
                )
        for assistant, results in steps:
            if assistant:
                out.append({"role": "assistant", "content": assistant})
            if results:
                out.append({"role": "tool", "content": results})
    return out
