"""Span helpers shared by the run, model, tool, background and workflow spans (OpenTelemetry loaded)."""

from __future__ import annotations

import json
import traceback
from collections.abc import Mapping
from typing import Any

from opentelemetry.trace import Span, Status, StatusCode

from .._secrets import redact

__all__ = ["ABORTED", "fail", "provider_name", "to_json", "tokens"]

ABORTED = "agentstream.aborted"
"""Set (``True``) on a span whose work was cut short by an abort or a consumer that went away."""


def fail(span: Span, error: Any) -> None:
    """Record ``error`` on ``span``: status ``ERROR``, ``error.type`` and an ``exception`` event.

    Messages and stack traces are redacted (configured secrets never reach a trace backend), which is
    why this does not call ``span.record_exception``.
    """
    if isinstance(error, BaseException):
        kind = type(error).__qualname__
        message = redact(str(error)) or kind
        stack = redact("".join(traceback.format_exception(error)))
        span.add_event(
            "exception",
            {"exception.type": kind, "exception.message": message, "exception.stacktrace": stack},
        )
    else:
        kind = "error"
        if isinstance(error, Mapping):
            kind = str(error.get("name") or kind)
            message = redact(str(error.get("message") or to_json(error)))
        else:
            message = redact(str(error))
        span.add_event("exception", {"exception.type": kind, "exception.message": message})
    span.set_attribute("error.type", kind)
    span.set_status(Status(StatusCode.ERROR, message))


def provider_name(provider: str) -> str:
    """``gen_ai.provider.name`` from a model's ``provider`` (``"openai.chat"`` → ``"openai"``)."""
    return provider.split(".", 1)[0]


def tokens(value: Any) -> int | None:
    """A token count from a V2 usage field (an int) or a V3 one (``{"total": n, ...}``)."""
    if isinstance(value, Mapping):
        value = value.get("total")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def to_json(value: Any) -> str:
    """``value`` as JSON text for a content attribute (what is not JSON becomes its ``str``)."""
    return json.dumps(value, default=str, ensure_ascii=False)
