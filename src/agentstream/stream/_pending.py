"""The awaitable results of a run: one typed `Delayed` each, settled together from the accumulator."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from ..chunks import File, Source, ToolCall, ToolResult
from ._accumulator import RunAccumulator
from ._promise import Delayed
from ._results import StepResult
from ._usage import Usage

__all__ = ["PendingResults", "UnresolvedResultError", "resume_schema_dict"]


class UnresolvedResultError(RuntimeError):
    """A result was still pending when the stream ended (the run produced no ``finish``)."""


def resume_schema_dict(schema: str | dict[str, Any] | None) -> dict[str, Any] | None:
    """The JSON Schema a chunk carries as a JSON string (Mastra's wire), as a dict."""
    if schema is None or isinstance(schema, dict):
        return schema
    value = json.loads(schema)
    if not isinstance(value, dict):
        raise ValueError(f"resumeSchema must be a JSON object, got {type(value).__name__}")
    return value


class PendingResults:
    """The run's results, each settled once; awaiting any starts the run (``on_await``)."""

    __slots__ = (
        "files",
        "finish_reason",
        "object",
        "provider_metadata",
        "reasoning",
        "reasoning_text",
        "request",
        "response",
        "resume_schema",
        "sources",
        "steps",
        "suspend_payload",
        "text",
        "tool_calls",
        "tool_results",
        "total_usage",
        "usage",
        "warnings",
    )

    def __init__(self, on_await: Callable[[], None]) -> None:
        self.text: Delayed[str] = Delayed(on_await)
        self.reasoning: Delayed[list[dict[str, Any]]] = Delayed(on_await)
        self.reasoning_text: Delayed[str | None] = Delayed(on_await)
        self.sources: Delayed[list[Source]] = Delayed(on_await)
        self.files: Delayed[list[File]] = Delayed(on_await)
        self.tool_calls: Delayed[list[ToolCall]] = Delayed(on_await)
        self.tool_results: Delayed[list[ToolResult]] = Delayed(on_await)
        self.steps: Delayed[list[StepResult]] = Delayed(on_await)
        self.usage: Delayed[Usage] = Delayed(on_await)
        self.total_usage: Delayed[Usage] = Delayed(on_await)
        self.finish_reason: Delayed[str | None] = Delayed(on_await)
        self.warnings: Delayed[list[Any]] = Delayed(on_await)
        self.provider_metadata: Delayed[dict[str, Any] | None] = Delayed(on_await)
        self.response: Delayed[dict[str, Any]] = Delayed(on_await)
        self.request: Delayed[dict[str, Any]] = Delayed(on_await)
        self.object: Delayed[Any] = Delayed(on_await)
        self.suspend_payload: Delayed[Any] = Delayed(on_await)
        self.resume_schema: Delayed[dict[str, Any] | None] = Delayed(on_await)

    def __iter__(self) -> Iterator[tuple[str, Delayed[Any]]]:
        for name in self.__slots__:
            yield name, getattr(self, name)

    def resolve_all(self, acc: RunAccumulator, *, text: str, finish_reason: str | None) -> None:
        """Settle every result still pending from the accumulator (the run ended or stopped)."""
        self.text.resolve(text)
        self.finish_reason.resolve(finish_reason)
        self.usage.resolve(acc.usage)
        self.total_usage.resolve(acc.usage.with_total())
        self.warnings.resolve(list(acc.warnings))
        self.provider_metadata.resolve(acc.provider_metadata)
        self.response.resolve(acc.response)
        self.request.resolve(acc.request)
        self.reasoning.resolve(acc.reasoning_details())
        self.reasoning_text.resolve(acc.reasoning_text())
        self.sources.resolve(list(acc.sources))
        self.files.resolve(list(acc.files))
        self.tool_calls.resolve(list(acc.tool_calls))
        self.tool_results.resolve(list(acc.tool_results))
        self.steps.resolve(list(acc.steps))
        self.suspend_payload.resolve(None)
        self.resume_schema.resolve(None)
        self.object.resolve(acc.object_value)

    def reject_all(self, error: BaseException) -> None:
        """Reject every result still pending with ``error``."""
        for _, delayed in self:
            delayed.reject(error)

    def reject_unresolved(self) -> None:
        """At the end of the stream: whatever is still pending will never be known."""
        for name, delayed in self:
            delayed.reject(
                UnresolvedResultError(f"result '{name}' was not resolved or rejected when stream finished")
            )
