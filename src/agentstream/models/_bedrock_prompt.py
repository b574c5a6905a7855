"""AI SDK V2 prompts and tools → the Bedrock Converse API's ``messages`` / ``system`` / ``toolConfig``.

Behaviour follows ``@ai-sdk/amazon-bedrock`` (``convert-to-bedrock-chat-messages.ts``,
``bedrock-prepare-tools.ts``): system messages lead the prompt as ``system`` blocks; consecutive
user and tool turns merge into one ``user`` message (tool results are ``toolResult`` blocks);
reasoning with its signature is replayed as ``reasoningContent``; files are ``image`` / ``document``
blocks carrying their bytes.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ._prompt import InvalidPromptError, file_data, media_type, provider_opts

__all__ = ["bedrock_tool_config", "convert_to_bedrock_messages"]

_json_decode = msgspec.json.Decoder().decode
_IMAGE_FORMATS = {"image/jpeg": "jpeg", "image/png": "png", "image/gif": "gif", "image/webp": "webp"}
_DOCUMENT_FORMATS = {
    "application/pdf": "pdf",
    "text/csv": "csv",
    "text/plain": "txt",
    "text/html": "html",
    "text/markdown": "md",
    "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
}


def _file_block(part: dict[str, Any]) -> dict[str, Any]:
    mime = media_type(part)
    how, data = file_data(part)
    if how == "url":
        raise InvalidPromptError("Bedrock takes files as bytes, not URLs: download the file first")
    if mime in _IMAGE_FORMATS:
        return {"image": {"format": _IMAGE_FORMATS[mime], "source": {"bytes": data}}}
    if mime in _DOCUMENT_FORMATS:
        name = part.get("filename") or "document"
        return {"document": {"format": _DOCUMENT_FORMATS[mime], "name": name, "source": {"bytes": data}}}
    raise InvalidPromptError(f"file parts with media type {mime!r} are not supported by Bedrock")


def _user_blocks(content: Any) -> list[dict[str, Any]]:
    parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
    blocks: list[dict[str, Any]] = []
    for part in parts:
        kind = part.get("type")
        if kind == "text":
            blocks.append({"text": part["text"]})
        elif kind in ("file", "image"):
            if kind == "image":
                part = {**part, "data": part.get("image"), "mediaType": part.get("mediaType") or "image/jpeg"}
            blocks.append(_file_block(part))
        else:
            raise InvalidPromptError(f"unsupported user content part {kind!r} for Bedrock")
    return blocks


def _tool_result(part: dict[str, Any]) -> dict[str, Any]:
    output = part.get("output")
    kind = output.get("type") if isinstance(output, dict) else None
    value = output.get("value") if isinstance(output, dict) else part.get("result", output)
    content: list[dict[str, Any]]
    if kind in ("text", "error-text"):
        content = [{"text": str(value)}]
    elif kind == "content":
        content = [{"text": str(i.get("text", ""))} for i in value or [] if i.get("type") == "text"]
    else:
        content = (
            [{"json": value}] if isinstance(value, dict) else [{"text": msgspec.json.encode(value).decode()}]
        )
    block: dict[str, Any] = {"toolUseId": part["toolCallId"], "content": content}
    if kind in ("error-text", "error-json"):
        block["status"] = "error"
    return {"toolResult": block}


def _assistant_blocks(content: Any) -> list[dict[str, Any]]:
    parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
    blocks: list[dict[str, Any]] = []
    for part in parts:
        kind = part.get("type")
        if kind == "text" and part.get("text"):
            blocks.append({"text": part["text"]})
        elif kind == "reasoning":
            opts = provider_opts(part, "bedrock")
            if opts.get("signature"):
                text = {"text": part.get("text", ""), "signature": opts["signature"]}
                blocks.append({"reasoningContent": {"reasoningText": text}})
            elif opts.get("redactedData"):
                blocks.append({"reasoningContent": {"redactedContent": opts["redactedData"]}})
            # reasoning without a signature cannot be replayed to Bedrock: dropped
        elif kind == "tool-call" and not part.get("providerExecuted"):
            value = part.get("input")
            if isinstance(value, str):
                value = _json_decode(value) if value else {}
            blocks.append(
                {"toolUse": {"toolUseId": part["toolCallId"], "name": part["toolName"], "input": value}}
            )
    return blocks


def convert_to_bedrock_messages(
    prompt: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """AI SDK V2 prompt → (``system`` blocks, ``messages``)."""
    system: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []

    def push(role: str, blocks: list[dict[str, Any]]) -> None:
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})

    for message in prompt:
        role = message.get("role")
        content: Any = message.get("content")
        if role == "system":
            if messages:
                raise InvalidPromptError(
                    "system messages must come before user and assistant messages for Bedrock"
                )
            system.append({"text": content})
        elif role == "user":
            push("user", _user_blocks(content))
        elif role == "tool":
            push("user", [_tool_result(p) for p in content if p.get("type") == "tool-result"])
        elif role == "assistant":
            push("assistant", _assistant_blocks(content))
        else:
            raise InvalidPromptError(f"unsupported message role {role!r}")
    return system, messages


def bedrock_tool_config(
    tools: list[dict[str, Any]], choice: dict[str, Any] | None, warnings: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """Function tools and the tool choice → ``toolConfig`` (``None``: no tools, or ``tool_choice`` none)."""
    kind = (choice or {}).get("type")
    specs: list[dict[str, Any]] = []
    for tool in tools:
        if tool.get("type") == "provider-defined" and str(tool.get("id", "")).startswith("bedrock."):
            # Bedrock's own tools (``nova_code_interpreter``…) run on the server: ``systemTool``.
            specs.append({"systemTool": {"name": str(tool["id"]).removeprefix("bedrock.")}})
            continue
        if tool.get("type", "function") != "function":
            warnings.append({"type": "unsupported-tool", "tool": tool})
            continue
        spec: dict[str, Any] = {
            "name": tool["name"],
            "inputSchema": {"json": tool.get("inputSchema") or {"type": "object"}},
        }
        if tool.get("description"):
            spec["description"] = tool["description"]
        specs.append({"toolSpec": spec})
    if not specs or kind == "none":
        return None
    config: dict[str, Any] = {"tools": specs}
    if kind == "auto":
        config["toolChoice"] = {"auto": {}}
    elif kind == "required":
        config["toolChoice"] = {"any": {}}
    elif kind == "tool":
        config["toolChoice"] = {"tool": {"name": (choice or {})["toolName"]}}
    return config
