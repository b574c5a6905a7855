"""UI messages (what ``useChat`` sends) → model messages (the AI SDK ``LanguageModelV2`` prompt).

Follows the AI SDK's ``convertToModelMessages`` as Mastra uses it: assistant messages are split at
``step-start`` into one assistant message per step, each followed by a ``tool`` message with the
results of the tools the client or server ran; reasoning, files and tool calls are kept; sources,
``data-*`` parts and other UI-only parts are dropped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import pydantic

from ._errors import UIMessageError

__all__ = ["ChatRequest", "convert_ui_messages", "parse_chat_request", "validate_ui_messages"]

_ROLES = ("system", "user", "assistant")
_PART_TYPES = (
    "text",
    "reasoning",
    "file",
    "step-start",
    "source-url",
    "source-document",
    "dynamic-tool",
    "tool-<name>",
    "data-<name>",
    "custom",
    "reasoning-file",
    "steering-message",
)
_TOOL_STATES = (
    "input-streaming",
    "input-available",
    "approval-requested",
    "approval-responded",
    "output-available",
    "output-error",
    "output-denied",
)
_DROPPED = frozenset({"source-url", "source-document", "custom", "reasoning-file", "steering-message"})


class ChatRequest(pydantic.BaseModel):
    """The body ``useChat`` POSTs: ``{id, messages, trigger, messageId?}`` plus any extra body fields."""

    model_config = pydantic.ConfigDict(extra="allow", populate_by_name=True)

    id: str | None = None
    messages: list[dict[str, Any]]
    trigger: Literal["submit-message", "regenerate-message"] = "submit-message"
    message_id: str | None = pydantic.Field(default=None, alias="messageId")


def _where(loc: Sequence[int | str]) -> str:
    out = ""
    for item in loc:
        out += f"[{item}]" if isinstance(item, int) else (f".{item}" if out else str(item))
    return out


def parse_chat_request(body: Any) -> ChatRequest:
    """Validate a chat request body (a dict or JSON bytes/str); raises ``UIMessageError``."""
    if isinstance(body, (bytes, bytearray, str)):
        try:
            body = json.loads(body)
        except ValueError as exc:
            raise UIMessageError("", f"the request body is not valid JSON ({exc})") from None
    if not isinstance(body, Mapping):
        raise UIMessageError("", f"expected a JSON object, got {_describe(body)}")
    if "messages" in body and not isinstance(body["messages"], list):
        raise UIMessageError("messages", "Messages must be an array of UIMessage objects")
    try:
        request = ChatRequest.model_validate(dict(body))
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        raise UIMessageError(_where(first["loc"]), first["msg"]) from None
    validate_ui_messages(request.messages)
    return request


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"number {value!r}"
    if isinstance(value, str):
        return f"{value!r}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def _expect_str(obj: Mapping[str, Any], key: str, path: str, *, optional: bool = False) -> None:
    if key not in obj or obj[key] is None:
        if optional:
            return
        raise UIMessageError(f"{path}.{key}", "expected a string, got nothing (missing)")
    if not isinstance(obj[key], str):
        raise UIMessageError(f"{path}.{key}", f"expected a string, got {_describe(obj[key])}")


def _is_tool(kind: str) -> bool:
    return kind.startswith("tool-") or kind == "dynamic-tool"


def _validate_part(part: Any, path: str, role: str) -> None:
    if not isinstance(part, Mapping):
        raise UIMessageError(path, f"expected an object, got {_describe(part)}")
    kind = part.get("type")
    if not isinstance(kind, str):
        raise UIMessageError(f"{path}.type", f"expected a string, got {_describe(kind)}")
    if kind in ("text", "reasoning"):
        _expect_str(part, "text", path)
    elif kind == "file":
        _expect_str(part, "mediaType", path)
        _expect_str(part, "url", path)
        _expect_str(part, "filename", path, optional=True)
    elif _is_tool(kind):
        if kind == "dynamic-tool":
            _expect_str(part, "toolName", path)
        elif kind == "tool-":
            raise UIMessageError(f"{path}.type", "expected 'tool-<name>', got 'tool-' (no tool name)")
        _expect_str(part, "toolCallId", path)
        state = part.get("state")
        if state not in _TOOL_STATES:
            raise UIMessageError(
                f"{path}.state",
                f"expected one of {', '.join(repr(s) for s in _TOOL_STATES)}, got {_describe(state)}",
            )
        if state == "output-available" and "output" not in part:
            raise UIMessageError(f"{path}.output", "expected a value (state 'output-available'), got nothing")
        if state == "output-error":
            _expect_str(part, "errorText", path)
        approval = part.get("approval")
        if approval is not None and not isinstance(approval, Mapping):
            raise UIMessageError(f"{path}.approval", f"expected an object, got {_describe(approval)}")
    elif kind.startswith("data-") or kind == "step-start" or kind in _DROPPED:
        pass
    else:
        raise UIMessageError(
            f"{path}.type", f"expected one of {', '.join(repr(t) for t in _PART_TYPES)}, got {kind!r}"
        )


def validate_ui_messages(messages: Any) -> None:
    """Check the shape of UI messages; raises ``UIMessageError`` naming the first bad path."""
    if not isinstance(messages, list):
        raise UIMessageError("messages", "Messages must be an array of UIMessage objects")
    for i, message in enumerate(messages):
        path = f"messages[{i}]"
        if not isinstance(message, Mapping):
            raise UIMessageError(path, f"expected an object, got {_describe(message)}")
        role = message.get("role")
        if role not in _ROLES:
            raise UIMessageError(
                f"{path}.role", f"expected one of {', '.join(repr(r) for r in _ROLES)}, got {_describe(role)}"
            )
        _expect_str(message, "id", path, optional=True)
        parts = message.get("parts")
        if parts is None and isinstance(message.get("content"), str):
            continue  # ai 4 style {role, content}: accepted as one text part
        if not isinstance(parts, list):
            raise UIMessageError(f"{path}.parts", f"expected an array, got {_describe(parts)}")
        for j, part in enumerate(parts):
            _validate_part(part, f"{path}.parts[{j}]", role)


def _provider_options(part: Mapping[str, Any], key: str = "providerMetadata") -> dict[str, Any]:
    value = part.get(key)
    return {"providerOptions": value} if isinstance(value, Mapping) and value else {}


def _parts(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    parts = message.get("parts")
    if parts is None and isinstance(message.get("content"), str):
        return [{"type": "text", "text": message["content"]}]
    return list(parts or [])


def _tool_name(part: Mapping[str, Any]) -> str:
    kind = str(part["type"])
    return str(part["toolName"]) if kind == "dynamic-tool" else kind[len("tool-") :]


def _tool_output(part: Mapping[str, Any]) -> dict[str, Any]:
    state = part.get("state")
    if state == "output-error":
        return {"type": "error-text", "value": part.get("errorText", "")}
    if state == "output-denied":
        approval = part.get("approval")
        reason = approval.get("reason") if isinstance(approval, Mapping) else None
        return {"type": "error-text", "value": f"Tool execution denied{': ' + reason if reason else ''}."}
    output = part.get("output")
    if isinstance(output, str):
        return {"type": "text", "value": output}
    return {"type": "json", "value": output}


def _file(part: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "file", "mediaType": part["mediaType"]}
    if part.get("filename") is not None:
        out["filename"] = part["filename"]
    out["data"] = part["url"]
    out.update(_provider_options(part))
    return out


def _assistant(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    block: list[Mapping[str, Any]] = []

    def flush() -> None:
        if not block:
            return
        content: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        for part in block:
            kind = part["type"]
            if kind == "text":
                content.append({"type": "text", "text": part["text"], **_provider_options(part)})
            elif kind == "reasoning":
                content.append({"type": "reasoning", "text": part["text"], **_provider_options(part)})
            elif kind == "file":
                content.append(_file(part))
            elif _is_tool(kind):
                state = part.get("state")
                if state == "input-streaming":
                    continue
                name = _tool_name(part)
                call: dict[str, Any] = {
                    "type": "tool-call",
                    "toolCallId": part["toolCallId"],
                    "toolName": name,
                    "input": part.get("input", part.get("rawInput")),
                }
                if part.get("providerExecuted") is not None:
                    call["providerExecuted"] = part["providerExecuted"]
                call.update(_provider_options(part, "callProviderMetadata"))
                content.append(call)
                if state in ("output-available", "output-error", "output-denied"):
                    result = {
                        "type": "tool-result",
                        "toolCallId": part["toolCallId"],
                        "toolName": name,
                        "output": _tool_output(part),
                    }
                    if part.get("providerExecuted") is True:
                        content.append(result)
                    else:
                        results.append(result)
        if content:
            out.append({"role": "assistant", "content": content})
        if results:
            out.append({"role": "tool", "content": results})
        block.clear()

    for part in _parts(message):
        if part["type"] == "step-start":
            flush()
        else:
            block.append(part)
    flush()
    return out


def convert_ui_messages(messages: Any) -> list[dict[str, Any]]:
    """UI messages → ``LanguageModelV2`` prompt messages (``system``/``user``/``assistant``/``tool``).

    Validates first (``UIMessageError`` with the path of the first problem). Sources,
    ``data-*``, ``custom``, ``reasoning-file`` and ``steering-message`` parts are dropped; tool parts
    become ``tool-call`` parts (except while their input is still streaming) plus ``tool-result``
    parts for finished calls; a denied call's result is an ``error-text`` saying so.
    """
    validate_ui_messages(messages)
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message["role"]
        parts = _parts(message)
        if role == "system":
            text = "".join(p["text"] for p in parts if p["type"] == "text")
            out.append({"role": "system", "content": text})
        elif role == "user":
            content: list[dict[str, Any]] = []
            for part in parts:
                if part["type"] == "text":
                    content.append({"type": "text", "text": part["text"], **_provider_options(part)})
                elif part["type"] == "file":
                    content.append(_file(part))
            if content:
                out.append({"role": "user", "content": content})
        else:
            out.extend(_assistant(message))
    return out
