"""Structured output, direct mode (spec §4.7): partial ``object`` chunks, then ``object-result`` or an error."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal

import pydantic

from ..chunks import UNSET, ChunkFrom, Object, ObjectResult, error_to_dict
from ..tools import Schema, compile_schema, format_issues, json_schema_of, validate_value
from ._convert import parse_partial_json

__all__ = ["StructuredOutputConfig", "StructuredOutputError", "StructuredOutputState"]

log = logging.getLogger("agentstream.agent")

ErrorStrategy = Literal["strict", "warn", "fallback"]


class StructuredOutputError(Exception):
    """Mastra's ``STRUCTURED_OUTPUT_*`` errors; ``details`` holds ``{domain, category, code, details}``."""

    def __init__(self, code: str, message: str, value: str, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.id = code
        self.code = code
        self.details = {"domain": "AGENT", "category": "SYSTEM", "code": code, "details": {"value": value}}
        self.__cause__ = cause

    def to_wire(self) -> dict[str, Any]:
        """The error as Mastra 1.71 writes a ``MastraError`` in a chunk: no ``name``, the cause as
        ``{message, name}`` (recorded in ``conformance/agent/structured-output-invalid.json``)."""
        out: dict[str, Any] = {"message": str(self), **self.details}
        if self.__cause__ is not None:
            out["cause"] = error_to_dict(self.__cause__)
        return out


class _SchemaIssuesError(Exception):
    name = "ValidationError"


@dataclass
class StructuredOutputConfig:
    """Structured output for a run (`agent.stream(..., structured_output=...)`).

    - `schema`: a pydantic model or a JSON Schema dict the answer must match;
    - `error_strategy`: `"strict"` (an invalid answer fails the run), `"warn"` (keep going, log) or
      `"fallback"` (use `fallback_value`).
    """

    schema: Schema
    error_strategy: ErrorStrategy = "strict"
    fallback_value: Any = UNSET

    def __post_init__(self) -> None:
        # a JSON Schema the validator cannot enforce is refused now, not when the model answers
        compile_schema(self.schema)

    @classmethod
    def from_option(cls, option: Any) -> StructuredOutputConfig:
        """Build a config from the `structured_output=` option.

        Accepts a config, a dict `{"schema": ..., "error_strategy": "strict" | "warn" | "fallback",
        "fallback_value": ...}`
        or a bare schema (a pydantic model, a JSON Schema dict); `ValueError` names a bad strategy or a
        missing fallback.
        """
        if isinstance(option, StructuredOutputConfig):
            return option
        if isinstance(option, dict) and "schema" in option:
            strategy = option.get("error_strategy", option.get("errorStrategy", "strict"))
            if strategy not in ("strict", "warn", "fallback"):
                raise ValueError(
                    f"structured_output error_strategy must be strict, warn or fallback, got {strategy!r}"
                )
            fallback = option.get("fallback_value", option.get("fallbackValue", UNSET))
            if strategy == "fallback" and fallback is UNSET:
                raise ValueError("structured_output error_strategy 'fallback' needs a fallback_value")
            return cls(option["schema"], strategy, fallback)
        if isinstance(option, dict) or (isinstance(option, type) and issubclass(option, pydantic.BaseModel)):
            return cls(option)
        raise TypeError("structured_output must be {'schema': <pydantic model | JSON Schema>, ...}")

    @property
    def json_schema(self) -> dict[str, Any]:
        """The schema as a JSON Schema dict (what the provider is asked to follow)."""
        return json_schema_of(self.schema)


class StructuredOutputState:
    """Per model call: accumulates the text, emits partial objects, validates at the model's finish."""

    __slots__ = ("_config", "_done", "_last", "_run_id", "_text")

    def __init__(self, config: StructuredOutputConfig, run_id: str) -> None:
        self._config = config
        self._run_id = run_id
        self._text: list[str] = []
        self._last: Any = UNSET
        self._done = False

    def feed(self, delta: str) -> Object | None:
        """The ``object`` chunk to emit *before* this delta's ``text-delta``, if the partial value changed."""
        self._text.append(delta)
        ok, value = parse_partial_json("".join(self._text))
        if not ok or (self._last is not UNSET and value == self._last and type(value) is type(self._last)):
            return None
        self._last = value
        return Object(run_id=self._run_id, from_=ChunkFrom.AGENT, object=value)

    def finish(self, finish_reason: str) -> tuple[ObjectResult | None, BaseException | None]:
        """At the model's ``finish``: ``(object-result, None)``, ``(None, error)`` or ``(None, None)`` (warn)."""
        if self._done:
            return None, None
        self._done = True
        text = "".join(self._text)
        error: StructuredOutputError
        if finish_reason in ("length", "content-filter"):
            error = StructuredOutputError(
                "STRUCTURED_OUTPUT_TRUNCATED",
                f"Structured output was truncated: the model stopped with finish reason '{finish_reason}'",
                text,
            )
        else:
            import json

            try:
                value = json.loads(text)
            except ValueError as exc:
                error = StructuredOutputError(
                    "STRUCTURED_OUTPUT_PARSING_FAILED",
                    f"Structured output parsing failed: the model's text is not valid JSON ({exc})",
                    text,
                    exc,
                )
            else:
                outcome = validate_value(self._config.schema, value)
                if outcome.ok:
                    parsed = outcome.value
                    if isinstance(parsed, pydantic.BaseModel):
                        parsed = parsed.model_dump(mode="json")
                    return ObjectResult(run_id=self._run_id, from_=ChunkFrom.AGENT, object=parsed), None
                summary = format_issues(outcome.issues)
                error = StructuredOutputError(
                    "STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED",
                    f"Structured output validation failed: {summary}",
                    text,
                    _SchemaIssuesError(summary),
                )
        strategy = self._config.error_strategy
        if strategy == "warn":
            log.warning("%s", error)
            return None, None
        if strategy == "fallback":
            return (
                ObjectResult(
                    run_id=self._run_id,
                    from_=ChunkFrom.AGENT,
                    object=self._config.fallback_value,
                    metadata={"fallback": True},
                ),
                None,
            )
        return None, error
