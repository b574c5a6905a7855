"""AI SDK V2 prompt → Cohere v2 Chat ``messages`` (and RAG ``documents``), and the tool settings.

As ``@ai-sdk/cohere`` ``convertToCohereChatPrompt``: a user message's text parts join into one string
(images make it a content list); text and JSON file parts become ``documents`` for grounded answers;
an assistant message with tool calls sends only ``tool_calls`` (Cohere rejects content beside them);
each tool result is its own ``role: tool`` message.
"""

from __future__ import annotations

import base64
from typing import Any

from ._prompt import InvalidPromptError, data_url, media_type, tool_input_json, tool_output_text

__all__ = ["cohere_tools", "convert_to_cohere_messages"]


def _document(part: dict[str, Any]) -> dict[str, Any]:
    mt = media_type(part)
    if not (mt.startswith("text/") or mt == "application/json"):
        raise InvalidPromptError(
            f"Cohere documents must be text/* or application/json, got a file part of type {mt!r}"
        )
    data = part.get("data")
    if isinstance(data, bytes | bytearray | memoryview):
        text = bytes(data).decode("utf-8")
    elif isinstance(data, str) and not data.startswith(("http://", "https://", "data:")):
        try:  # the V2 prompt carries file data as base64 text
            text = base64.b64decode(data, validate=True).decode("utf-8")
        except ValueError:
            text = data
    else:
        raise InvalidPromptError("Cohere documents need the file's content, not a URL")
    doc: dict[str, Any] = {"text": text}
    if part.get("filename"):
        doc["title"] = part["filename"]
    return {"data": doc}


def _user(content: Any, documents: list[dict[str, Any]]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "text", "text": content}] if isinstance(content, str) else content
    items: list[dict[str, Any]] = []
    has_image = False
    for part in parts:
        kind = part.get("type")
        if kind == "text":
            if part.get("text"):
                items.append({"type": "text", "text": part["text"]})
        elif kind in ("file", "image"):
            if kind == "image":
                part = {**part, "data": part.get("image"), "mediaType": part.get("mediaType") or "image/jpeg"}
            if media_type(part).startswith("image/"):
                has_image = True
                items.append({"type": "image_url", "image_url": {"url": data_url(part)}})
            else:
                documents.append(_document(part))
        else:
            raise InvalidPromptError(f"unsupported user content part {kind!r} for Cohere")
    if has_image:
        return {"role": "user", "content": items}
    return {"role": "user", "content": "".join(i["text"] for i in items)}


def _assistant(content: Any) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "text", "text": content}] if isinstance(content, str) else content
    text = ""
    calls: list[dict[str, Any]] = []
    for part in parts:
        if part.get("type") == "text":
            text += part.get("text", "")
        elif part.get("type") == "tool-call" and not part.get("providerExecuted"):
            calls.append(
                {
                    "id": part["toolCallId"],
                    "type": "function",
                    "function": {"name": part["toolName"], "arguments": tool_input_json(part.get("input"))},
                }
            )
    if calls:
        return {"role": "assistant", "tool_calls": calls}
    return {"role": "assistant", "content": text}


def convert_to_cohere_messages(
    prompt: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(messages, documents)`` for a v2 ``/chat`` body."""
    messages: list[dict[str, Any]] = []
    documents: list[dict[str, Any]] = []
    for message in prompt:
        role = message.get("role")
        content = message.get("content")
        if role == "system":
            messages.append({"role": "system", "content": content})
        elif role == "user":
            messages.append(_user(content, documents))
        elif role == "assistant":
            messages.append(_assistant(content))
        elif role == "tool":
            for part in content or []:
                if part.get("type") == "tool-result":
                    text, _ = tool_output_text(part)
                    messages.append({"role": "tool", "content": text, "tool_call_id": part["toolCallId"]})
        else:
            raise InvalidPromptError(f"unsupported message role {role!r}")
    return messages, documents


def cohere_tools(
    tools: list[dict[str, Any]], choice: dict[str, Any] | None, warnings: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], str | None]:
    """``(tools, tool_choice)``: function tools in the OpenAI shape; ``NONE`` / ``REQUIRED`` choices
    (a named tool is ``REQUIRED`` with only that tool sent); provider-defined tools are unsupported."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        if tool.get("type", "function") != "function":
            warnings.append({"type": "unsupported-tool", "tool": tool})
            continue
        fn: dict[str, Any] = {
            "name": tool["name"],
            "parameters": tool.get("inputSchema") or {"type": "object"},
        }
        if tool.get("description"):
            fn["description"] = tool["description"]
        out.append({"type": "function", "function": fn})
    kind = (choice or {}).get("type")
    if not out or kind in (None, "auto"):
        return out, None
    if kind == "none":
        return out, "NONE"
    if kind == "required":
        return out, "REQUIRED"
    if kind == "tool":
        assert choice is not None
        return [t for t in out if t["function"]["name"] == choice.get("toolName")], "REQUIRED"
    raise InvalidPromptError(f"unsupported tool choice {choice!r} for Cohere")
