"""Anthropic Messages API (``POST {base}/messages`` with ``stream: true``).

Behaviour follows ``@ai-sdk/anthropic`` ``anthropic-messages-language-model.ts``: block ids are the
content-block ``index`` as a string; thinking signatures arrive as an empty ``reasoning-delta`` with
``providerMetadata.anthropic.signature``; redacted thinking is a ``reasoning-start`` carrying
``providerMetadata.anthropic.redactedData``; client ``tool_use`` blocks become ``tool-input-*`` then a
``tool-call`` at ``content_block_stop``; server tools (``server_tool_use``, ``mcp_tool_use``) do the
same with ``providerExecuted: true`` and their result blocks become ``tool-result`` parts (web search
results also become ``source`` parts); ``citations_delta`` web-search citations become ``source``
parts; usage and cache counters land in ``finish.usage`` / ``providerMetadata.anthropic``.
"""

from __future__ import annotations

from typing import Any

import msgspec
from typing_extensions import Unpack

from ._base import (
    CallOptions,
    FinishReason,
    ResponseMetadataPart,
    StreamPart,
    ToolCallPart,
    ToolInputStartPart,
    ToolResultPart,
)
from ._http import TransportOptions, _EndingTransformer, _HTTPStreamingModel, _Transformer, call_settings
from ._prompt import (
    InvalidPromptError,
    camel_to_snake,
    file_data,
    media_type,
    provider_opts,
    tool_output_text,
)

__all__ = ["AnthropicModel", "convert_to_anthropic_messages"]

# call option -> wire name; None: the API has no such setting (a warning when given)
_SETTINGS: dict[str, str | None] = {
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "stop_sequences": "stop_sequences",
    "seed": None,
    "presence_penalty": None,
    "frequency_penalty": None,
}


_json_decode = msgspec.json.Decoder().decode

_STOP: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool-calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content-filter",
}


def map_anthropic_stop_reason(reason: str | None) -> FinishReason:
    return _STOP.get(reason or "", "unknown")


# -- prompt conversion ------------------------------------------------------------------------


def _cache_control(holder: dict[str, Any]) -> dict[str, Any] | None:
    opts = provider_opts(holder, "anthropic")
    value = opts.get("cacheControl") or opts.get("cache_control")
    return value if isinstance(value, dict) else None


def _with_cache(block: dict[str, Any], holder: dict[str, Any]) -> dict[str, Any]:
    cc = _cache_control(holder)
    if cc:
        block["cache_control"] = cc
    return block


def _file_block(part: dict[str, Any]) -> dict[str, Any]:
    mt = media_type(part)
    kind, value = file_data(part)
    if mt.startswith("image/"):
        source = (
            {"type": "url", "url": value}
            if kind == "url"
            else {"type": "base64", "media_type": mt, "data": value}
        )
        return {"type": "image", "source": source}
    if mt == "application/pdf":
        source = (
            {"type": "url", "url": value}
            if kind == "url"
            else {"type": "base64", "media_type": mt, "data": value}
        )
        return {"type": "document", "source": source}
    if mt == "text/plain" and kind == "base64" and value is not None:
        import base64

        text = base64.b64decode(value).decode("utf-8")
        return {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": text}}
    raise InvalidPromptError(f"file parts with media type {mt!r} are not supported by Anthropic")


def convert_to_anthropic_messages(
    prompt: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]]]:
    """AI SDK V2 prompt → (``system`` blocks, ``messages``); user and tool turns merge into one user turn."""
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
                    "system messages must come before user and assistant messages for Anthropic"
                )
            system.append(_with_cache({"type": "text", "text": content}, message))
        elif role == "user":
            parts: Any = [{"type": "text", "text": content}] if isinstance(content, str) else content
            blocks: list[dict[str, Any]] = []
            for part in parts:
                if part.get("type") == "text":
                    blocks.append(_with_cache({"type": "text", "text": part["text"]}, part))
                elif part.get("type") in ("file", "image"):
                    if part.get("type") == "image":
                        part = {
                            **part,
                            "data": part.get("image"),
                            "mediaType": part.get("mediaType") or "image/jpeg",
                        }
                    blocks.append(_with_cache(_file_block(part), part))
                else:
                    raise InvalidPromptError(f"unsupported user content part {part.get('type')!r}")
            push("user", blocks)
        elif role == "tool":
            blocks = []
            for part in content:
                if part.get("type") != "tool-result":
                    continue
                text, is_error = tool_output_text(part)
                block: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": part["toolCallId"],
                    "content": text,
                }
                if is_error:
                    block["is_error"] = True
                blocks.append(_with_cache(block, part))
            push("user", blocks)
        elif role == "assistant":
            parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
            blocks = []
            for part in parts:
                kind = part.get("type")
                if kind == "text":
                    if part.get("text"):
                        blocks.append(_with_cache({"type": "text", "text": part["text"]}, part))
                elif kind == "reasoning":
                    opts = provider_opts(part, "anthropic")
                    if opts.get("signature"):
                        blocks.append(
                            {
                                "type": "thinking",
                                "thinking": part.get("text", ""),
                                "signature": opts["signature"],
                            }
                        )
                    elif opts.get("redactedData"):
                        blocks.append({"type": "redacted_thinking", "data": opts["redactedData"]})
                    # reasoning without a signature cannot be replayed to Anthropic: dropped
                elif kind == "tool-call":
                    value = part.get("input")
                    if isinstance(value, str):
                        value = _json_decode(value) if value else {}
                    block = {
                        "type": "server_tool_use" if part.get("providerExecuted") else "tool_use",
                        "id": part["toolCallId"],
                        "name": part["toolName"],
                        "input": value,
                    }
                    blocks.append(_with_cache(block, part))
                elif kind == "tool-result":  # provider-executed tool results replayed in assistant turns
                    output = part.get("output") or {}
                    blocks.append(
                        {
                            "type": f"{part['toolName']}_tool_result",
                            "tool_use_id": part["toolCallId"],
                            "content": output.get("value") if isinstance(output, dict) else output,
                        }
                    )
            push("assistant", blocks)
        else:
            raise InvalidPromptError(f"unsupported message role {role!r}")
    return (system or None), messages


# -- stream transformer -------------------------------------------------------------------------


JSON_TOOL_NAME = "json"


def json_response_tool(
    response_format: Any, has_tools: bool, warnings: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """The forced ``json`` tool that stands in for a JSON response format (``@ai-sdk/anthropic`` v2).

    The Messages API has no JSON mode in the AI SDK v2 provider: a schema becomes the only tool,
    ``tool_choice`` forces it, and its streamed input is reported as the answer's text. Without a
    schema the format is ignored (warning); the call's own tools are dropped (warning).
    """
    if not isinstance(response_format, dict) or response_format.get("type") != "json":
        return None
    schema = response_format.get("schema")
    if schema is None:
        warnings.append(
            {
                "type": "unsupported-setting",
                "setting": "responseFormat",
                "details": "JSON response format requires a schema. The response format is ignored.",
            }
        )
        return None
    if has_tools:
        warnings.append(
            {
                "type": "unsupported-setting",
                "setting": "tools",
                "details": "JSON response format does not support tools. The provided tools are ignored.",
            }
        )
    return {
        "name": JSON_TOOL_NAME,
        "description": response_format.get("description") or "Respond with a JSON object.",
        "input_schema": schema,
    }


class _AnthropicTransformer(_EndingTransformer):
    """Messages API events → V2 parts. In ``json_mode`` the forced ``json`` tool's input is the text
    (``text-start``/``-delta``/``-end`` with the block index as id), other text is dropped and
    ``tool_use`` finishes as ``stop``."""

    end_marker = "message_stop"

    def __init__(self, model: AnthropicModel, *, json_mode: bool = False) -> None:
        self._model = model
        self.json_mode = json_mode
        self._gen_id = model._generate_id
        self.blocks: dict[int, dict[str, Any]] = {}
        self.server_tools: dict[str, str] = {}
        self.finish_reason: FinishReason = "unknown"
        self.raw_usage: dict[str, Any] = {}
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.cached: int | None = None
        self.cache_creation: int | None = None
        self.stop_sequence: str | None = None

    def _usage(self, usage: dict[str, Any]) -> None:
        self.raw_usage.update(usage)
        if usage.get("input_tokens") is not None:
            self.input_tokens = usage["input_tokens"]
        if usage.get("output_tokens") is not None:
            self.output_tokens = usage["output_tokens"]
        if usage.get("cache_read_input_tokens") is not None:
            self.cached = usage["cache_read_input_tokens"]
        if usage.get("cache_creation_input_tokens") is not None:
            self.cache_creation = usage["cache_creation_input_tokens"]

    def feed(self, event: str, value: Any) -> list[StreamPart]:
        kind = value.get("type") if isinstance(value, dict) else None
        if kind == "content_block_delta":
            return self._delta(value)
        if kind == "content_block_start":
            return self._start(value["index"], value["content_block"])
        if kind == "content_block_stop":
            return self._stop(value["index"])
        if kind == "message_start":
            message = value.get("message") or {}
            self._usage(message.get("usage") or {})
            meta: ResponseMetadataPart = {"type": "response-metadata"}
            if message.get("id"):
                meta["id"] = message["id"]
            if message.get("model"):
                meta["modelId"] = message["model"]
            return [meta]
        if kind == "message_delta":
            delta = value.get("delta") or {}
            if "stop_reason" in delta:
                self.done = True
                self.finish_reason = map_anthropic_stop_reason(delta.get("stop_reason"))
                if self.json_mode and self.finish_reason == "tool-calls":
                    self.finish_reason = "stop"
                self.stop_sequence = delta.get("stop_sequence")
            self._usage(value.get("usage") or {})
            return []
        if kind == "error" or event == "error":
            self.errored = True
            err = value.get("error", value) if isinstance(value, dict) else value
            message = err.get("message") if isinstance(err, dict) else str(err)
            status = 529 if isinstance(err, dict) and err.get("type") == "overloaded_error" else None
            error = self._model._error(
                str(message or "stream error"),
                self._model._url,
                status=status,
                body=msgspec.json.encode(value).decode(),
                retryable=status == 529,
                data=value,
            )
            return [{"type": "error", "error": error}]
        if kind == "message_stop":
            self.done = True
        return []  # ping, unknown future events

    def _start(self, index: int, block: dict[str, Any]) -> list[StreamPart]:
        kind = block.get("type")
        sid = str(index)
        if self.json_mode and kind in ("text", "tool_use"):
            if kind == "text":  # prose around the JSON tool call is not part of the answer
                return []
            self.blocks[index] = {"type": "text"}
            return [{"type": "text-start", "id": sid}]
        if kind == "text":
            self.blocks[index] = {"type": "text"}
            return [{"type": "text-start", "id": sid}]
        if kind == "thinking":
            self.blocks[index] = {"type": "reasoning"}
            return [{"type": "reasoning-start", "id": sid}]
        if kind == "redacted_thinking":
            self.blocks[index] = {"type": "reasoning"}
            return [
                {
                    "type": "reasoning-start",
                    "id": sid,
                    "providerMetadata": {"anthropic": {"redactedData": block.get("data")}},
                }
            ]
        if kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
            provider_executed = kind != "tool_use"
            initial = block.get("input")
            self.blocks[index] = {
                "type": "tool-call",
                "toolCallId": block["id"],
                "toolName": block["name"],
                "input": "",
                "initial": initial,
                "providerExecuted": provider_executed,
            }
            if provider_executed:
                self.server_tools[block["id"]] = block["name"]
            part: ToolInputStartPart = {
                "type": "tool-input-start",
                "id": block["id"],
                "toolName": block["name"],
            }
            if provider_executed:
                part["providerExecuted"] = True
            return [part]
        if isinstance(kind, str) and kind.endswith("_tool_result") and "tool_use_id" in block:
            return self._tool_result(block)
        return []

    def _tool_result(self, block: dict[str, Any]) -> list[StreamPart]:
        call_id = block["tool_use_id"]
        kind = block["type"]
        tool_name = self.server_tools.get(call_id, kind.removesuffix("_tool_result"))
        content = block.get("content")
        out: list[StreamPart] = []
        is_error = bool(block.get("is_error"))
        result: Any = content
        if kind == "web_search_tool_result" and isinstance(content, list):
            result = []
            for item in content:
                result.append(
                    {
                        "url": item.get("url"),
                        "title": item.get("title"),
                        "pageAge": item.get("page_age"),
                        "encryptedContent": item.get("encrypted_content"),
                        "type": item.get("type"),
                    }
                )
                out.append(
                    {
                        "type": "source",
                        "sourceType": "url",
                        "id": self._gen_id(),
                        "url": item.get("url"),
                        "title": item.get("title"),
                        "providerMetadata": {"anthropic": {"pageAge": item.get("page_age")}},
                    }
                )
        elif isinstance(content, dict) and str(content.get("type", "")).endswith("_error"):
            is_error = True
        part: ToolResultPart = {
            "type": "tool-result",
            "toolCallId": call_id,
            "toolName": tool_name,
            "result": result,
            "providerExecuted": True,
        }
        if is_error:
            part["isError"] = True
        return [part, *out]

    def _delta(self, value: dict[str, Any]) -> list[StreamPart]:
        index = value["index"]
        delta = value.get("delta") or {}
        kind = delta.get("type")
        sid = str(index)
        if kind == "text_delta":
            if self.json_mode and index not in self.blocks:  # prose around the JSON is dropped
                return []
            return [{"type": "text-delta", "id": sid, "delta": delta.get("text", "")}]
        if kind == "thinking_delta":
            return [{"type": "reasoning-delta", "id": sid, "delta": delta.get("thinking", "")}]
        if kind == "signature_delta":
            if self.blocks.get(index, {}).get("type") == "reasoning":
                return [
                    {
                        "type": "reasoning-delta",
                        "id": sid,
                        "delta": "",
                        "providerMetadata": {"anthropic": {"signature": delta.get("signature")}},
                    }
                ]
            return []
        if kind == "input_json_delta":
            block = self.blocks.get(index)
            chunk = delta.get("partial_json") or ""
            if self.json_mode and block is not None and block.get("type") == "text":
                return [{"type": "text-delta", "id": sid, "delta": chunk}] if chunk else []
            if block is None or block.get("type") != "tool-call" or not chunk:
                return []
            block["input"] += chunk
            return [{"type": "tool-input-delta", "id": block["toolCallId"], "delta": chunk}]
        if kind == "citations_delta":
            citation = delta.get("citation") or {}
            if citation.get("type") == "web_search_result_location":
                return [
                    {
                        "type": "source",
                        "sourceType": "url",
                        "id": self._gen_id(),
                        "url": citation.get("url"),
                        "title": citation.get("title"),
                        "providerMetadata": {
                            "anthropic": {
                                "citedText": citation.get("cited_text"),
                                "encryptedIndex": citation.get("encrypted_index"),
                            }
                        },
                    }
                ]
            return []
        return []

    def _stop(self, index: int) -> list[StreamPart]:
        block = self.blocks.pop(index, None)
        if block is None:
            return []
        sid = str(index)
        if block["type"] == "text":
            return [{"type": "text-end", "id": sid}]
        if block["type"] == "reasoning":
            return [{"type": "reasoning-end", "id": sid}]
        call_id = block["toolCallId"]
        text = block["input"]
        if not text:
            initial = block.get("initial")
            text = msgspec.json.encode(initial).decode() if initial else "{}"
        call: ToolCallPart = {
            "type": "tool-call",
            "toolCallId": call_id,
            "toolName": block["toolName"],
            "input": text,
        }
        if block["providerExecuted"]:
            call["providerExecuted"] = True
        return [{"type": "tool-input-end", "id": call_id}, call]

    def finish(self) -> list[StreamPart]:
        out: list[StreamPart] = []
        for index in sorted(self.blocks):  # blocks left open by a truncated stream
            out.extend(self._stop(index))
        usage: dict[str, Any] = {
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "totalTokens": (self.input_tokens or 0) + (self.output_tokens or 0)
            if self.input_tokens is not None or self.output_tokens is not None
            else None,
        }
        if self.cached is not None:
            usage["cachedInputTokens"] = self.cached
        meta: dict[str, Any] = {
            "usage": self.raw_usage,
            "cacheCreationInputTokens": self.cache_creation,
            "stopSequence": self.stop_sequence,
        }
        out.append(
            {
                "type": "finish",
                "finishReason": "error" if self.errored else self.finish_reason,
                "usage": usage,
                "providerMetadata": {"anthropic": meta},
            }
        )
        return out


# -- the model ------------------------------------------------------------------------------------


class AnthropicModel(_HTTPStreamingModel):
    """Anthropic Messages API model.

    **Parameters:** `model_id`; `base_url` (default ``https://api.anthropic.com/v1``); `api_key` (sent as
    ``x-api-key``); `max_output_tokens` default when the call sets none (4096); `anthropic_version`
    header (``2023-06-01``); plus the shared transport settings (see ``OpenAIChatModel``).
    Provider options under ``"anthropic"``: ``thinking`` (``{"type": "enabled", "budgetTokens": n}``)
    and any other key, sent snake_cased in the body (e.g. ``mcpServers`` → ``mcp_servers``).
    """

    def __init__(
        self,
        model_id: str,
        *,
        base_url: str = "https://api.anthropic.com/v1",
        api_key: str | None = None,
        provider: str = "anthropic",
        default_max_tokens: int = 4096,
        anthropic_version: str = "2023-06-01",
        **transport: Unpack[TransportOptions],
    ) -> None:
        super().__init__(
            model_id,
            provider=provider,
            base_url=base_url,
            api_key=api_key,
            **transport,
        )
        self.default_max_tokens = default_max_tokens
        self.anthropic_version = anthropic_version
        self._url = f"{self.base_url}/messages"

    def _auth_headers(self) -> dict[str, str]:
        headers = {"anthropic-version": self.anthropic_version}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

    def _request(self, options: CallOptions) -> tuple[str, str, dict[str, Any] | None, list[dict[str, Any]]]:
        warnings: list[dict[str, Any]] = []
        system, messages = convert_to_anthropic_messages(options.get("prompt") or [])
        body: dict[str, Any] = {
            "model": self.model_id,
            "max_tokens": options.get("max_output_tokens") or self.default_max_tokens,
            "messages": messages,
            "stream": True,
        }
        if system:
            body["system"] = system
        body.update(call_settings(options, _SETTINGS, warnings))
        extra = dict((options.get("provider_options") or {}).get("anthropic") or {})
        thinking = extra.pop("thinking", None)
        if isinstance(thinking, dict) and thinking.get("type") == "enabled":
            budget = thinking.get("budgetTokens", thinking.get("budget_tokens", 1024))
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
            body["max_tokens"] += budget
            for key in ("temperature", "top_p", "top_k"):
                if body.pop(key, None) is not None:
                    warnings.append(
                        {
                            "type": "unsupported-setting",
                            "setting": key,
                            "details": f"{key} is not supported when thinking is enabled",
                        }
                    )
        elif thinking is not None:
            body["thinking"] = thinking
        choice = options.get("tool_choice")
        tools = options.get("tools") or []
        json_tool = json_response_tool(options.get("response_format"), bool(tools), warnings)
        if json_tool is not None:
            body["tools"] = [json_tool]
            body["tool_choice"] = {"type": "tool", "name": json_tool["name"]}
        elif tools and not (choice and choice.get("type") == "none"):
            out_tools: list[dict[str, Any]] = []
            for tool in tools:
                if tool.get("type", "function") == "function":
                    entry: dict[str, Any] = {
                        "name": tool["name"],
                        "input_schema": tool.get("inputSchema") or {"type": "object"},
                    }
                    if tool.get("description"):
                        entry["description"] = tool["description"]
                    out_tools.append(entry)
                elif tool.get("type") == "provider-defined":
                    out_tools.append(
                        {
                            "type": tool["id"].split(".", 1)[-1],
                            "name": tool["name"],
                            **{camel_to_snake(k): v for k, v in (tool.get("args") or {}).items()},
                        }
                    )
            body["tools"] = out_tools
            if choice:
                kind = choice.get("type")
                if kind == "auto":
                    body["tool_choice"] = {"type": "auto"}
                elif kind == "required":
                    body["tool_choice"] = {"type": "any"}
                elif kind == "tool":
                    body["tool_choice"] = {"type": "tool", "name": choice["toolName"]}
        for key, value in extra.items():
            body[camel_to_snake(key)] = value
        return "POST", self._url, body, warnings

    def _transformer(self, options: CallOptions) -> _Transformer:
        json_mode = json_response_tool(options.get("response_format"), False, []) is not None
        return _AnthropicTransformer(self, json_mode=json_mode)
