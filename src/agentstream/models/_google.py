"""Google Gemini API (``POST {base}/models/{id}:streamGenerateContent?alt=sse``).

Behaviour follows ``@ai-sdk/google`` ``google-generative-ai-language-model.ts``: every SSE event is a
whole ``GenerateContentResponse``; consecutive text (or ``thought: true``) parts share one block whose
id is a running counter; a ``functionCall`` part is a complete call at once (``tool-input-start`` /
``-delta`` / ``-end`` then ``tool-call``, with a generated id), carrying its ``thoughtSignature`` in
``providerMetadata.google``; ``executableCode`` / ``codeExecutionResult`` are a provider-executed
``code_execution`` call and its result; web grounding chunks are ``source`` parts (each URL once);
``STOP`` with function calls finishes as ``tool-calls``. The stream has no end marker: it is complete
once a candidate reported its ``finishReason`` (or the prompt was blocked).
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec
from typing_extensions import Unpack

from ._base import (
    CallOptions,
    FinishPart,
    FinishReason,
    ReasoningDeltaPart,
    ReasoningStartPart,
    SourcePart,
    StreamPart,
    TextDeltaPart,
    TextStartPart,
    ToolCallPart,
    ToolInputDeltaPart,
    ToolInputEndPart,
    ToolInputStartPart,
)
from ._google_prompt import convert_to_google_contents, google_tools, openapi_schema
from ._http import TransportOptions, _EndingTransformer, _HTTPStreamingModel, _Transformer, call_settings

__all__ = ["GoogleModel", "map_google_finish_reason"]

# call option -> wire name; None: the API has no such setting (a warning when given)
_SETTINGS: dict[str, str | None] = {
    "max_output_tokens": "maxOutputTokens",
    "temperature": "temperature",
    "top_k": "topK",
    "top_p": "topP",
    "frequency_penalty": "frequencyPenalty",
    "presence_penalty": "presencePenalty",
    "stop_sequences": "stopSequences",
    "seed": "seed",
}


_CONTENT_FILTER = {"IMAGE_SAFETY", "RECITATION", "SAFETY", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII"}


def map_google_finish_reason(reason: str | None, has_tool_calls: bool) -> FinishReason:
    """``mapGoogleGenerativeAIFinishReason``: Gemini's ``finishReason`` → a V2 finish reason."""
    if reason == "STOP":
        return "tool-calls" if has_tool_calls else "stop"
    if reason == "MAX_TOKENS":
        return "length"
    if reason in _CONTENT_FILTER:
        return "content-filter"
    if reason in ("FINISH_REASON_UNSPECIFIED", "OTHER"):
        return "other"
    if reason == "MALFORMED_FUNCTION_CALL":
        return "error"
    return "unknown"


_Signable = TypeVar(
    "_Signable",
    ReasoningStartPart,
    ReasoningDeltaPart,
    TextStartPart,
    TextDeltaPart,
    ToolInputStartPart,
    ToolInputDeltaPart,
    ToolInputEndPart,
    ToolCallPart,
)


def _signed(part: _Signable, signature: Any) -> _Signable:
    """The part with Gemini's thought signature in ``providerMetadata.google`` (when it has one)."""
    if signature:
        part["providerMetadata"] = {"google": {"thoughtSignature": signature}}
    return part


class _GoogleTransformer(_EndingTransformer):
    end_marker = "a candidate's finishReason"

    def __init__(self, model: GoogleModel, *, json_tool: bool) -> None:
        self._gen_id = model._generate_id
        self._json_tool = json_tool
        self.text_id: str | None = None
        self.reasoning_id: str | None = None
        self.blocks = 0
        self.sources: set[str] = set()
        self.code_call: str | None = None
        self.has_tool_calls = False
        self.finish_reason: FinishReason = "unknown"
        self.usage: dict[str, Any] = {"inputTokens": None, "outputTokens": None, "totalTokens": None}
        self.metadata: dict[str, Any] | None = None

    def feed(self, event: str, value: Any) -> list[StreamPart]:
        if not isinstance(value, dict):
            return []
        usage = value.get("usageMetadata")
        if isinstance(usage, dict):
            self._usage(usage)
        feedback = value.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            self.done = True
            self.finish_reason = "content-filter"
            self.metadata = self._metadata(value, {})
        candidates = value.get("candidates") or []
        if not candidates:
            return []
        candidate = candidates[0]
        out: list[StreamPart] = self._sources(candidate.get("groundingMetadata"))
        for part in (candidate.get("content") or {}).get("parts") or []:
            out.extend(self._part(part))
        if candidate.get("finishReason") is not None:
            self.done = True
            self.finish_reason = map_google_finish_reason(candidate["finishReason"], self.has_tool_calls)
            self.metadata = self._metadata(value, candidate)
        return out

    def _usage(self, usage: dict[str, Any]) -> None:
        self.usage = {
            "inputTokens": usage.get("promptTokenCount"),
            "outputTokens": usage.get("candidatesTokenCount"),
            "totalTokens": usage.get("totalTokenCount"),
        }
        if usage.get("thoughtsTokenCount") is not None:
            self.usage["reasoningTokens"] = usage["thoughtsTokenCount"]
        if usage.get("cachedContentTokenCount") is not None:
            self.usage["cachedInputTokens"] = usage["cachedContentTokenCount"]
        self._raw_usage = usage

    def _metadata(self, value: dict[str, Any], candidate: dict[str, Any]) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "promptFeedback": value.get("promptFeedback"),
            "groundingMetadata": candidate.get("groundingMetadata"),
            "urlContextMetadata": candidate.get("urlContextMetadata"),
            "safetyRatings": candidate.get("safetyRatings"),
        }
        if value.get("usageMetadata") is not None:
            meta["usageMetadata"] = value["usageMetadata"]
        return meta

    def _sources(self, grounding: Any) -> list[StreamPart]:
        out: list[StreamPart] = []
        if not isinstance(grounding, dict):
            return out
        for chunk in grounding.get("groundingChunks") or []:
            web = chunk.get("web") or chunk.get("retrievedContext")
            uri = web.get("uri") if isinstance(web, dict) else None
            if not isinstance(uri, str) or uri in self.sources:
                continue
            self.sources.add(uri)
            source: SourcePart = {"type": "source", "sourceType": "url", "id": self._gen_id(), "url": uri}
            if web.get("title") is not None:
                source["title"] = web["title"]
            out.append(source)
        return out

    def _part(self, part: dict[str, Any]) -> list[StreamPart]:
        if isinstance(part.get("executableCode"), dict) and part["executableCode"].get("code"):
            self.code_call = self._gen_id()
            self.has_tool_calls = True
            code = msgspec.json.encode(part["executableCode"]).decode()
            return [
                {
                    "type": "tool-call",
                    "toolCallId": self.code_call,
                    "toolName": "code_execution",
                    "input": code,
                    "providerExecuted": True,
                }
            ]
        if isinstance(part.get("codeExecutionResult"), dict):
            if self.code_call is None:
                return []
            result = part["codeExecutionResult"]
            call_id, self.code_call = self.code_call, None
            return [
                {
                    "type": "tool-result",
                    "toolCallId": call_id,
                    "toolName": "code_execution",
                    "result": {"outcome": result.get("outcome"), "output": result.get("output")},
                    "providerExecuted": True,
                }
            ]
        if isinstance(part.get("functionCall"), dict):
            return self._function_call(part)
        if isinstance(part.get("inlineData"), dict):
            data = part["inlineData"]
            return [{"type": "file", "mediaType": data.get("mimeType", ""), "data": data.get("data")}]
        text = part.get("text")
        if isinstance(text, str) and text and not self._json_tool:
            return self._text(text, part.get("thought") is True, part.get("thoughtSignature"))
        return []

    def _text(self, text: str, thought: bool, signature: Any) -> list[StreamPart]:
        out: list[StreamPart] = []
        if thought:
            if self.text_id is not None:
                out.append({"type": "text-end", "id": self.text_id})
                self.text_id = None
            if self.reasoning_id is None:
                self.reasoning_id = self._next_block()
                rstart: ReasoningStartPart = {"type": "reasoning-start", "id": self.reasoning_id}
                out.append(_signed(rstart, signature))
            rdelta: ReasoningDeltaPart = {"type": "reasoning-delta", "id": self.reasoning_id, "delta": text}
            out.append(_signed(rdelta, signature))
            return out
        if self.reasoning_id is not None:
            out.append({"type": "reasoning-end", "id": self.reasoning_id})
            self.reasoning_id = None
        if self.text_id is None:
            self.text_id = self._next_block()
            start: TextStartPart = {"type": "text-start", "id": self.text_id}
            out.append(_signed(start, signature))
        delta: TextDeltaPart = {"type": "text-delta", "id": self.text_id, "delta": text}
        out.append(_signed(delta, signature))
        return out

    def _next_block(self) -> str:
        block = str(self.blocks)
        self.blocks += 1
        return block

    def _function_call(self, part: dict[str, Any]) -> list[StreamPart]:
        call = part["functionCall"]
        args = msgspec.json.encode(call.get("args") if call.get("args") is not None else {}).decode()
        if self._json_tool and call.get("name") == "json":  # the stand-in for a JSON answer with tools
            out: list[StreamPart] = []
            if self.text_id is None:
                self.text_id = self._next_block()
                out.append({"type": "text-start", "id": self.text_id})
            out.append({"type": "text-delta", "id": self.text_id, "delta": args})
            return out
        call_id = self._gen_id()
        self.has_tool_calls = True
        signature = part.get("thoughtSignature")
        done: ToolCallPart = {
            "type": "tool-call",
            "toolCallId": call_id,
            "toolName": call["name"],
            "input": args,
        }
        start: ToolInputStartPart = {"type": "tool-input-start", "id": call_id, "toolName": call["name"]}
        delta: ToolInputDeltaPart = {"type": "tool-input-delta", "id": call_id, "delta": args}
        end: ToolInputEndPart = {"type": "tool-input-end", "id": call_id}
        return [
            _signed(start, signature),
            _signed(delta, signature),
            _signed(end, signature),
            _signed(done, signature),
        ]

    def finish(self) -> list[StreamPart]:
        out: list[StreamPart] = []
        if self.text_id is not None:
            out.append({"type": "text-end", "id": self.text_id})
        if self.reasoning_id is not None:
            out.append({"type": "reasoning-end", "id": self.reasoning_id})
        finish: FinishPart = {
            "type": "finish",
            "finishReason": "error" if self.errored else self.finish_reason,
            "usage": self.usage,
        }
        if self.metadata is not None:
            finish["providerMetadata"] = {"google": self.metadata}
        out.append(finish)
        return out


class GoogleModel(_HTTPStreamingModel):
    """Google Gemini API model (``generativelanguage.googleapis.com``).

    **Parameters:** `model_id` (``"gemini-2.5-flash"``; a full ``"tunedModels/…"`` path is used as
    is); `base_url` (default ``https://generativelanguage.googleapis.com/v1beta``); `api_key` (sent as
    ``x-goog-api-key``); plus the shared transport settings (see ``OpenAIChatModel``). Provider options
    under ``"google"``: ``thinkingConfig``, ``safetySettings``, ``cachedContent``,
    ``responseModalities``, ``labels``, ``structuredOutputs`` (``False``: JSON mode without a schema).
    """

    def __init__(
        self,
        model_id: str,
        *,
        base_url: str = "https://generativelanguage.googleapis.com/v1beta",
        api_key: str | None = None,
        provider: str = "google",
        **transport: Unpack[TransportOptions],
    ) -> None:
        super().__init__(
            model_id,
            provider=provider,
            base_url=base_url,
            api_key=api_key,
            **transport,
        )
        path = model_id if "/" in model_id else f"models/{model_id}"
        self._url = f"{self.base_url}/{path}:streamGenerateContent?alt=sse"

    def _auth_headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self._api_key} if self._api_key else {}

    def _request(self, options: CallOptions) -> tuple[str, str, dict[str, Any] | None, list[dict[str, Any]]]:
        warnings: list[dict[str, Any]] = []
        system, contents = convert_to_google_contents(options.get("prompt") or [])
        opts = dict((options.get("provider_options") or {}).get("google") or {})
        tools = list(options.get("tools") or [])
        choice = options.get("tool_choice")
        fmt = options.get("response_format") or {}
        json_tool = fmt.get("type") == "json" and fmt.get("schema") is not None and bool(tools)
        if json_tool:  # Gemini cannot combine a response schema with tools: a forced `json` tool instead
            tools.append(
                {
                    "type": "function",
                    "name": "json",
                    "description": "Respond with a JSON object.",
                    "inputSchema": fmt.get("schema"),
                }
            )
            choice = {"type": "required"}
        config = self._generation_config(options, opts, json_tool)
        body: dict[str, Any] = {"generationConfig": config, "contents": contents}
        if system is not None:
            body["systemInstruction"] = system
        declared, tool_config = google_tools(tools, choice, warnings)
        if declared:
            body["tools"] = declared
        if tool_config:
            body["toolConfig"] = tool_config
        for key in ("safetySettings", "cachedContent", "labels"):
            if opts.get(key) is not None:
                body[key] = opts[key]
        return "POST", self._url, body, warnings

    @staticmethod
    def _generation_config(options: CallOptions, opts: dict[str, Any], json_tool: bool) -> dict[str, Any]:
        config = call_settings(options, _SETTINGS, [])
        fmt = options.get("response_format") or {}
        if fmt.get("type") == "json" and not json_tool:
            config["responseMimeType"] = "application/json"
            if fmt.get("schema") is not None and opts.get("structuredOutputs", True):
                config["responseSchema"] = openapi_schema(fmt["schema"])
        for key in ("responseModalities", "thinkingConfig", "mediaResolution", "imageConfig"):
            if opts.get(key) is not None:
                config[key] = opts[key]
        return config

    def _transformer(self, options: CallOptions) -> _Transformer:
        fmt = options.get("response_format") or {}
        json_tool = fmt.get("type") == "json" and fmt.get("schema") is not None and bool(options.get("tools"))
        return _GoogleTransformer(self, json_tool=json_tool)
