"""How a run ends: the loop's phases return an `Ending`, and `_Run.end` (``_loop``) turns it into
the run's last chunks; a finished step travels as a typed `StepOutcome` whose camelCase shape
(Mastra's ``LLMIterationData``) is built only here, at the chunk boundary.

The endings and what each one leaves the output with are the table in ``docs/architecture.md``
("Endings"), tested row by row in ``tests/agent/test_endings.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..chunks import Chunk, ChunkFrom, Finish, FinishPayload, StepFinish, StepFinishPayload
from ._tripwire import Tripwire

__all__ = [
    "INPUT_PHASES",
    "Ending",
    "EndingKind",
    "StepOutcome",
    "finish_chunk",
    "finish_response",
    "step_finish_chunk",
    "ui_parts",
]

AGENT = ChunkFrom.AGENT

EndingKind = Literal["finished", "aborted", "tripwire", "suspended", "timed_out"]
"""``failed`` is not among them: a step error finishes the run (reason ``error``), and an exception
out of the loop itself ends the output with an ``error`` chunk (``ModelOutput``)."""

INPUT_PHASES = frozenset({"input", "input-step"})
"""Tripwire phases whose chunk carries ``runId`` / ``from`` (Mastra's input processors)."""


@dataclass(frozen=True)
class StepOutcome:
    """One step as ``step-finish`` reports it (the last one's is the run's ``finish`` too)."""

    message_id: str
    reason: str
    """``stepResult.reason``: the model's finish reason, ``tool-calls``, ``retry`` or ``tripwire``."""
    is_continued: bool
    metadata: dict[str, Any]
    """The response metadata (``id``, ``timestamp``, ``modelId``, ``headers``, ``request`` ...)."""
    text: str
    tool_calls: list[dict[str, Any]]
    usage: dict[str, Any]
    messages: dict[str, list[dict[str, Any]]] | None = None
    """``{"all", "user", "nonUser"}``; ``None`` for an aborted run's ``finish`` (Mastra sends none)."""
    warnings: list[Any] | None = None
    """``stepResult.warnings`` (``None``: absent, as on a retried or aborted step)."""
    raw_reason: str | None = None
    resumed_message_id: bool = False
    """``stepResult.messageId``: set on the step a resumed leg finishes, as recorded."""
    retry: Tripwire | None = None
    """The output-step tripwire that sends this step round again (``reason == "retry"``)."""
    retry_count: int | None = 0
    """``processorRetryCount`` (``None``: absent); consecutive retries so far."""
    retry_feedback: str | None = None
    steps: list[dict[str, Any]] | None = None
    """``output.steps``: Mastra's per-step records, sent once a step tripped a processor."""
    fallback_index: int | None = None
    """``fallbackModelIndex``: which model of a fallback list answered (``None``: no list)."""

    @classmethod
    def aborted(cls, message_id: str, metadata: dict[str, Any], text: str) -> StepOutcome:
        """The ``finish`` of an aborted run (Mastra's bail: reason ``tripwire``, no messages)."""
        return cls(message_id, "tripwire", False, metadata, text, [], {}, retry_count=None)

    def step_result(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reason": self.reason, "isContinued": self.is_continued}
        retry = self.retry
        if retry is not None:
            out["retryReason"] = retry.reason
            if retry.metadata is not None:
                out["retryMetadata"] = retry.metadata
            if retry.processor_id is not None:
                out["retryProcessorId"] = retry.processor_id
        if self.warnings is not None:
            out["warnings"] = self.warnings
        if self.raw_reason is not None:
            out["rawReason"] = self.raw_reason
        if self.resumed_message_id:
            out["messageId"] = self.message_id
        return out

    def output(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text, "toolCalls": self.tool_calls, "usage": self.usage}
        if self.steps is not None:
            out["steps"] = self.steps
        return out

    def extra(self) -> dict[str, Any]:
        """The iteration data's keys beyond the payload's own fields (``processorRetry*``)."""
        out: dict[str, Any] = {}
        if self.retry_count is not None:
            out["processorRetryCount"] = self.retry_count
        if self.retry_feedback is not None:
            out["processorRetryFeedback"] = self.retry_feedback
        if self.fallback_index is not None:
            out["fallbackModelIndex"] = self.fallback_index
        return out


@dataclass
class Ending:
    """Why the loop stopped; `_Run.end` makes its chunks."""

    kind: EndingKind
    outcome: StepOutcome | None = None
    """``finished`` / ``aborted``: what ``finish`` reports."""
    phase: str | None = None
    """``tripwire``: ``input``, ``input-step``, ``output-stream`` or ``tool-result``."""
    trip: Tripwire | None = None
    error: Any = None
    """``timed_out``: the timeout error."""
    chunks: list[Chunk] = field(default_factory=list)
    """``suspended``: the suspension chunk."""


def step_finish_chunk(run_id: str, outcome: StepOutcome) -> StepFinish:
    return StepFinish(
        run_id=run_id,
        from_=AGENT,
        payload=StepFinishPayload(
            message_id=outcome.message_id,
            step_result=outcome.step_result(),
            metadata=outcome.metadata,
            output=outcome.output(),
            messages=outcome.messages,
            extra=outcome.extra(),
        ),
    )


def finish_chunk(run_id: str, outcome: StepOutcome, response: dict[str, Any] | None = None) -> Finish:
    return Finish(
        run_id=run_id,
        from_=AGENT,
        payload=FinishPayload(
            step_result=outcome.step_result(),
            output=outcome.output(),
            metadata=outcome.metadata,
            messages=outcome.messages,
            response=response,
            extra={"messageId": outcome.message_id, **outcome.extra()},
        ),
    )


def finish_response(outcome: StepOutcome) -> dict[str, Any]:
    """``finish.payload.response`` as Mastra's final output sets it after its output processors
    ran: the last step's response metadata (without ``request`` / ``providerMetadata``), the
    run's response messages, and the same answer as one assistant UI message."""
    response = {k: v for k, v in outcome.metadata.items() if k not in ("request", "providerMetadata")}
    # the response messages only: a message the loop added for the model (a goal's reminder) is
    # the user's side of the conversation, as in Mastra's MessageList
    messages = [m for m in (outcome.messages or {}).get("nonUser") or [] if m.get("role") != "user"]
    response["messages"] = messages
    model = outcome.metadata.get("modelMetadata") or {}
    ui: dict[str, Any] = {
        "id": outcome.message_id,
        "role": "assistant",
        "metadata": {"modelId": model.get("modelId"), "provider": model.get("modelProvider")},
        "parts": ui_parts(messages),
    }
    response["uiMessages"] = [ui] if ui["parts"] else []
    return response


def ui_parts(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The AI SDK UI parts of the response's model messages: text and reasoning as they are,
    each tool call as one ``tool-<name>`` part holding its result (``state`` as the AI SDK's)."""
    results: dict[str, dict[str, Any]] = {}
    for message in messages:
        if message.get("role") == "tool" and isinstance(message.get("content"), list):
            for part in message["content"]:
                if part.get("type") == "tool-result":
                    results[str(part.get("toolCallId"))] = part
    parts: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content")
        if message.get("role") != "assistant" or not isinstance(content, list):
            continue
        for part in content:
            kind = part.get("type")
            if kind in ("text", "reasoning"):
                ui_part: dict[str, Any] = {"type": kind, "text": part.get("text", "")}
                if part.get("providerOptions") is not None:
                    ui_part["providerMetadata"] = part["providerOptions"]
                parts.append(ui_part)
            elif kind == "tool-call":
                parts.append(_tool_part(part, results.get(str(part.get("toolCallId")))))
    return parts


def _tool_part(call: dict[str, Any], result: dict[str, Any] | None) -> dict[str, Any]:
    part: dict[str, Any] = {
        "type": f"tool-{call.get('toolName')}",
        "toolCallId": call.get("toolCallId"),
        "input": call.get("input"),
    }
    if result is None:
        part["state"] = "input-available"
        return part
    output = result.get("output")
    if isinstance(output, dict) and output.get("type") in ("error-text", "error-json"):
        part["errorText"] = (
            output.get("value") if isinstance(output.get("value"), str) else str(output.get("value"))
        )
        part["state"] = "output-error"
        return part
    part["output"] = output.get("value") if isinstance(output, dict) and "value" in output else output
    part["state"] = "output-available"
    return part
