"""Agent chunks (Mastra's ``AgentChunkType``) and their payloads, spec §1.2.

One class per ``type``; payload classes carry the exact field names of the TypeScript types
(snake_case here, camelCase on the wire). Open bags that Mastra types as ``Record<string, unknown>``
(step results, usage, request bodies) stay plain JSON dicts with their wire keys.

Here: run and step framing, text and reasoning, sources and files. Tool chunks are in
`_agent_tools`, the chunks that steer a run (structured output, processors, goals, background
tasks) in `_agent_control`.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from ._base import BaseChunk, Payload, ProviderMetadata

__all__ = [
    "Abort",
    "AbortPayload",
    "Custom",
    "CustomPayload",
    "Error",
    "ErrorPayload",
    "File",
    "FilePayload",
    "Finish",
    "FinishPayload",
    "Raw",
    "RawPayload",
    "ReasoningDelta",
    "ReasoningDeltaPayload",
    "ReasoningEnd",
    "ReasoningEndPayload",
    "ReasoningFile",
    "ReasoningFilePayload",
    "ReasoningSignature",
    "ReasoningSignaturePayload",
    "ReasoningStart",
    "ReasoningStartPayload",
    "RedactedReasoning",
    "RedactedReasoningPayload",
    "ResponseMetadata",
    "ResponseMetadataPayload",
    "Source",
    "SourcePayload",
    "Start",
    "StartPayload",
    "StepFinish",
    "StepFinishPayload",
    "StepOutput",
    "StepOutputPayload",
    "StepStart",
    "StepStartPayload",
    "TextDelta",
    "TextDeltaPayload",
    "TextEnd",
    "TextEndPayload",
    "TextStart",
    "TextStartPayload",
    "Watch",
    "WatchPayload",
]


# --- run and step framing -------------------------------------------------------------------


class StartPayload(Payload, frozen=True):
    """``start``: ``{id: agentId, messageId}`` at runtime; the type is an open record."""

    id: str | None = None
    message_id: str | None = None


class Start(BaseChunk, tag="start", frozen=True):
    """`start` chunk: the first chunk of a run.

    Payload: `StartPayload`.
    """

    payload: StartPayload


class StepStartPayload(Payload, frozen=True):
    """``step-start``: emitted once per model call."""

    request: dict[str, Any]
    """``{body?: string, ...}``: the provider request."""
    message_id: str | None = None
    started_at: int | float | None = None
    """Epoch milliseconds taken just before the provider call."""
    input_messages: list[Any] | None = None
    warnings: list[Any] | None = None


class StepStart(BaseChunk, tag="step-start", frozen=True):
    """`step-start` chunk: a model call (one step of the loop) begins.

    Payload: `StepStartPayload`.
    """

    payload: StepStartPayload


class ResponseMetadataPayload(Payload, frozen=True):
    """Spread of the provider's ``response-metadata`` part (``id``, ``timestamp``, ``modelId``...)."""

    signature: str | None = None


class ResponseMetadata(BaseChunk, tag="response-metadata", frozen=True):
    """`response-metadata` chunk: the provider's response id, timestamp and model id for the current step.

    Payload: `ResponseMetadataPayload`.
    """

    payload: ResponseMetadataPayload


class StepFinishPayload(Payload, frozen=True):
    """``step-finish``: the iteration's ``LLMIterationData``."""

    step_result: dict[str, Any]
    """``{reason, rawReason?, warnings?, isContinued?, logprobs?, ...}``"""
    output: dict[str, Any]
    """``{text?, toolCalls?, usage, steps?, object?, ...}``"""
    metadata: dict[str, Any]
    id: str | None = None
    provider_metadata: ProviderMetadata | None = None
    total_usage: dict[str, Any] | None = None
    response: dict[str, Any] | None = None
    message_id: str | None = None
    messages: dict[str, Any] | None = None

    @property
    def reason(self) -> str | None:
        """The step's finish reason (`"stop"`, `"tool-calls"`, `"length"`, ...) or `None`."""
        reason = self.step_result.get("reason")
        return reason if isinstance(reason, str) else None


class StepFinish(BaseChunk, tag="step-finish", frozen=True):
    """`step-finish` chunk: a model call ended; carries the step's finish reason, usage and output.

    Payload: `StepFinishPayload`.
    """

    payload: StepFinishPayload


class FinishPayload(Payload, frozen=True):
    """``finish``: one per run on the outer stream, usage overwritten with the run's aggregate."""

    step_result: dict[str, Any]
    output: dict[str, Any]
    metadata: dict[str, Any]
    messages: dict[str, Any] | None = None
    provider_metadata: ProviderMetadata | None = None
    response: dict[str, Any] | None = None

    @property
    def reason(self) -> str | None:
        """The run's finish reason (`"stop"`, `"tool-calls"`, `"length"`, ...) or `None`."""
        reason = self.step_result.get("reason")
        return reason if isinstance(reason, str) else None


class Finish(BaseChunk, tag="finish", frozen=True):
    """`finish` chunk: the last chunk of a successful run; `payload.reason` is the finish reason.

    Payload: `FinishPayload`.
    """

    payload: FinishPayload


class ErrorPayload(Payload, frozen=True):
    """``error``: ``error`` may be an exception (written as ``{name, message}``) or any JSON value."""

    error: Any


class Error(BaseChunk, tag="error", frozen=True):
    """`error` chunk: the run failed; the error is in `payload.error`.

    Payload: `ErrorPayload`.
    """

    payload: ErrorPayload


class RawPayload(Payload, frozen=True):
    """``raw``: the provider's raw value; all of it lives in ``extra``."""


class Raw(BaseChunk, tag="raw", frozen=True):
    """`raw` chunk: a raw provider event, passed through when raw chunks are requested.

    Payload: `RawPayload`.
    """

    payload: RawPayload


class AbortPayload(Payload, frozen=True):
    """``abort``: always ``{}``."""


class Abort(BaseChunk, tag="abort", frozen=True):
    """`abort` chunk: the run was aborted (an `AbortSignal` fired or the consumer went away).

    Payload: `AbortPayload`.
    """

    # A factory, not a default value: ``omit_defaults`` would drop an equal default, and Mastra
    # always sends ``"payload": {}``.
    payload: AbortPayload = msgspec.field(default_factory=AbortPayload)


class WatchPayload(Payload, frozen=True):
    """``watch``: declared by Mastra, open record."""


class Watch(BaseChunk, tag="watch", frozen=True):
    """`watch` chunk: a watch event (declared by Mastra, an open record).

    Payload: `WatchPayload`.
    """

    payload: WatchPayload


class StepOutputPayload(Payload, frozen=True):
    """Payload of the `step-output` chunk (`StepOutput`): the nested chunk in `output`."""

    output: Any


class StepOutput(BaseChunk, tag="step-output", frozen=True):
    """`step-output` chunk: a chunk produced by a nested run (a workflow step), wrapped whole in
    `payload.output`.

    Payload: `StepOutputPayload`.
    """

    payload: StepOutputPayload


# --- text and reasoning ---------------------------------------------------------------------


class TextStartPayload(Payload, frozen=True):
    """Payload of the `text-start` chunk (`TextStart`): the text part's id and provider metadata."""

    id: str
    provider_metadata: ProviderMetadata | None = None


class TextStart(BaseChunk, tag="text-start", frozen=True):
    """`text-start` chunk: a text part with id `payload.id` begins.

    Payload: `TextStartPayload`.
    """

    payload: TextStartPayload


# gc=False: one per token and never in a cycle; tracked, a long log costs every collection a walk
# over all of it (docs/decisions/issue-29-token-path.md).
class TextDeltaPayload(Payload, frozen=True, gc=False):
    """Payload of the `text-delta` chunk (`TextDelta`): the text part's id and the new text."""

    id: str
    text: str
    provider_metadata: ProviderMetadata | None = None


# gc=False: one per token and never in a cycle; tracked, a long log costs every collection a walk
# over all of it (docs/decisions/issue-29-token-path.md).
class TextDelta(BaseChunk, tag="text-delta", frozen=True, gc=False):
    """`text-delta` chunk: a piece of the answer's text (`payload.text`) for text part `payload.id`.

    Payload: `TextDeltaPayload`.
    """

    payload: TextDeltaPayload


class TextEndPayload(Payload, frozen=True):
    """``text-end``: the raw provider part, so ``extra`` usually holds ``{"type": "text-end"}``."""

    id: str
    provider_metadata: ProviderMetadata | None = None


class TextEnd(BaseChunk, tag="text-end", frozen=True):
    """`text-end` chunk: text part `payload.id` is complete.

    Payload: `TextEndPayload`.
    """

    payload: TextEndPayload


class ReasoningStartPayload(Payload, frozen=True):
    """Payload of the `reasoning-start` chunk (`ReasoningStart`): the reasoning part's id, provider metadata
    and signature.
    """

    id: str
    provider_metadata: ProviderMetadata | None = None
    signature: str | None = None


class ReasoningStart(BaseChunk, tag="reasoning-start", frozen=True):
    """`reasoning-start` chunk: a reasoning (thinking) part begins.

    Payload: `ReasoningStartPayload`.
    """

    payload: ReasoningStartPayload


# gc=False: one per token and never in a cycle; tracked, a long log costs every collection a walk
# over all of it (docs/decisions/issue-29-token-path.md).
class ReasoningDeltaPayload(Payload, frozen=True, gc=False):
    """Payload of the `reasoning-delta` chunk (`ReasoningDelta`): the reasoning part's id and the new text."""

    id: str
    text: str
    provider_metadata: ProviderMetadata | None = None


# gc=False: one per token and never in a cycle; tracked, a long log costs every collection a walk
# over all of it (docs/decisions/issue-29-token-path.md).
class ReasoningDelta(BaseChunk, tag="reasoning-delta", frozen=True, gc=False):
    """`reasoning-delta` chunk: a piece of the model's reasoning text.

    Payload: `ReasoningDeltaPayload`.
    """

    payload: ReasoningDeltaPayload


class ReasoningEndPayload(Payload, frozen=True):
    """Payload of the `reasoning-end` chunk (`ReasoningEnd`): the reasoning part's id, provider metadata and
    signature.
    """

    id: str
    provider_metadata: ProviderMetadata | None = None
    signature: str | None = None


class ReasoningEnd(BaseChunk, tag="reasoning-end", frozen=True):
    """`reasoning-end` chunk: a reasoning part is complete.

    Payload: `ReasoningEndPayload`.
    """

    payload: ReasoningEndPayload


class ReasoningSignaturePayload(Payload, frozen=True):
    """Payload of the `reasoning-signature` chunk (`ReasoningSignature`): the reasoning part's id and its
    signature.
    """

    id: str
    signature: str
    provider_metadata: ProviderMetadata | None = None


class ReasoningSignature(BaseChunk, tag="reasoning-signature", frozen=True):
    """`reasoning-signature` chunk: the provider's signature of a reasoning part (Anthropic thinking).

    Payload: `ReasoningSignaturePayload`.
    """

    payload: ReasoningSignaturePayload


class RedactedReasoningPayload(Payload, frozen=True):
    """Payload of the `redacted-reasoning` chunk (`RedactedReasoning`): the part's id and the provider's
    opaque data.
    """

    id: str
    data: Any
    provider_metadata: ProviderMetadata | None = None


class RedactedReasoning(BaseChunk, tag="redacted-reasoning", frozen=True):
    """`redacted-reasoning` chunk: reasoning the provider redacted; only its opaque data is passed on.

    Payload: `RedactedReasoningPayload`.
    """

    payload: RedactedReasoningPayload


# --- sources, files, custom -----------------------------------------------------------------


class SourcePayload(Payload, frozen=True):
    """Payload of the `source` chunk (`Source`): the source's id, kind (`url` or `document`), title and URL
    or file details.
    """

    id: str
    source_type: Literal["url", "document"]
    title: str
    mime_type: str | None = None
    filename: str | None = None
    url: str | None = None
    provider_metadata: ProviderMetadata | None = None


class Source(BaseChunk, tag="source", frozen=True):
    """`source` chunk: a URL or document the model cited.

    Payload: `SourcePayload`.
    """

    payload: SourcePayload


class FilePayload(Payload, frozen=True):
    """``file``: ``data`` is a base64/URL string or ``bytes`` (written as base64)."""

    data: Any
    mime_type: str
    base64: str | None = None
    filename: str | None = None
    provider_metadata: ProviderMetadata | None = None


class File(BaseChunk, tag="file", frozen=True):
    """`file` chunk: a file the model produced (an image, for instance).

    Payload: `FilePayload`.
    """

    payload: FilePayload


class ReasoningFilePayload(Payload, frozen=True):
    """Payload of the `reasoning-file` chunk (`ReasoningFile`): the file data (base64, URL or bytes) and its
    media type.
    """

    data: Any
    mime_type: str
    base64: str | None = None
    provider_metadata: ProviderMetadata | None = None


class ReasoningFile(BaseChunk, tag="reasoning-file", frozen=True):
    """`reasoning-file` chunk: a file produced as part of the model's reasoning.

    Payload: `ReasoningFilePayload`.
    """

    payload: ReasoningFilePayload


class CustomPayload(Payload, frozen=True):
    """Payload of the `custom` chunk (`Custom`): its kind and provider metadata."""

    kind: str
    """``'{provider}.{type}'``"""
    provider_metadata: ProviderMetadata | None = None


class Custom(BaseChunk, tag="custom", frozen=True):
    """`custom` chunk: a provider-specific part (`payload.kind` is `'{provider}.{type}'`).

    Payload: `CustomPayload`.
    """

    payload: CustomPayload
