"""Cohere v2 Chat (``POST {base}/chat`` with ``stream: true``).

Behaviour follows ``@ai-sdk/cohere`` ``cohere-chat-language-model.ts``: ``message-start`` gives the
response id; ``content-start`` / ``-delta`` / ``-end`` are text or thinking blocks keyed by their
``index``; ``tool-call-start`` / ``-delta`` / ``-end`` stream one call's arguments (``null`` or empty
arguments are ``{}``); ``message-end`` gives the finish reason and the usage (``tokens``: what the
model processed; ``billed_units`` and ``cached_tokens`` go to ``providerMetadata.cohere``). Beyond
the AI SDK's stream: ``citation-start`` events become ``source`` parts (its ``doGenerate`` does this
for a whole response) and the ``tool_plan`` text is kept in the finish's provider metadata.

``stream=False`` sends a non-streaming request (for a gateway that cannot stream) and replays the
JSON response as the events a stream would carry, so both paths share one transformer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import msgspec
from typing_extensions import Unpack

from ._base import CallOptions, FinishReason, SourcePart, StreamPart
from ._cohere_prompt import cohere_tools, convert_to_cohere_messages
from ._http import TransportOptions, _EndingTransformer, _HTTPStreamingModel, _Transformer, call_settings

__all__ = ["CohereModel", "cohere_response_events", "map_cohere_finish_reason"]

_FINISH: dict[str, FinishReason] = {
    "COMPLETE": "stop",
    "STOP_SEQUENCE": "stop",
    "MAX_TOKENS": "length",
    "ERROR": "error",
    "TOOL_CALL": "tool-calls",
}
# call option -> wire name (Cohere names top_p and top_k `p` and `k`)
_SETTINGS: dict[str, str | None] = {
    "frequency_penalty": "frequency_penalty",
    "presence_penalty": "presence_penalty",
    "max_output_tokens": "max_tokens",
    "temperature": "temperature",
    "top_p": "p",
    "top_k": "k",
    "seed": "seed",
    "stop_sequences": "stop_sequences",
}
_decode = msgspec.json.Decoder().decode


def map_cohere_finish_reason(reason: str | None) -> FinishReason:
    """``mapCohereFinishReason``: ``COMPLETE`` → stop, ``TOOL_CALL`` → tool-calls, …"""
    return _FINISH.get(reason or "", "unknown")


def cohere_response_events(response: dict[str, Any]) -> list[dict[str, Any]]:
    """A non-streamed v2 chat response as the stream events that carry the same message."""
    message = response.get("message") or {}
    events: list[dict[str, Any]] = [{"type": "message-start", "id": response.get("id")}]
    for index, item in enumerate(message.get("content") or []):
        key = "thinking" if item.get("type") == "thinking" else "text"
        body = {"message": {"content": {key: item.get(key, "")}}}
        events += [
            {"type": "content-start", "index": index, "delta": {"message": {"content": {"type": key}}}},
            {"type": "content-delta", "index": index, "delta": body},
            {"type": "content-end", "index": index},
        ]
    if message.get("tool_plan"):
        events.append({"type": "tool-plan-delta", "delta": {"message": {"tool_plan": message["tool_plan"]}}})
    for index, call in enumerate(message.get("tool_calls") or []):
        fn = call.get("function") or {}
        start = {
            "id": call.get("id"),
            "type": "function",
            "function": {"name": fn.get("name"), "arguments": ""},
        }
        args = {"function": {"arguments": fn.get("arguments") or ""}}
        events += [
            {"type": "tool-call-start", "index": index, "delta": {"message": {"tool_calls": start}}},
            {"type": "tool-call-delta", "index": index, "delta": {"message": {"tool_calls": args}}},
            {"type": "tool-call-end", "index": index},
        ]
    for index, citation in enumerate(message.get("citations") or []):
        events += [
            {"type": "citation-start", "index": index, "delta": {"message": {"citations": citation}}},
            {"type": "citation-end", "index": index},
        ]
    usage = response.get("usage")
    events.append(
        {"type": "message-end", "delta": {"finish_reason": response.get("finish_reason"), "usage": usage}}
    )
    return events


def _opened(block: str, sid: str) -> StreamPart:
    if block == "reasoning":
        return {"type": "reasoning-start", "id": sid}
    return {"type": "text-start", "id": sid}


def _closed(block: str, sid: str) -> StreamPart:
    if block == "reasoning":
        return {"type": "reasoning-end", "id": sid}
    return {"type": "text-end", "id": sid}


def _arguments(raw: str) -> str:
    text = raw.strip()
    if text in ("", "null"):  # Cohere sends `null` for a tool without parameters
        return "{}"
    try:
        return msgspec.json.encode(_decode(text)).decode()
    except msgspec.DecodeError:
        return raw  # invalid JSON stays as sent: the tool runner reports it


class _CohereTransformer(_EndingTransformer):
    end_marker = "message-end"

    def __init__(self, model: CohereModel) -> None:
        self._model = model
        self._gen_id = model._generate_id
        self.blocks: dict[int, str] = {}
        self.call: dict[str, Any] | None = None
        self.tool_plan = ""
        self.finish_reason: FinishReason = "unknown"
        self.usage: dict[str, Any] | None = None

    def feed(self, event: str, value: Any) -> list[StreamPart]:
        if not isinstance(value, dict):
            return []
        kind = value.get("type") or event
        message = (value.get("delta") or {}).get("message") or {}
        if kind == "message-start":
            return [{"type": "response-metadata", "id": value["id"]}] if value.get("id") else []
        if kind in ("content-start", "content-delta", "content-end"):
            return self._content(kind, value.get("index", 0), message.get("content") or {})
        if kind == "tool-plan-delta":
            self.tool_plan += message.get("tool_plan") or ""
            return []
        if kind in ("tool-call-start", "tool-call-delta", "tool-call-end"):
            return self._tool_call(kind, message.get("tool_calls") or {})
        if kind == "citation-start":
            return self._citation(message.get("citations") or {})
        if kind == "message-end":
            delta = value.get("delta") or {}
            self.done = True
            self.finish_reason = map_cohere_finish_reason(delta.get("finish_reason"))
            self.usage = delta.get("usage") if isinstance(delta.get("usage"), dict) else None
        return []

    def _content(self, kind: str, index: int, content: dict[str, Any]) -> list[StreamPart]:
        sid = str(index)
        if kind == "content-start":
            block = "reasoning" if content.get("type") == "thinking" else "text"
            self.blocks[index] = block
            return [_opened(block, sid)]
        block = self.blocks.get(index, "text")
        if kind == "content-end":
            self.blocks.pop(index, None)
            return [_closed(block, sid)]
        if "thinking" in content:
            return [{"type": "reasoning-delta", "id": sid, "delta": content["thinking"] or ""}]
        return [{"type": "text-delta", "id": sid, "delta": content.get("text") or ""}]

    def _tool_call(self, kind: str, call: dict[str, Any]) -> list[StreamPart]:
        if kind == "tool-call-start":
            fn = call.get("function") or {}
            args = fn.get("arguments") or ""
            self.call = {"id": call.get("id") or self._gen_id(), "name": fn.get("name") or "", "args": args}
            out: list[StreamPart] = [
                {"type": "tool-input-start", "id": self.call["id"], "toolName": self.call["name"]}
            ]
            if args:
                out.append({"type": "tool-input-delta", "id": self.call["id"], "delta": args})
            return out
        if self.call is None:
            return []
        if kind == "tool-call-delta":
            chunk = (call.get("function") or {}).get("arguments") or ""
            self.call["args"] += chunk
            return [{"type": "tool-input-delta", "id": self.call["id"], "delta": chunk}] if chunk else []
        done, self.call = self.call, None
        return [
            {"type": "tool-input-end", "id": done["id"]},
            {
                "type": "tool-call",
                "toolCallId": done["id"],
                "toolName": done["name"],
                "input": _arguments(done["args"]),
            },
        ]

    def _citation(self, citation: dict[str, Any]) -> list[StreamPart]:
        sources = citation.get("sources") or []
        document = (sources[0].get("document") if sources and isinstance(sources[0], dict) else None) or {}
        meta: dict[str, Any] = {
            "start": citation.get("start"),
            "end": citation.get("end"),
            "text": citation.get("text"),
            "sources": sources,
        }
        if citation.get("type"):
            meta["citationType"] = citation["type"]
        source: SourcePart = {
            "type": "source",
            "sourceType": "document",
            "id": self._gen_id(),
            "mediaType": "text/plain",
            "title": document.get("title") or "Document",
            "providerMetadata": {"cohere": meta},
        }
        return [source]

    def finish(self) -> list[StreamPart]:
        out: list[StreamPart] = []
        for index, block in sorted(self.blocks.items()):  # blocks a cut stream left open
            out.append(_closed(block, str(index)))
        raw = self.usage or {}
        tokens = raw.get("tokens") or {}
        inp, outp = tokens.get("input_tokens"), tokens.get("output_tokens")
        usage: dict[str, Any] = {
            "inputTokens": inp,
            "outputTokens": outp,
            "totalTokens": inp + outp if inp is not None and outp is not None else None,
        }
        if raw.get("cached_tokens") is not None:
            usage["cachedInputTokens"] = raw["cached_tokens"]
        meta: dict[str, Any] = {}
        if raw.get("billed_units") is not None:
            meta["billedUnits"] = raw["billed_units"]
        if self.tool_plan:
            meta["toolPlan"] = self.tool_plan
        finish: dict[str, Any] = {
            "type": "finish",
            "finishReason": "error" if self.errored else self.finish_reason,
            "usage": usage,
        }
        if meta:
            finish["providerMetadata"] = {"cohere": meta}
        out.append(finish)  # type: ignore[arg-type]
        return out


class CohereModel(_HTTPStreamingModel):
    """A Cohere chat model through the v2 Chat API.

    **Parameters:** `model_id` (``"command-a-03-2025"``, ``"command-r7b-12-2024"`` …); `base_url`
    (default ``https://api.cohere.com/v2``); `api_key` (sent as ``Authorization: Bearer``);
    `stream` (default ``True``; ``False`` asks for one JSON response, replayed as the same parts);
    plus the shared `TransportOptions`. Provider options under ``"cohere"``: ``thinking``
    (``{"type": "enabled", "tokenBudget": n}``).
    """

    def __init__(
        self,
        model_id: str,
        *,
        base_url: str = "https://api.cohere.com/v2",
        api_key: str | None = None,
        provider: str = "cohere",
        stream: bool = True,
        **transport: Unpack[TransportOptions],
    ) -> None:
        super().__init__(model_id, provider=provider, base_url=base_url, api_key=api_key, **transport)
        self.stream = stream
        self._url = f"{self.base_url}/chat"

    def _auth_headers(self) -> dict[str, str]:
        headers = {} if self.stream else {"accept": "application/json"}
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        return headers

    def _request(self, options: CallOptions) -> tuple[str, str, dict[str, Any] | None, list[dict[str, Any]]]:
        warnings: list[dict[str, Any]] = []
        messages, documents = convert_to_cohere_messages(list(options.get("prompt") or []))
        body: dict[str, Any] = {"model": self.model_id, "messages": messages, "stream": self.stream}
        body.update(call_settings(options, _SETTINGS, warnings))
        fmt = options.get("response_format") or {}
        if fmt.get("type") == "json":
            body["response_format"] = {"type": "json_object"}
            if fmt.get("schema") is not None:
                body["response_format"]["json_schema"] = fmt["schema"]
        tools, choice = cohere_tools(list(options.get("tools") or []), options.get("tool_choice"), warnings)
        if tools:
            body["tools"] = tools
        if choice is not None:
            body["tool_choice"] = choice
        if documents:
            body["documents"] = documents
        thinking = ((options.get("provider_options") or {}).get("cohere") or {}).get("thinking")
        if isinstance(thinking, dict):
            body["thinking"] = {"type": thinking.get("type") or "enabled"}
            if thinking.get("tokenBudget") is not None:
                body["thinking"]["token_budget"] = thinking["tokenBudget"]
        return "POST", self._url, body, warnings

    def _transformer(self, options: CallOptions) -> _Transformer:
        return _CohereTransformer(self)

    async def _read_events(self, response: httpx.Response) -> AsyncIterator[object]:
        if "json" not in response.headers.get("content-type", ""):
            async for item in super()._read_events(response):
                yield item
            return
        url = str(response.request.url)
        try:
            raw = await response.aread()
        except httpx.TransportError as exc:
            yield self._error(
                f"connection lost reading the response: {exc or type(exc).__name__}",
                url,
                retryable=True,
                cause=exc,
            )
            return
        try:
            value = _decode(raw)
        except msgspec.DecodeError as exc:
            yield self._error(
                f"Invalid JSON response: {exc}", url, status=response.status_code, retryable=False, cause=exc
            )
            return
        for event in cohere_response_events(value if isinstance(value, dict) else {}):
            yield event["type"], msgspec.json.encode(event).decode()
