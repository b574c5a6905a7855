"""OpenAI Responses API (``POST {base}/responses`` with ``stream: true``) and compatible servers.

Behaviour follows ``@ai-sdk/openai`` ``openai-responses-language-model.ts``: text blocks are keyed by
the message item id (with ``providerMetadata.openai.itemId``); reasoning blocks by
``"{item_id}:{summary_index}"`` with ``itemId`` and ``reasoningEncryptedContent``; function calls
stream as ``tool-input-*`` keyed by ``call_id`` and complete at ``output_item.done``; the built-in web
search becomes a provider-executed ``tool-call`` + ``tool-result``; ``url_citation`` annotations become
``source`` parts; ``response.completed`` / ``response.incomplete`` give usage and the finish reason.
Raw reasoning text (``response.reasoning_text.delta``, DeepSeek / OpenRouter) is streamed like a
summary. Streams that end with ``data: [DONE]`` (OpenRouter) are accepted.
"""

from __future__ import annotations

from typing import Any

from typing_extensions import Unpack

from ._base import CallOptions, FinishReason, ResponseMetadataPart, SourcePart, StreamPart
from ._http import TransportOptions, _HTTPStreamingModel, _Transformer, call_settings, iso_timestamp
from ._prompt import (
    InvalidPromptError,
    camel_to_snake,
    data_url,
    media_type,
    provider_opts,
    tool_input_json,
    tool_output_text,
)

__all__ = ["OpenAIResponsesModel", "convert_to_openai_responses_input"]

# call option -> wire name; None: the API has no such setting (a warning when given)
_SETTINGS: dict[str, str | None] = {
    "max_output_tokens": "max_output_tokens",
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": None,
    "seed": None,
    "stop_sequences": None,
    "presence_penalty": None,
    "frequency_penalty": None,
}


def _user_part(part: dict[str, Any]) -> dict[str, Any]:
    kind = part.get("type")
    if kind == "text":
        return {"type": "input_text", "text": part["text"]}
    if kind in ("file", "image"):
        if kind == "image":
            part = {**part, "data": part.get("image"), "mediaType": part.get("mediaType") or "image/jpeg"}
        mt = media_type(part)
        if mt.startswith("image/"):
            return {"type": "input_image", "image_url": data_url(part)}
        if mt == "application/pdf":
            return {
                "type": "input_file",
                "filename": part.get("filename") or "document.pdf",
                "file_data": data_url(part),
            }
        raise InvalidPromptError(f"file parts with media type {mt!r} are not supported by the Responses API")
    raise InvalidPromptError(f"unsupported user content part {kind!r}")


def convert_to_openai_responses_input(
    prompt: list[dict[str, Any]], *, system_role: str = "system"
) -> list[dict[str, Any]]:
    """AI SDK V2 prompt → Responses ``input`` items."""
    items: list[dict[str, Any]] = []
    for message in prompt:
        role = message.get("role")
        content: Any = message.get("content")
        if role == "system":
            items.append({"role": system_role, "content": content})
        elif role == "user":
            parts: Any = [{"type": "text", "text": content}] if isinstance(content, str) else content
            items.append({"role": "user", "content": [_user_part(p) for p in parts]})
        elif role == "assistant":
            parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
            reasoning: dict[str, dict[str, Any]] = {}
            for part in parts:
                kind = part.get("type")
                opts = provider_opts(part, "openai")
                if kind == "text":
                    item: dict[str, Any] = {
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": part.get("text", "")}],
                    }
                    if opts.get("itemId"):
                        item["id"] = opts["itemId"]
                    items.append(item)
                elif kind == "tool-call" and not part.get("providerExecuted"):
                    item = {
                        "type": "function_call",
                        "call_id": part["toolCallId"],
                        "name": part["toolName"],
                        "arguments": tool_input_json(part.get("input")),
                    }
                    if opts.get("itemId"):
                        item["id"] = opts["itemId"]
                    items.append(item)
                elif kind == "reasoning" and opts.get("itemId"):
                    item_id = opts["itemId"]
                    existing = reasoning.get(item_id)
                    if existing is None:
                        existing = {"type": "reasoning", "id": item_id, "summary": []}
                        if opts.get("reasoningEncryptedContent"):
                            existing["encrypted_content"] = opts["reasoningEncryptedContent"]
                        reasoning[item_id] = existing
                        items.append(existing)
                    if part.get("text"):
                        existing["summary"].append({"type": "summary_text", "text": part["text"]})
        elif role == "tool":
            for part in content:
                if part.get("type") == "tool-result":
                    text, _ = tool_output_text(part)
                    items.append(
                        {"type": "function_call_output", "call_id": part["toolCallId"], "output": text}
                    )
        else:
            raise InvalidPromptError(f"unsupported message role {role!r}")
    return items


class _ResponsesTransformer(_Transformer):
    end_marker = "response.completed"

    def __init__(self, model: OpenAIResponsesModel) -> None:
        self._model = model
        self._gen_id = model._generate_id
        self.finish_reason: FinishReason = "unknown"
        self.usage: dict[str, Any] | None = None
        self.response_id: str | None = None
        self.service_tier: str | None = None
        self.has_function_call = False
        self.errored = False
        self.completed = False
        self.calls: dict[int, dict[str, Any]] = {}
        self.reasoning: dict[str, dict[str, Any]] = {}
        self.logprobs: list[Any] = []

    def invalid_chunk(self) -> None:
        self.errored = True

    @property
    def ended(self) -> bool:
        return self.completed or self.errored

    def _reasoning_meta(self, item_id: str) -> dict[str, Any]:
        state = self.reasoning.get(item_id) or {}
        return {"openai": {"itemId": item_id, "reasoningEncryptedContent": state.get("encrypted")}}

    def feed(self, event: str, value: Any) -> list[StreamPart]:
        kind = value.get("type") if isinstance(value, dict) else None
        if kind == "response.output_text.delta":
            if value.get("logprobs"):
                self.logprobs.append(value["logprobs"])
            return [{"type": "text-delta", "id": value["item_id"], "delta": value.get("delta", "")}]
        if kind == "response.function_call_arguments.delta":
            call = self.calls.get(value.get("output_index", -1))
            if call is None or not value.get("delta"):
                return []
            return [{"type": "tool-input-delta", "id": call["toolCallId"], "delta": value["delta"]}]
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            item_id = value["item_id"]
            index = value.get("summary_index", 0) if kind.startswith("response.reasoning_summary") else 0
            out: list[StreamPart] = []
            state = self.reasoning.setdefault(item_id, {"encrypted": None, "parts": [0]})
            if index not in state["parts"]:
                state["parts"].append(index)
                out.append(
                    {
                        "type": "reasoning-start",
                        "id": f"{item_id}:{index}",
                        "providerMetadata": self._reasoning_meta(item_id),
                    }
                )
            out.append(
                {
                    "type": "reasoning-delta",
                    "id": f"{item_id}:{index}",
                    "delta": value.get("delta", ""),
                    "providerMetadata": {"openai": {"itemId": item_id}},
                }
            )
            return out
        if kind == "response.reasoning_summary_part.added":
            item_id = value["item_id"]
            index = value.get("summary_index", 0)
            state = self.reasoning.setdefault(item_id, {"encrypted": None, "parts": [0]})
            if index in state["parts"]:
                return []
            state["parts"].append(index)
            return [
                {
                    "type": "reasoning-start",
                    "id": f"{item_id}:{index}",
                    "providerMetadata": self._reasoning_meta(item_id),
                }
            ]
        if kind == "response.output_item.added":
            return self._item_added(value["output_index"], value["item"])
        if kind == "response.output_item.done":
            return self._item_done(value["output_index"], value["item"])
        if kind == "response.output_text.annotation.added":
            annotation = value.get("annotation") or {}
            if annotation.get("type") == "url_citation":
                source: SourcePart = {
                    "type": "source",
                    "sourceType": "url",
                    "id": self._gen_id(),
                    "url": annotation.get("url"),
                }
                if annotation.get("title"):
                    source["title"] = annotation["title"]
                return [source]
            return []
        if kind in ("response.created", "response.in_progress", "response.queued"):
            response = value.get("response") or {}
            if kind != "response.created" or self.response_id is not None:
                return []
            self.response_id = response.get("id")
            meta: ResponseMetadataPart = {"type": "response-metadata"}
            if response.get("id"):
                meta["id"] = response["id"]
            if response.get("created_at"):
                meta["timestamp"] = iso_timestamp(response["created_at"])
            if response.get("model"):
                meta["modelId"] = response["model"]
            return [meta]
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            self.completed = True
            response = value.get("response") or {}
            self.response_id = response.get("id") or self.response_id
            self.usage = response.get("usage") or self.usage
            self.service_tier = response.get("service_tier")
            reason = (response.get("incomplete_details") or {}).get("reason")
            self.finish_reason = self._map_finish(reason)
            if kind == "response.failed":
                self.errored = True
                err = response.get("error") or {"message": "response failed"}
                return [self._error_part(err)]
            return []
        if kind == "error" or event == "error":
            self.errored = True
            return [self._error_part(value.get("error", value) if isinstance(value, dict) else value)]
        return []

    def _error_part(self, err: Any) -> StreamPart:
        message = err.get("message") if isinstance(err, dict) else str(err)
        error = self._model._error(
            str(message or "stream error"), self._model._url, retryable=False, data=err
        )
        return {"type": "error", "error": error}

    def _map_finish(self, reason: str | None) -> FinishReason:
        if reason is None:
            return "tool-calls" if self.has_function_call else "stop"
        if reason == "max_output_tokens":
            return "length"
        if reason == "content_filter":
            return "content-filter"
        return "tool-calls" if self.has_function_call else "unknown"

    def _item_added(self, index: int, item: dict[str, Any]) -> list[StreamPart]:
        kind = item.get("type")
        if kind == "function_call":
            self.calls[index] = {"toolCallId": item["call_id"], "toolName": item["name"]}
            return [{"type": "tool-input-start", "id": item["call_id"], "toolName": item["name"]}]
        if kind == "web_search_call":
            self.calls[index] = {"toolCallId": item["id"], "toolName": "web_search"}
            return [
                {
                    "type": "tool-input-start",
                    "id": item["id"],
                    "toolName": "web_search",
                    "providerExecuted": True,
                }
            ]
        if kind == "message":
            return [
                {
                    "type": "text-start",
                    "id": item["id"],
                    "providerMetadata": {"openai": {"itemId": item["id"]}},
                }
            ]
        if kind == "reasoning":
            self.reasoning[item["id"]] = {"encrypted": item.get("encrypted_content"), "parts": [0]}
            return [
                {
                    "type": "reasoning-start",
                    "id": f"{item['id']}:0",
                    "providerMetadata": self._reasoning_meta(item["id"]),
                }
            ]
        return []

    def _item_done(self, index: int, item: dict[str, Any]) -> list[StreamPart]:
        kind = item.get("type")
        if kind == "function_call":
            self.calls.pop(index, None)
            self.has_function_call = True
            return [
                {"type": "tool-input-end", "id": item["call_id"]},
                {
                    "type": "tool-call",
                    "toolCallId": item["call_id"],
                    "toolName": item["name"],
                    "input": item.get("arguments") or "{}",
                    "providerMetadata": {"openai": {"itemId": item["id"]}},
                },
            ]
        if kind == "web_search_call":
            self.calls.pop(index, None)
            action = item.get("action")
            return [
                {"type": "tool-input-end", "id": item["id"]},
                {
                    "type": "tool-call",
                    "toolCallId": item["id"],
                    "toolName": "web_search",
                    "input": tool_input_json({"action": action} if action else {}),
                    "providerExecuted": True,
                },
                {
                    "type": "tool-result",
                    "toolCallId": item["id"],
                    "toolName": "web_search",
                    "result": {"status": item.get("status")},
                    "providerExecuted": True,
                },
            ]
        if kind == "message":
            return [{"type": "text-end", "id": item["id"]}]
        if kind == "reasoning":
            state = self.reasoning.pop(item["id"], {"parts": [0]})
            encrypted = item.get("encrypted_content")
            meta = {"openai": {"itemId": item["id"], "reasoningEncryptedContent": encrypted}}
            return [
                {"type": "reasoning-end", "id": f"{item['id']}:{i}", "providerMetadata": meta}
                for i in state["parts"]
            ]
        return []

    def finish(self) -> list[StreamPart]:
        usage: dict[str, Any] = {"inputTokens": None, "outputTokens": None, "totalTokens": None}
        if self.usage:
            inp = self.usage.get("input_tokens")
            outp = self.usage.get("output_tokens")
            usage = {
                "inputTokens": inp,
                "outputTokens": outp,
                "totalTokens": self.usage.get("total_tokens", (inp or 0) + (outp or 0)),
            }
            reasoning = (self.usage.get("output_tokens_details") or {}).get("reasoning_tokens")
            if reasoning is not None:
                usage["reasoningTokens"] = reasoning
            cached = (self.usage.get("input_tokens_details") or {}).get("cached_tokens")
            if cached is not None:
                usage["cachedInputTokens"] = cached
        meta: dict[str, Any] = {"responseId": self.response_id}
        if self.logprobs:
            meta["logprobs"] = self.logprobs
        if self.service_tier:
            meta["serviceTier"] = self.service_tier
        return [
            {
                "type": "finish",
                "finishReason": "error" if self.errored else self.finish_reason,
                "usage": usage,
                "providerMetadata": {"openai": meta},
            }
        ]


_RESPONSES_OPTIONS = {
    "reasoningEffort": ("reasoning", "effort"),
    "reasoningSummary": ("reasoning", "summary"),
    "textVerbosity": ("text", "verbosity"),
}


def responses_text_format(response_format: Any, strict: bool) -> dict[str, Any] | None:
    """``responseFormat`` → Responses ``text.format`` (``@ai-sdk/openai`` responses ``getArgs``)."""
    if not isinstance(response_format, dict) or response_format.get("type") != "json":
        return None
    schema = response_format.get("schema")
    if schema is None:
        return {"type": "json_object"}
    out: dict[str, Any] = {
        "type": "json_schema",
        "strict": strict,
        "name": response_format.get("name") or "response",
    }
    if response_format.get("description"):
        out["description"] = response_format["description"]
    out["schema"] = schema
    return out


class OpenAIResponsesModel(_HTTPStreamingModel):
    """OpenAI Responses API model (``/responses``); see ``OpenAIChatModel`` for the shared settings.

    Provider options under ``"openai"``: ``reasoningEffort``, ``reasoningSummary``,
    ``previousResponseId``, ``include``, ``store``, ``instructions``, ``parallelToolCalls``, ``user``,
    ``serviceTier`` … (snake_cased into the body). Tools of type ``provider-defined`` with id
    ``openai.web_search`` / ``openai.web_search_preview`` are sent as built-in tools.
    """

    def __init__(
        self,
        model_id: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        provider: str = "openai.responses",
        system_role: str = "system",
        **transport: Unpack[TransportOptions],
    ) -> None:
        super().__init__(
            model_id,
            provider=provider,
            base_url=base_url,
            api_key=api_key,
            **transport,
        )
        self.system_role = system_role
        self._url = f"{self.base_url}/responses"

    def _auth_headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def _request(self, options: CallOptions) -> tuple[str, str, dict[str, Any] | None, list[dict[str, Any]]]:
        warnings: list[dict[str, Any]] = []
        body: dict[str, Any] = {
            "model": self.model_id,
            "input": convert_to_openai_responses_input(
                options.get("prompt") or [], system_role=self.system_role
            ),
            "stream": True,
        }
        body.update(call_settings(options, _SETTINGS, warnings))
        tools = options.get("tools") or []
        if tools:
            out: list[dict[str, Any]] = []
            for tool in tools:
                if tool.get("type", "function") == "function":
                    entry: dict[str, Any] = {
                        "type": "function",
                        "name": tool["name"],
                        "parameters": tool.get("inputSchema") or {"type": "object"},
                    }
                    if tool.get("description"):
                        entry["description"] = tool["description"]
                    out.append(entry)
                elif tool.get("type") == "provider-defined":
                    out.append(
                        {
                            "type": tool["id"].split(".", 1)[-1],
                            **{camel_to_snake(k): v for k, v in (tool.get("args") or {}).items()},
                        }
                    )
                else:
                    warnings.append({"type": "unsupported-tool", "tool": tool})
            body["tools"] = out
            choice = options.get("tool_choice")
            if choice:
                kind = choice.get("type")
                if kind in ("auto", "none", "required"):
                    body["tool_choice"] = kind
                elif kind == "tool":
                    body["tool_choice"] = {"type": "function", "name": choice["toolName"]}
        extra = dict((options.get("provider_options") or {}).get("openai") or {})
        text_format = responses_text_format(
            options.get("response_format"), bool(extra.pop("strictJsonSchema", False))
        )
        if text_format is not None:
            body["text"] = {"format": text_format}
        for key, value in extra.items():
            if key in _RESPONSES_OPTIONS:
                outer, inner = _RESPONSES_OPTIONS[key]
                body.setdefault(outer, {})[inner] = value
            else:
                body[camel_to_snake(key)] = value
        return "POST", self._url, body, warnings

    def _transformer(self, options: CallOptions) -> _Transformer:
        return _ResponsesTransformer(self)
