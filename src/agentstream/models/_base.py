"""The provider-facing contract: call options, stream parts and the ``LanguageModel`` protocol.

Stream parts are plain dicts in the exact JSON shape of the AI SDK's ``LanguageModelV2StreamPart``
(``@ai-sdk/provider``), so the agent layer's ``convertFullStreamChunkToMastra`` port can consume
them unchanged. Each part type is a ``TypedDict`` discriminated by its ``type`` literal; ``StreamPart``
is their union. They are types only: a part is still a plain dict at run time, so nothing is
validated or copied on the per-token path (docs/decisions/models.md).
"""

# No `from __future__ import annotations`: the TypedDicts' NotRequired keys must be seen at run time
# (``__optional_keys__``, pydantic), which string annotations hide on Python 3.11.

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any, Literal, NotRequired, Protocol, TypeAlias, runtime_checkable

# typing_extensions' TypedDict (not typing's) so pydantic can validate parts on Python 3.11 too.
from typing_extensions import TypedDict

from .._abort import AbortSignal
from .._secrets import redact, redact_value, safe_url

__all__ = [
    "APICallError",
    "CallOptions",
    "CustomPart",
    "ErrorPart",
    "FilePart",
    "FinishPart",
    "FinishReason",
    "LanguageModel",
    "ModelStream",
    "ProviderMetadata",
    "RawPart",
    "ReasoningDeltaPart",
    "ReasoningEndPart",
    "ReasoningFilePart",
    "ReasoningStartPart",
    "ResponseFormat",
    "ResponseMetadataPart",
    "SourcePart",
    "StreamPart",
    "StreamStartPart",
    "TextDeltaPart",
    "TextEndPart",
    "TextStartPart",
    "ToolCallPart",
    "ToolInputDeltaPart",
    "ToolInputEndPart",
    "ToolInputStartPart",
    "ToolResultPart",
]

FinishReason = Literal["stop", "length", "content-filter", "tool-calls", "error", "other", "unknown"]

ProviderMetadata: TypeAlias = dict[str, dict[str, Any]]
"""``SharedV2ProviderMetadata``: provider name → that provider's JSON values."""


class StreamStartPart(TypedDict):
    """``{"type": "stream-start", "warnings": [...]}``: the first part, with the call's warnings."""

    type: Literal["stream-start"]
    warnings: list[dict[str, Any]]


class ResponseMetadataPart(TypedDict):
    """``{"type": "response-metadata", "id"?, "timestamp"?, "modelId"?}``: what the provider says it ran."""

    type: Literal["response-metadata"]
    id: NotRequired[str]
    timestamp: NotRequired[Any]
    """ISO 8601 string in recordings; a ``datetime`` is accepted too."""
    modelId: NotRequired[str]


class TextStartPart(TypedDict):
    """``{"type": "text-start", "id"}``: a text block opens."""

    type: Literal["text-start"]
    id: str
    providerMetadata: NotRequired[ProviderMetadata]


class TextDeltaPart(TypedDict):
    """``{"type": "text-delta", "id", "delta"}``: text for the open block ``id``."""

    type: Literal["text-delta"]
    id: str
    delta: str
    providerMetadata: NotRequired[ProviderMetadata]


class TextEndPart(TypedDict):
    """``{"type": "text-end", "id"}``: the text block ``id`` is complete."""

    type: Literal["text-end"]
    id: str
    providerMetadata: NotRequired[ProviderMetadata]


class ReasoningStartPart(TypedDict):
    """``{"type": "reasoning-start", "id"}``: a reasoning block opens."""

    type: Literal["reasoning-start"]
    id: str
    providerMetadata: NotRequired[ProviderMetadata]


class ReasoningDeltaPart(TypedDict):
    """``{"type": "reasoning-delta", "id", "delta"}``: reasoning text for the open block ``id``."""

    type: Literal["reasoning-delta"]
    id: str
    delta: str
    providerMetadata: NotRequired[ProviderMetadata]


class ReasoningEndPart(TypedDict):
    """``{"type": "reasoning-end", "id"}``: the reasoning block ``id`` is complete (may carry a signature)."""

    type: Literal["reasoning-end"]
    id: str
    providerMetadata: NotRequired[ProviderMetadata]


class ToolInputStartPart(TypedDict):
    """``{"type": "tool-input-start", "id", "toolName"}``: a tool call's input starts streaming (``id`` is the call id)."""

    type: Literal["tool-input-start"]
    id: str
    toolName: str
    providerMetadata: NotRequired[ProviderMetadata]
    providerExecuted: NotRequired[bool]
    dynamic: NotRequired[bool]


class ToolInputDeltaPart(TypedDict):
    """``{"type": "tool-input-delta", "id", "delta"}``: a piece of the call's JSON input."""

    type: Literal["tool-input-delta"]
    id: str
    delta: str
    providerMetadata: NotRequired[ProviderMetadata]


class ToolInputEndPart(TypedDict):
    """``{"type": "tool-input-end", "id"}``: the call's input is complete."""

    type: Literal["tool-input-end"]
    id: str
    providerMetadata: NotRequired[ProviderMetadata]


class ToolCallPart(TypedDict):
    """``{"type": "tool-call", "toolCallId", "toolName", "input"}``: a complete call; ``input`` is its JSON text."""

    type: Literal["tool-call"]
    toolCallId: str
    toolName: str
    input: str
    providerExecuted: NotRequired[bool]
    providerMetadata: NotRequired[ProviderMetadata]
    dynamic: NotRequired[bool]


class ToolResultPart(TypedDict):
    """``{"type": "tool-result", "toolCallId", "toolName", "result"}``: the result of a provider-executed tool."""

    type: Literal["tool-result"]
    toolCallId: str
    toolName: str
    result: Any
    isError: NotRequired[bool]
    providerExecuted: NotRequired[bool]
    providerMetadata: NotRequired[ProviderMetadata]


class SourcePart(TypedDict):
    """``{"type": "source", "sourceType": "url" | "document", "id", ...}``: a cited source.

    A ``url`` source has ``url`` (and maybe ``title``); a ``document`` source has ``mediaType`` and
    ``title`` (and maybe ``filename``).
    """

    type: Literal["source"]
    sourceType: Literal["url", "document"]
    id: str
    url: NotRequired[str | None]
    title: NotRequired[str | None]
    """``None`` when the provider's citation has none."""
    mediaType: NotRequired[str]
    filename: NotRequired[str]
    providerMetadata: NotRequired[ProviderMetadata]


class FilePart(TypedDict):
    """``{"type": "file", "mediaType", "data"}``: a generated file, ``data`` base64 text or bytes."""

    type: Literal["file"]
    mediaType: str
    data: Any
    providerMetadata: NotRequired[ProviderMetadata]


class ReasoningFilePart(TypedDict):
    """``{"type": "reasoning-file", "mediaType", "data"}``: a file produced while reasoning (AI SDK 6)."""

    type: Literal["reasoning-file"]
    mediaType: str
    data: Any
    providerMetadata: NotRequired[ProviderMetadata]


class CustomPart(TypedDict):
    """``{"type": "custom", "kind"}``: a provider-specific part (AI SDK 6), streamed as a ``custom`` chunk."""

    type: Literal["custom"]
    kind: str
    providerMetadata: NotRequired[ProviderMetadata]


class FinishPart(TypedDict):
    """``{"type": "finish", "finishReason", "usage"}``: the last part of a call."""

    type: Literal["finish"]
    finishReason: FinishReason | dict[str, Any]
    """A V2 reason, or a V3 (AI SDK 6) ``{"unified": <reason>, "raw": <provider's reason>}`` envelope."""
    usage: dict[str, Any]
    """``{"inputTokens", "outputTokens", "totalTokens", "reasoningTokens"?, "cachedInputTokens"?}``."""
    providerMetadata: NotRequired[ProviderMetadata]


class RawPart(TypedDict):
    """``{"type": "raw", "rawValue"}``: the provider's event as received (only with ``include_raw_chunks``)."""

    type: Literal["raw"]
    rawValue: Any


class ErrorPart(TypedDict):
    """``{"type": "error", "error"}``: an error inside the stream (the stream may go on)."""

    type: Literal["error"]
    error: Any


StreamPart: TypeAlias = (
    StreamStartPart
    | ResponseMetadataPart
    | TextStartPart
    | TextDeltaPart
    | TextEndPart
    | ReasoningStartPart
    | ReasoningDeltaPart
    | ReasoningEndPart
    | ToolInputStartPart
    | ToolInputDeltaPart
    | ToolInputEndPart
    | ToolCallPart
    | ToolResultPart
    | SourcePart
    | FilePart
    | ReasoningFilePart
    | CustomPart
    | FinishPart
    | RawPart
    | ErrorPart
)
"""One ``LanguageModelV2StreamPart`` as JSON (``{"type": "text-delta", "id": "0", "delta": "Hi"}``); narrow on ``part["type"]``."""


class ResponseFormat(TypedDict, total=False):
    """``LanguageModelV2CallOptions.responseFormat``: ``{"type": "text"}`` or JSON, optionally with a schema.

    ``{"type": "json", "schema": <JSON Schema>, "name": ..., "description": ...}`` asks for a JSON answer
    (OpenAI chat: ``response_format``; Responses: ``text.format``; Anthropic: a forced ``json`` tool whose
    input is streamed back as text).
    """

    type: Literal["text", "json"]
    schema: dict[str, Any] | None
    name: str | None
    description: str | None


class CallOptions(TypedDict, total=False):
    """Options for one ``do_stream`` call (``LanguageModelV2CallOptions`` in snake_case)."""

    prompt: list[dict[str, Any]]
    """AI SDK V2 prompt: ``system`` / ``user`` / ``assistant`` / ``tool`` messages with typed parts."""
    tools: list[dict[str, Any]]
    """``[{"type": "function", "name", "description", "inputSchema"}]``."""
    tool_choice: dict[str, Any] | None
    """``{"type": "auto" | "none" | "required"}`` or ``{"type": "tool", "toolName": ...}``."""
    temperature: float | None
    top_p: float | None
    top_k: int | None
    max_output_tokens: int | None
    stop_sequences: list[str] | None
    seed: int | None
    presence_penalty: float | None
    frequency_penalty: float | None
    response_format: ResponseFormat | None
    """Ask for JSON output (see ``ResponseFormat``)."""
    headers: Mapping[str, str] | None
    """Extra HTTP headers for this call."""
    provider_options: dict[str, dict[str, Any]] | None
    """Per-provider options keyed by provider name (``{"openai": {...}, "anthropic": {...}}``)."""
    include_raw_chunks: bool
    """Emit ``{"type": "raw", "rawValue": event_json}`` before the parts made from each event."""
    abort_signal: AbortSignal | None


class ModelStream(AsyncIterator[StreamPart]):
    """The parts of one ``do_stream`` call plus what went over the wire (AI SDK ``doStream`` result).

    The AI SDK returns ``{stream, request: {body}, response: {headers}}``; here the stream *is* the
    result and carries the rest as attributes, filled in by the time the first part is produced:

    * ``request`` — ``{"body": <the JSON request body, as sent>}`` (``{}`` until the request is built);
    * ``response`` — ``{"headers": {name: value}}`` of the HTTP response (``{}`` until it arrives);
    * ``model`` — the model that answered, when it is not the one called (a `FallbackModel`'s entry;
      ``None``: the called model), with ``fallback_index`` its place in the list and ``attempts``
      the calls that failed before it (``{"model", "index", "message", "statusCode"?}``).

    ``do_stream`` may return any async iterator; consumers read these attributes with ``getattr`` and
    treat a plain async generator (``ScriptedModel``) as ``{}``.
    """

    __slots__ = ("_parts", "attempts", "fallback_index", "model", "request", "response")

    def __init__(self) -> None:
        self.request: dict[str, Any] = {}
        self.response: dict[str, Any] = {}
        self.model: LanguageModel | None = None
        self.fallback_index: int | None = None
        self.attempts: list[dict[str, Any]] = []
        self._parts: AsyncGenerator[StreamPart, None] | None = None

    def attach(self, parts: AsyncGenerator[StreamPart, None]) -> "ModelStream":
        """Set the generator that produces the parts (it may fill ``request`` / ``response``)."""
        self._parts = parts
        return self

    def __aiter__(self) -> "ModelStream":
        return self

    async def __anext__(self) -> StreamPart:
        if self._parts is None:
            raise StopAsyncIteration
        return await self._parts.__anext__()

    async def aclose(self) -> None:
        """Close the underlying provider stream (and its HTTP response) early."""
        if self._parts is not None:
            await self._parts.aclose()


@runtime_checkable
class LanguageModel(Protocol):
    """A streaming language model (``LanguageModelV2``, streaming half only)."""

    specification_version: str
    provider: str
    model_id: str

    def do_stream(self, options: CallOptions) -> AsyncIterator[StreamPart]:
        """Stream the model's answer as ``LanguageModelV2StreamPart`` dicts.

        An async generator, or a ``ModelStream`` that also reports the request body and the
        response headers.
        """
        ...


class APICallError(Exception):
    """An HTTP call to a provider failed (non-2xx status, transport error or in-stream error event).

    ``message`` is the provider's own error message; ``str()`` is ``"openai (status 401): <message>"``,
    plus the URL when the endpoint could not be reached or read (no status). Request headers are
    never stored; the message, ``response_body``, ``response_headers`` and ``url`` are redacted
    (every configured key in every spelling, see `agentstream._secrets`) when the error is
    built, before anything is shortened. What a client may see is `client_message`: no URL,
    no body, no headers.
    """

    name = "AI_APICallError"

    def __init__(
        self,
        message: str,
        *,
        url: str,
        provider: str,
        status_code: int | None = None,
        response_body: str | None = None,
        response_headers: Mapping[str, str] | None = None,
        is_retryable: bool | None = None,
        data: Any = None,
        cause: BaseException | None = None,
        secret: str | None = None,
    ) -> None:
        extra = (secret,)
        message = redact(message, extra)
        super().__init__(message)
        self.message = message
        self.url = safe_url(url, extra)
        self.provider = provider
        self.status_code = status_code
        self.response_body = redact(response_body, extra) if response_body else response_body
        self.response_headers = (
            {k: redact(v, extra) for k, v in response_headers.items()} if response_headers else None
        )
        self.is_retryable = (
            is_retryable
            if is_retryable is not None
            else status_code is not None and (status_code in (408, 409, 429) or status_code >= 500)
        )
        self.data = redact_value(data, extra)
        self.__cause__ = cause

    @property
    def client_message(self) -> str:
        """``"openai (status 401): Incorrect API key provided: ***."``: safe to show anyone."""
        status = f" (status {self.status_code})" if self.status_code is not None else ""
        return f"{self.provider}{status}: {self.message}"

    def __str__(self) -> str:
        where = f" ({self.url})" if self.status_code is None and self.url else ""
        return self.client_message + where

    def __repr__(self) -> str:
        return (
            f"APICallError(provider={self.provider!r}, status_code={self.status_code!r}, "
            f"message={self.message!r}, url={self.url!r})"
        )
