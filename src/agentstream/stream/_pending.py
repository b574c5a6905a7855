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

__all__ = ["AwaitableResults", "PendingResults", "UnresolvedResultError", "resume_schema_dict"]


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


class AwaitableResults:
    """The typed result properties of `ModelOutput` (each a `Delayed` of `PendingResults`)."""

    _results: PendingResults
    _has_structured_output: bool
    _error: BaseException | None

    @property
    def text(self) -> Delayed[str]:
        """Awaitable: the run's text (spec §3.4 rules)."""
        return self._results.text

    @property
    def reasoning(self) -> Delayed[list[dict[str, Any]]]:
        """Awaitable: reasoning details."""
        return self._results.reasoning

    @property
    def reasoning_text(self) -> Delayed[str | None]:
        """Awaitable: all reasoning text, or ``None``."""
        return self._results.reasoning_text

    @property
    def sources(self) -> Delayed[list[Source]]:
        """Awaitable: the ``source`` chunks."""
        return self._results.sources

    @property
    def files(self) -> Delayed[list[File]]:
        """Awaitable: the ``file`` chunks."""
        return self._results.files

    @property
    def tool_calls(self) -> Delayed[list[ToolCall]]:
        """Awaitable: the ``tool-call`` chunks."""
        return self._results.tool_calls

    @property
    def tool_results(self) -> Delayed[list[ToolResult]]:
        """Awaitable: the ``tool-result`` chunks."""
        return self._results.tool_results

    @property
    def steps(self) -> Delayed[list[StepResult]]:
        """Awaitable: one `StepResult` per step."""
        return self._results.steps

    @property
    def usage(self) -> Delayed[Usage]:
        """Awaitable: usage summed over the steps (`Usage`: ``input_tokens``, ``output_tokens``, ...)."""
        return self._results.usage

    @property
    def total_usage(self) -> Delayed[Usage]:
        """Awaitable: total usage (``total_tokens`` filled in when the provider did not give it)."""
        return self._results.total_usage

    @property
    def finish_reason(self) -> Delayed[str | None]:
        """Awaitable: the run's finish reason."""
        return self._results.finish_reason

    @property
    def warnings(self) -> Delayed[list[Any]]:
        """Awaitable: provider warnings."""
        return self._results.warnings

    @property
    def provider_metadata(self) -> Delayed[dict[str, Any] | None]:
        """Awaitable: the last step's provider metadata."""
        return self._results.provider_metadata

    @property
    def response(self) -> Delayed[dict[str, Any]]:
        """Awaitable: response metadata."""
        return self._results.response

    @property
    def request(self) -> Delayed[dict[str, Any]]:
        """Awaitable: the last request."""
        return self._results.request

    @property
    def object(self) -> Delayed[Any]:
        """Awaitable: the structured output; ``None`` at once when the run has no schema (and no error)."""
        delayed = self._results.object
        if not self._has_structured_output and self._error is None:
            delayed.resolve(None)
        return delayed

    @property
    def suspend_payload(self) -> Delayed[Any]:
        """Awaitable: the payload of the chunk that suspended the run (Mastra's ``suspendPayload``): a
        `ToolCallApprovalPayload` or `ToolCallSuspendedPayload` (``tool_call_id``, ``tool_name``,
        ``args``, ``suspend_payload``, ``resume_schema``); ``None`` when the run did not suspend."""
        return self._results.suspend_payload

    @property
    def resume_schema(self) -> Delayed[dict[str, Any] | None]:
        """Awaitable: the JSON Schema (a dict) of the data that resumes the run (``None`` when it did
        not suspend, or the suspended tool declares no ``resume_schema``)."""
        return self._results.resume_schema
