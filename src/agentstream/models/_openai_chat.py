"""OpenAI Chat Completions (``POST {base}/chat/completions``) and every server that speaks it.

Behaviour follows ``@ai-sdk/openai`` ``openai-chat-language-model.ts`` (text id ``"0"``, tool calls
keyed by ``index`` and completed as soon as their joined arguments parse as JSON, finish reason
``error`` after an in-stream error) plus ``@ai-sdk/openai-compatible`` for reasoning fields:
``delta.reasoning_content`` (DeepSeek, Z.ai, vLLM), ``delta.reasoning`` (OpenRouter, Groq, Ollama),
``delta.reasoning_details`` (OpenRouter, Snowflake), Mistral ``content`` arrays with ``thinking``
parts, and optionally ``<think>…</think>`` inside ``content`` (``parse_think_tags=True``).

Deliberate difference: an empty ``content: ""`` delta opens no text block (the AI SDK would emit a
``text-start`` and an empty ``text-delta``, which Mastra drops anyway).
"""

from __future__ import annotations

from typing import Any

import msgspec
from typing_extensions import Unpack

from ._base import (
    CallOptions,
    FinishReason,
    ReasoningDeltaPart,
    ResponseMetadataPart,
    SourcePart,
    StreamPart,
)
from ._http import TransportOptions, _HTTPStreamingModel, _Transformer, call_settings, iso_timestamp
from ._prompt import (
    InvalidPromptError,
    camel_to_snake,
    data_url,
    file_data,
    media_type,
    tool_input_json,
    tool_output_text,
)

__all__ = ["OpenAIChatModel", "OpenAICompatible", "convert_to_openai_chat_messages"]

# call option -> wire name; None: the API has no such setting (a warning when given)
_SETTINGS: dict[str, str | None] = {
    "max_output_tokens": "max_tokens",
    "temperature": "temperature",
    "top_p": "top_p",
    "seed": "seed",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
    "stop_sequences": "stop",
    "top_k": None,
}


_json_decode = msgspec.json.Decoder().decode

_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "content_filter": "content-filter",
    "function_call": "tool-calls",
    "tool_calls": "tool-calls",
}


def map_openai_finish_reason(reason: str | None) -> FinishReason:
    return _FINISH.get(reason or "", "unknown")


def _parsable(text: str) -> bool:
    try:
        _json_decode(text)
    except msgspec.DecodeError:
        return False
    return True


# -- prompt conversion ------------------------------------------------------------------------


def _user_part(part: dict[str, Any]) -> dict[str, Any]:
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "text": part["text"]}
    if kind in ("file", "image"):
        mt = media_type(part) if kind == "file" else str(part.get("mediaType") or "image/jpeg")
        if kind == "image" or mt.startswith("image/"):
            if kind == "image":
                part = {**part, "data": part.get("image", part.get("data")), "mediaType": mt}
            image_url: dict[str, Any] = {"url": data_url(part)}
            detail = (part.get("providerOptions") or {}).get("openai", {}).get("imageDetail")
            if detail:
                image_url["detail"] = detail
            return {"type": "image_url", "image_url": image_url}
        if mt in ("audio/wav", "audio/mp3", "audio/mpeg"):
            kind_, value = file_data(part)
            if kind_ == "url":
                raise InvalidPromptError("audio file parts must carry inline data, not a URL")
            return {
                "type": "input_audio",
                "input_audio": {"data": value, "format": "wav" if mt == "audio/wav" else "mp3"},
            }
        if mt == "application/pdf":
            kind_, value = file_data(part)
            if kind_ == "url" and value is not None and not value.startswith("data:"):
                raise InvalidPromptError("PDF file parts must carry inline data, not a URL")
            return {
                "type": "file",
                "file": {"filename": part.get("filename") or "document.pdf", "file_data": data_url(part)},
            }
        raise InvalidPromptError(f"file parts with media type {mt!r} are not supported by chat completions")
    raise InvalidPromptError(f"unsupported user content part {kind!r}")


def convert_to_openai_chat_messages(
    prompt: list[dict[str, Any]], *, system_role: str = "system", send_reasoning: bool = False
) -> list[dict[str, Any]]:
    """AI SDK V2 prompt → Chat Completions ``messages``."""
    messages: list[dict[str, Any]] = []
    for message in prompt:
        role = message.get("role")
        content: Any = message.get("content")
        if role == "system":
            messages.append({"role": system_role, "content": content if isinstance(content, str) else ""})
        elif role == "user":
            if isinstance(content, str):
                messages.append({"role": "user", "content": content})
            elif len(content) == 1 and content[0].get("type") == "text":
                messages.append({"role": "user", "content": content[0]["text"]})
            else:
                messages.append({"role": "user", "content": [_user_part(p) for p in content]})
        elif role == "assistant":
            text = ""
            reasoning = ""
            tool_calls: list[dict[str, Any]] = []
            for part in [{"type": "text", "text": content}] if isinstance(content, str) else content:
                kind = part.get("type")
                if kind == "text":
                    text += part.get("text", "")
                elif kind == "reasoning":
                    reasoning += part.get("text", "")
                elif kind == "tool-call" and not part.get("providerExecuted"):
                    tool_calls.append(
                        {
                            "id": part["toolCallId"],
                            "type": "function",
                            "function": {
                                "name": part["toolName"],
                                "arguments": tool_input_json(part.get("input")),
                            },
                        }
                    )
            out: dict[str, Any] = {"role": "assistant", "content": text or (None if tool_calls else "")}
            if tool_calls:
                out["tool_calls"] = tool_calls
            if send_reasoning and reasoning:
                out["reasoning_content"] = reasoning
            messages.append(out)
        elif role == "tool":
            for part in content:
                if part.get("type") != "tool-result":
                    continue
                text_value, _ = tool_output_text(part)
                messages.append({"role": "tool", "tool_call_id": part["toolCallId"], "content": text_value})
        else:
            raise InvalidPromptError(f"unsupported message role {role!r}")
    return messages


def _tools(options: CallOptions, warnings: list[dict[str, Any]]) -> tuple[list[dict[str, Any]] | None, Any]:
    tools = options.get("tools") or []
    choice = options.get("tool_choice")
    if not tools:
        return None, None
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
    mapped: Any = None
    if choice:
        kind = choice.get("type")
        if kind in ("auto", "none", "required"):
            mapped = kind
        elif kind == "tool":
            mapped = {"type": "function", "function": {"name": choice["toolName"]}}
    return out or None, mapped


# -- stream transformer -------------------------------------------------------------------------


class _ThinkSplitter:
    """Splits streamed ``content`` into (is_reasoning, text) pieces around ``<think>`` tags."""

    OPEN, CLOSE = "<think>", "</think>"

    def __init__(self) -> None:
        self.inside = False
        self.pending = ""

    def feed(self, text: str) -> list[tuple[bool, str]]:
        buf = self.pending + text
        self.pending = ""
        out: list[tuple[bool, str]] = []
        while buf:
            tag = self.CLOSE if self.inside else self.OPEN
            pos = buf.find(tag)
            if pos >= 0:
                if pos:
                    out.append((self.inside, buf[:pos]))
                buf = buf[pos + len(tag) :]
                self.inside = not self.inside
                continue
            # keep a possible partial tag at the end for the next delta
            keep = 0
            for n in range(min(len(tag) - 1, len(buf)), 0, -1):
                if tag.startswith(buf[-n:]):
                    keep = n
                    break
            if len(buf) > keep:
                out.append((self.inside, buf[: len(buf) - keep]))
            self.pending = buf[len(buf) - keep :]
            break
        return out

    def flush(self) -> list[tuple[bool, str]]:
        rest, self.pending = self.pending, ""
        return [(self.inside, rest)] if rest else []


class _ChatTransformer(_Transformer):
    def __init__(self, model: OpenAIChatModel) -> None:
        self._model = model
        self._key = model.provider_key
        self._gen_id = model._generate_id
        self.finish_reason: FinishReason = "unknown"
        self.saw_finish = False
        self.usage: dict[str, Any] | None = None
        self.metadata_sent = False
        self.text_open = False
        self.reasoning_open = False
        self.tool_calls: dict[int, dict[str, Any]] = {}
        self.provider_metadata: dict[str, Any] = {}
        self.think = _ThinkSplitter() if model.parse_think_tags else None

    def invalid_chunk(self) -> None:
        self.finish_reason = "error"

    @property
    def ended(self) -> bool:
        return self.saw_finish or self.finish_reason == "error"

    def _stream_error(self, err: Any, status: int | None) -> StreamPart:
        message = err.get("message") if isinstance(err, dict) else str(err)
        code = err.get("code") if isinstance(err, dict) else None
        if isinstance(err, dict) and isinstance(err.get("status_code"), int):
            status = err["status_code"]
        elif isinstance(code, int):
            status = code
        error = self._model._error(
            str(message or "stream error"),
            self._model._url,
            status=status,
            body=msgspec.json.encode(err).decode() if err is not None else None,
            retryable=False,
            data=err,
        )
        return {"type": "error", "error": error}

    def _reasoning(self, out: list[StreamPart], text: str, metadata: dict[str, Any] | None = None) -> None:
        if not text and metadata is None:
            return
        if self.text_open:  # reasoning after text: close text, open a new reasoning block
            out.append({"type": "text-end", "id": "0"})
            self.text_open = False
        if not self.reasoning_open:
            out.append({"type": "reasoning-start", "id": "reasoning-0"})
            self.reasoning_open = True
        part: ReasoningDeltaPart = {"type": "reasoning-delta", "id": "reasoning-0", "delta": text}
        if metadata is not None:
            part["providerMetadata"] = metadata
        out.append(part)

    def _text(self, out: list[StreamPart], text: str) -> None:
        if not text:
            return
        if self.reasoning_open:
            out.append({"type": "reasoning-end", "id": "reasoning-0"})
            self.reasoning_open = False
        if not self.text_open:
            out.append({"type": "text-start", "id": "0"})
            self.text_open = True
        out.append({"type": "text-delta", "id": "0", "delta": text})

    def _content(self, out: list[StreamPart], text: str) -> None:
        if self.think is None:
            self._text(out, text)
            return
        for is_reasoning, piece in self.think.feed(text):
            (self._reasoning if is_reasoning else self._text)(out, piece)

    def feed(self, event: str, value: Any) -> list[StreamPart]:
        out: list[StreamPart] = []
        if not isinstance(value, dict):
            self.finish_reason = "error"
            return [self._stream_error({"message": f"unexpected stream event: {value!r}"}, None)]
        if event == "error" or value.get("error") is not None:
            # Groq: `event: error`; OpenRouter: a chunk with a top-level `error` object.
            self.finish_reason = "error"
            out.append(self._stream_error(value.get("error", value), None))
            # OpenRouter's error chunk also carries usage; keep it.
            if isinstance(value.get("usage"), dict):
                self.usage = value["usage"]
            return out

        if not self.metadata_sent:
            meta: ResponseMetadataPart = {"type": "response-metadata"}
            if value.get("id"):
                meta["id"] = value["id"]
            if value.get("created"):
                meta["timestamp"] = iso_timestamp(value["created"])
            if value.get("model"):
                meta["modelId"] = value["model"]
            if len(meta) > 1:
                self.metadata_sent = True
                out.append(meta)

        usage = value.get("usage")
        if usage is None:
            x_groq = value.get("x_groq")
            if isinstance(x_groq, dict):
                usage = x_groq.get("usage")
        if isinstance(usage, dict):
            self.usage = usage

        choices = value.get("choices") or ()
        if not choices:
            return out
        choice = choices[0]
        if choice.get("finish_reason") is not None:
            self.saw_finish = True
            self.finish_reason = map_openai_finish_reason(choice["finish_reason"])
        logprobs = choice.get("logprobs")
        if isinstance(logprobs, dict) and logprobs.get("content"):
            self.provider_metadata.setdefault("logprobs", []).extend(logprobs["content"])
        delta = choice.get("delta")
        if not delta:
            return out

        # reasoning (non-standard fields used by OpenAI-compatible servers)
        reasoning = delta.get("reasoning_content")
        if not reasoning:
            reasoning = delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            self._reasoning(out, reasoning)
        elif delta.get("reasoning_details"):
            for detail in delta["reasoning_details"]:
                text = detail.get("text") or detail.get("summary") or ""
                meta_: dict[str, Any] | None = None
                if detail.get("signature"):
                    meta_ = {self._key: {"signature": detail["signature"]}}
                elif detail.get("type") == "reasoning.encrypted" and detail.get("data"):
                    meta_ = {self._key: {"redactedData": detail["data"]}}
                self._reasoning(out, text, meta_)

        content = delta.get("content")
        if isinstance(content, str):
            self._content(out, content)
        elif isinstance(content, list):  # Mistral: [{"type":"thinking","thinking":[{"type":"text",...}]}]
            for item in content:
                if item.get("type") == "thinking":
                    for sub in item.get("thinking") or ():
                        self._reasoning(out, sub.get("text", ""))
                elif item.get("type") == "text":
                    self._content(out, item.get("text", ""))

        tool_calls = delta.get("tool_calls")
        if tool_calls:
            self._close_open_blocks(out)  # like @ai-sdk/openai-compatible: reasoning ends before tools
            for tc in tool_calls:
                self._tool_call_delta(out, tc)

        for annotation in delta.get("annotations") or ():
            citation = annotation.get("url_citation") if isinstance(annotation, dict) else None
            if citation and citation.get("url"):
                source: SourcePart = {
                    "type": "source",
                    "sourceType": "url",
                    "id": self._gen_id(),
                    "url": citation["url"],
                }
                if citation.get("title"):
                    source["title"] = citation["title"]
                out.append(source)
        return out

    def _close_open_blocks(self, out: list[StreamPart]) -> None:
        if self.reasoning_open:
            out.append({"type": "reasoning-end", "id": "reasoning-0"})
            self.reasoning_open = False
        if self.text_open:
            out.append({"type": "text-end", "id": "0"})
            self.text_open = False

    def _tool_call_delta(self, out: list[StreamPart], tc: dict[str, Any]) -> None:
        index = tc.get("index", len(self.tool_calls))
        fn = tc.get("function") or {}
        call = self.tool_calls.get(index)
        if call is None:
            if not tc.get("id") or not fn.get("name"):
                self.finish_reason = "error"
                out.append(
                    self._stream_error({"message": f"tool call delta without id or name: {tc!r}"}, None)
                )
                return
            call = {"id": tc["id"], "name": fn["name"], "arguments": fn.get("arguments") or "", "done": False}
            self.tool_calls[index] = call
            out.append({"type": "tool-input-start", "id": call["id"], "toolName": call["name"]})
            if call["arguments"]:
                out.append({"type": "tool-input-delta", "id": call["id"], "delta": call["arguments"]})
                if _parsable(call["arguments"]):
                    self._finish_call(out, call)
            return
        if call["done"]:
            return
        args = fn.get("arguments")
        if args:
            call["arguments"] += args
            out.append({"type": "tool-input-delta", "id": call["id"], "delta": args})
            if _parsable(call["arguments"]):
                self._finish_call(out, call)

    @staticmethod
    def _finish_call(out: list[StreamPart], call: dict[str, Any]) -> None:
        call["done"] = True
        out.append({"type": "tool-input-end", "id": call["id"]})
        out.append(
            {
                "type": "tool-call",
                "toolCallId": call["id"],
                "toolName": call["name"],
                "input": call["arguments"],
            }
        )

    def finish(self) -> list[StreamPart]:
        out: list[StreamPart] = []
        if self.think is not None:
            for is_reasoning, piece in self.think.flush():
                (self._reasoning if is_reasoning else self._text)(out, piece)
        self._close_open_blocks(out)
        for call in self.tool_calls.values():
            if not call["done"]:
                if not call["arguments"]:
                    call["arguments"] = "{}"
                self._finish_call(out, call)
        out.append(
            {
                "type": "finish",
                "finishReason": self.finish_reason,
                "usage": convert_openai_chat_usage(self.usage),
                "providerMetadata": {self._key: self._provider_metadata()},
            }
        )
        return out

    def _provider_metadata(self) -> dict[str, Any]:
        meta = dict(self.provider_metadata)
        usage = self.usage or {}
        details = usage.get("completion_tokens_details") or {}
        if details.get("accepted_prediction_tokens") is not None:
            meta["acceptedPredictionTokens"] = details["accepted_prediction_tokens"]
        if details.get("rejected_prediction_tokens") is not None:
            meta["rejectedPredictionTokens"] = details["rejected_prediction_tokens"]
        if isinstance(usage.get("cost"), int | float):
            meta["cost"] = usage["cost"]
        return meta


def convert_openai_chat_usage(usage: dict[str, Any] | None) -> dict[str, Any]:
    """Chat Completions usage → V2 ``LanguageModelV2Usage``."""
    if not usage:
        return {"inputTokens": None, "outputTokens": None, "totalTokens": None}
    prompt = usage.get("prompt_tokens")
    completion = usage.get("completion_tokens")
    total = usage.get("total_tokens")
    if total is None and prompt is not None and completion is not None:
        total = prompt + completion
    out: dict[str, Any] = {"inputTokens": prompt, "outputTokens": completion, "totalTokens": total}
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
    if reasoning is not None:
        out["reasoningTokens"] = reasoning
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    if cached is None:
        cached = usage.get("prompt_cache_hit_tokens")  # DeepSeek
    if cached is not None:
        out["cachedInputTokens"] = cached
    return out


def chat_response_format(
    response_format: Any, structured_outputs: bool, strict: bool, warnings: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """``responseFormat`` → Chat Completions ``response_format`` (``@ai-sdk/openai`` ``getArgs``).

    A schema becomes ``{"type": "json_schema", "json_schema": {name, description?, schema, strict}}``
    (``name`` defaults to ``"response"``); without a schema, or when the server has no structured
    outputs, ``{"type": "json_object"}`` (plus an ``unsupported-setting`` warning if a schema is dropped).
    """
    if not isinstance(response_format, dict) or response_format.get("type") != "json":
        return None
    schema = response_format.get("schema")
    if schema is None or not structured_outputs:
        if schema is not None:
            warnings.append(
                {
                    "type": "unsupported-setting",
                    "setting": "responseFormat",
                    "details": "JSON response format schema is only supported with structuredOutputs",
                }
            )
        return {"type": "json_object"}
    json_schema: dict[str, Any] = {"name": response_format.get("name") or "response"}
    if response_format.get("description"):
        json_schema["description"] = response_format["description"]
    json_schema["schema"] = schema
    json_schema["strict"] = strict
    return {"type": "json_schema", "json_schema": json_schema}


# -- the model ------------------------------------------------------------------------------------


class OpenAIChatModel(_HTTPStreamingModel):
    """A Chat Completions model (OpenAI or any OpenAI-compatible server).

    **Parameters:**

    * `model_id` — the model name sent as ``model``.
    * `base_url` — API root, e.g. ``https://api.openai.com/v1`` (``/chat/completions`` is appended).
    * `api_key` — sent as ``Authorization: Bearer``; ``None`` sends no auth header (local servers).
    * `provider` — provider name used in errors and as ``providerMetadata`` key (``"openai"``).
    * `include_usage` — send ``stream_options.include_usage`` (default true).
    * `parse_think_tags` — treat ``<think>…</think>`` inside ``content`` as reasoning.
    * `send_reasoning` — replay assistant reasoning as ``reasoning_content`` (DeepSeek tool loops).
    * `structured_outputs` — send a ``response_format`` JSON schema (default true); false sends
      ``json_object`` (servers without structured outputs). Provider options ``structuredOutputs``
      and ``strictJsonSchema`` (default false) override per call.
    * `timeout`, `max_retries`, `retry_initial_delay`, `sleep`, `http_client`, `transport`,
      `headers`, `generate_id` — transport settings shared by all providers.
    """

    def __init__(
        self,
        model_id: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        provider: str = "openai",
        provider_key: str | None = None,
        include_usage: bool = True,
        parse_think_tags: bool = False,
        send_reasoning: bool = False,
        structured_outputs: bool = True,
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
        self.provider_key = provider_key or provider.split(".")[0]
        self.include_usage = include_usage
        self.parse_think_tags = parse_think_tags
        self.send_reasoning = send_reasoning
        self.structured_outputs = structured_outputs
        self.system_role = system_role
        self._url = f"{self.base_url}/chat/completions"

    def _auth_headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def _request(self, options: CallOptions) -> tuple[str, str, dict[str, Any] | None, list[dict[str, Any]]]:
        warnings: list[dict[str, Any]] = []
        body: dict[str, Any] = {
            "model": self.model_id,
            "messages": convert_to_openai_chat_messages(
                options.get("prompt") or [], system_role=self.system_role, send_reasoning=self.send_reasoning
            ),
            "stream": True,
        }
        if self.include_usage:
            body["stream_options"] = {"include_usage": True}
        body.update(call_settings(options, _SETTINGS, warnings))
        tools, choice = _tools(options, warnings)
        if tools:
            body["tools"] = tools
            if choice is not None:
                body["tool_choice"] = choice
        extra = dict((options.get("provider_options") or {}).get(self.provider_key) or {})
        structured = bool(extra.pop("structuredOutputs", self.structured_outputs))
        strict = bool(extra.pop("strictJsonSchema", False))
        response_format = chat_response_format(options.get("response_format"), structured, strict, warnings)
        if response_format is not None:
            body["response_format"] = response_format
        for key, value in extra.items():
            body[camel_to_snake(key)] = value
        return "POST", self._url, body, warnings

    def _transformer(self, options: CallOptions) -> _Transformer:
        return _ChatTransformer(self)


def OpenAICompatible(
    *,
    base_url: str,
    model: str,
    api_key: str | None = None,
    name: str = "openai-compatible",
    **kwargs: Any,
) -> OpenAIChatModel:
    """A Chat Completions model on any OpenAI-compatible server (vLLM, Ollama, LM Studio, ...)."""
    return OpenAIChatModel(model, base_url=base_url, api_key=api_key, provider=name, **kwargs)
