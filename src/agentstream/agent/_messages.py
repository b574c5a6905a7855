"""Input messages → AI SDK V2 prompt messages.

Accepted: a string (one user message), a single message dict, or a list of message dicts in either
OpenAI chat style (``{"role": "user", "content": "hi"}``, assistant ``tool_calls``, ``role: tool``)
or V2 prompt style (``content`` a list of typed parts). Mastra stamps the parts it creates with
``providerOptions.mastra.createdAt``; so do we.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

__all__ = ["MessageInput", "to_prompt"]

MessageInput = str | dict[str, Any] | Sequence[str | dict[str, Any]]


def _stamp(created_at: int) -> dict[str, Any]:
    return {"mastra": {"createdAt": created_at}}


def _text_parts(content: Any, created_at: int) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content, "providerOptions": _stamp(created_at)}]
    if isinstance(content, list):
        parts: list[dict[str, Any]] = []
        for part in content:
            if isinstance(part, str):
                parts.append({"type": "text", "text": part, "providerOptions": _stamp(created_at)})
            elif isinstance(part, dict):
                kind = part.get("type")
                if kind == "image_url":  # OpenAI chat image part
                    url = part.get("image_url", {})
                    url = url.get("url") if isinstance(url, dict) else url
                    parts.append({"type": "file", "data": url, "mediaType": "image/*"})
                elif kind == "input_text":
                    parts.append({"type": "text", "text": part.get("text", "")})
                else:
                    parts.append(dict(part))
            else:
                raise TypeError(f"message content parts must be str or dict, got {type(part).__name__}")
        return parts
    raise TypeError(f"message content must be a string or a list of parts, got {type(content).__name__}")


def _one(message: dict[str, Any], created_at: int, tool_names: dict[str, str]) -> list[dict[str, Any]]:
    role = message.get("role")
    content = message.get("content")
    if role == "system" or role == "developer":
        if isinstance(content, list):
            content = "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
        return [{"role": "system", "content": content or ""}]
    if role == "user":
        return [{"role": "user", "content": _text_parts(content if content is not None else "", created_at)}]
    if role == "assistant":
        parts = _text_parts(content, created_at) if content else []
        for call in message.get("tool_calls") or []:
            fn = call.get("function", {})
            raw = fn.get("arguments", "{}")
            try:
                args = json.loads(raw) if isinstance(raw, str) else raw
            except ValueError:
                args = {}
            tool_names[call.get("id", "")] = fn.get("name", "")
            parts.append(
                {"type": "tool-call", "toolCallId": call.get("id"), "toolName": fn.get("name"), "input": args}
            )
        for part in parts:
            if part.get("type") == "tool-call":
                tool_names[str(part.get("toolCallId"))] = str(part.get("toolName"))
        return [{"role": "assistant", "content": parts}]
    if role == "tool":
        if isinstance(content, list):
            return [{"role": "tool", "content": [dict(p) for p in content]}]
        call_id = str(message.get("tool_call_id", ""))
        value = content if isinstance(content, str) else json.dumps(content)
        result = {
            "type": "tool-result",
            "toolCallId": call_id,
            "toolName": message.get("name") or tool_names.get(call_id, ""),
            "output": {"type": "text", "value": value},
        }
        return [{"role": "tool", "content": [result]}]
    raise ValueError(f"unknown message role {role!r} (expected system, user, assistant or tool)")


def to_prompt(
    messages: MessageInput, *, created_at: int, ids: list[str | None] | None = None
) -> list[dict[str, Any]]:
    """Normalise ``messages`` to V2 prompt messages (without the agent's instructions).

    ``ids``, when given, gets one entry per prompt message: the ``id`` its user message was given
    with (``None`` otherwise). Memory stores the message under it (Mastra keeps an input
    message's id); the prompt itself never carries it (the model's input stays the same)."""
    if isinstance(messages, str):
        if ids is not None:
            ids.append(None)
        return [{"role": "user", "content": _text_parts(messages, created_at)}]
    if isinstance(messages, dict):
        messages = [messages]
    out: list[dict[str, Any]] = []
    tool_names: dict[str, str] = {}
    for message in messages:
        if isinstance(message, str):
            out.append({"role": "user", "content": _text_parts(message, created_at)})
            if ids is not None:
                ids.append(None)
        elif isinstance(message, dict):
            made = _one(message, created_at, tool_names)
            out.extend(made)
            if ids is not None:
                given = message.get("id") if message.get("role") == "user" else None
                ids.extend([given if isinstance(given, str) and given else None] * len(made))
        else:
            raise TypeError(f"messages must be strings or dicts, got {type(message).__name__}")
    return out
