"""Result records of a run: steps, the ``on_finish`` event, the full output, and usage arithmetic."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ..chunks import File, Source, ToolCall, ToolResult, to_jsonable
from ._usage import Usage

__all__ = [
    "AbortEvent",
    "ErrorEvent",
    "FinishEvent",
    "FullOutput",
    "StepResult",
    "TripwireInfo",
    "Usage",
    "add_usage",
    "final_usage",
    "total_usage",
]


@dataclass(frozen=True)
class TripwireInfo:
    """Why a processor blocked the run or a step (Mastra's ``StepTripwireData``)."""

    reason: str
    retry: bool | None = None
    metadata: Any = None
    processor_id: str | None = None

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> TripwireInfo:
        """From Mastra's JSON (``{reason, retry?, metadata?, processorId?}``)."""
        return cls(
            reason=str(data.get("reason") or ""),
            retry=data.get("retry"),
            metadata=data.get("metadata"),
            processor_id=data.get("processorId"),
        )

    def to_dict(self) -> dict[str, Any]:
        """Mastra's JSON: absent keys left out."""
        out: dict[str, Any] = {"reason": self.reason}
        if self.retry is not None:
            out["retry"] = self.retry
        if self.metadata is not None:
            out["metadata"] = self.metadata
        if self.processor_id is not None:
            out["processorId"] = self.processor_id
        return out


def add_usage(total: Usage, step: Usage | Mapping[str, Any] | None) -> Usage:
    """``total`` plus one step's usage: each count only where the step has it; ``raw`` is the later one."""
    if step is None:
        return total
    return total + (step if isinstance(step, Usage) else Usage.from_wire(step))


def total_usage(usage: Usage) -> Usage:
    """``totalUsage``: like ``usage`` with ``total_tokens`` = input + output + reasoning when unknown."""
    return usage.with_total()


def final_usage(usage: Usage) -> dict[str, Any]:
    """The aggregate written over the final ``finish`` chunk's usage, as on the wire (missing counts
    become 0; the cache-creation splits are not part of it)."""
    out: dict[str, Any] = {
        "inputTokens": usage.input_tokens or 0,
        "outputTokens": usage.output_tokens or 0,
        "totalTokens": usage.total_tokens or 0,
    }
    for key, value in (
        ("reasoningTokens", usage.reasoning_tokens),
        ("cachedInputTokens", usage.cached_input_tokens),
        ("cacheCreationInputTokens", usage.cache_creation_input_tokens),
    ):
        if value is not None:
            out[key] = value
    if usage.has_raw:
        out["raw"] = usage.raw
    return out


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _wire(record: Any, *extra: str) -> dict[str, Any]:
    """A result record as Mastra's JSON: camelCase keys, ``None`` left out (absent, never null),
    chunks, usage, steps and tripwires in their own wire form; ``extra`` names properties to add."""
    return {
        _camel(name): _wire_value(value)
        for name in (*(f.name for f in fields(record)), *extra)
        if (value := getattr(record, name)) is not None
    }


def _wire_value(value: Any) -> Any:
    # msgspec would write a nested dataclass by its snake_case field names: these go first.
    if isinstance(value, TripwireInfo):
        return value.to_dict()
    if isinstance(value, (StepResult, FinishEvent)):
        return value.to_wire()
    if isinstance(value, list):
        return [_wire_value(v) for v in value]
    return to_jsonable(value)


@dataclass(frozen=True, kw_only=True)
class StepResult:
    """One model call and its tools (Mastra's ``LLMStepResult``), passed to ``on_step_finish``."""

    step_type: str
    """``"initial"`` for the first step, ``"tool-result"`` after."""
    text: str
    reasoning: list[dict[str, Any]]
    reasoning_text: str
    sources: list[Source]
    files: list[File]
    tool_calls: list[ToolCall]
    tool_results: list[ToolResult]
    finish_reason: str | None
    usage: Usage
    warnings: list[Any]
    request: dict[str, Any]
    response: dict[str, Any]
    provider_metadata: dict[str, Any] | None = None
    tripwire: TripwireInfo | None = None
    content: list[dict[str, Any]] = field(default_factory=list)
    """Assistant content of the step in AI SDK message form (text, reasoning, tool-call, tool-result parts)."""

    @property
    def static_tool_calls(self) -> list[ToolCall]:
        """The step's calls of tools known when the agent was built."""
        return [c for c in self.tool_calls if c.payload.dynamic is not True]

    @property
    def dynamic_tool_calls(self) -> list[ToolCall]:
        """The step's calls of dynamic tools (`payload.dynamic` set)."""
        return [c for c in self.tool_calls if c.payload.dynamic is True]

    @property
    def static_tool_results(self) -> list[ToolResult]:
        """The step's results of tools known when the agent was built."""
        return [r for r in self.tool_results if r.payload.dynamic is not True]

    @property
    def dynamic_tool_results(self) -> list[ToolResult]:
        """The step's results of dynamic tools (`payload.dynamic` set)."""
        return [r for r in self.tool_results if r.payload.dynamic is True]

    def to_wire(self) -> dict[str, Any]:
        """Mastra's JSON of the step (``stepType``, ``finishReason``, ``toolCalls``, ``usage``, ...)."""
        return _wire(
            self, "static_tool_calls", "dynamic_tool_calls", "static_tool_results", "dynamic_tool_results"
        )


@dataclass(frozen=True, kw_only=True)
class FinishEvent:
    """What ``on_finish`` receives, once per run: at finish, at suspension or at abort."""

    text: str
    """All text of the run (Mastra's ``onFinish`` text, not the awaited ``text``)."""
    finish_reason: str | None
    usage: Usage
    total_usage: Usage
    steps: list[StepResult]
    tool_calls: list[ToolCall]
    tool_results: list[ToolResult]
    reasoning: list[dict[str, Any]]
    reasoning_text: str | None
    sources: list[Source]
    files: list[File]
    warnings: list[Any]
    provider_metadata: dict[str, Any] | None
    response: dict[str, Any]
    request: dict[str, Any]
    object: Any = None
    error: BaseException | None = None
    used_fallback_value: bool = False
    suspend_reason: str | None = None
    """``"tool-call-suspended"`` or ``"tool-call-approval"`` when the run suspended."""
    tool_name: str | None = None
    tool_call_id: str | None = None

    def to_wire(self) -> dict[str, Any]:
        """Mastra's JSON of the event (``finishReason``, ``totalUsage``, ``steps``, ...)."""
        return _wire(self)


@dataclass(frozen=True, kw_only=True)
class AbortEvent:
    """What ``on_abort`` receives: the finished steps and the partial text of the step in flight."""

    steps: list[StepResult]
    text: str


@dataclass(frozen=True, kw_only=True)
class ErrorEvent:
    """What ``on_error`` receives."""

    error: BaseException


@dataclass(frozen=True, kw_only=True)
class FullOutput:
    """``get_full_output()``: every result at once. ``text`` joins every step's text."""

    text: str
    usage: Usage
    total_usage: Usage
    steps: list[StepResult]
    finish_reason: str | None
    warnings: list[Any]
    provider_metadata: dict[str, Any] | None
    request: dict[str, Any]
    response: dict[str, Any]
    reasoning: list[dict[str, Any]]
    reasoning_text: str | None
    tool_calls: list[ToolCall]
    tool_results: list[ToolResult]
    sources: list[Source]
    files: list[File]
    object: Any
    used_fallback_value: bool
    error: BaseException | None
    tripwire: TripwireInfo | None
    run_id: str
    suspend_payload: Any = None
    resume_schema: dict[str, Any] | None = None
    """The JSON Schema of the data that resumes a suspended run (the chunk carries it as a string)."""
