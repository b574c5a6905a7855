"""What a failing tool reports: logged in full on the server, redacted (and optionally masked) for
the client and the model.

The agent loop turns the exception a tool raised into a ``tool-error`` chunk (sent to the client)
and an ``error-text`` tool result (sent to the model). Both are built from what
`reported_tool_error` returns, so a secret caught in a tool's exception message reaches
neither; the server log keeps the original, with the traceback and the run id, secrets masked.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Mapping
from typing import Any

from .._secrets import redact, redact_value

__all__ = ["RedactedToolError", "ToolErrorMask", "reported_tool_error"]

log = logging.getLogger("agentstream.tools")

ToolErrorMask = Callable[[Exception], "str | BaseException"]
"""``on_tool_error``: the exception a tool raised → what the client and the model see instead (a
message, or an exception). Configured secrets are still redacted from the result."""


class RedactedToolError(Exception):
    """Stands in for a tool's exception whose text had to change (a secret in it, or a mask).

    Keeps the original's name (``ValueError: …``) and its public fields (redacted), never the
    original itself: nothing that serialises this error can reach the secret.
    """

    def __init__(self, message: str, name: str, fields: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self._name = name
        for key, value in (fields or {}).items():
            setattr(self, key, value)

    @property
    def name(self) -> str:
        """The original error's name (a property, so JSON forms, built from own attributes, skip it)."""
        return self._name


def _js_name(error: BaseException) -> str:
    name = getattr(error, "name", None)
    return name if isinstance(name, str) else type(error).__name__


def _public_fields(error: BaseException) -> dict[str, Any]:
    try:
        attrs = vars(error)
    except TypeError:
        return {}
    return {k: v for k, v in attrs.items() if not k.startswith("_") and k not in ("args", "name")}


def _redacted(error: BaseException) -> BaseException:
    message = str(error)
    fields = _public_fields(error)
    clean_message = redact(message)
    clean_fields = {k: redact_value(v) for k, v in fields.items()}
    if clean_message == message and repr(clean_fields) == repr(fields):
        return error
    return RedactedToolError(clean_message, _js_name(error), clean_fields)


def _masked(error: Exception, mask: ToolErrorMask, tool_name: str) -> BaseException:
    try:
        shown = mask(error)
    except Exception:
        log.exception("on_tool_error raised for tool %s; reporting a generic error", tool_name)
        shown = f"tool {tool_name} failed"
    if isinstance(shown, BaseException):
        return _redacted(shown)
    return RedactedToolError(redact(str(shown)), "Error")  # like ``new Error(text)``: no original name


def reported_tool_error(
    error: Exception, *, run_id: str, tool_name: str, mask: ToolErrorMask | None = None
) -> BaseException:
    """Log ``error`` (run id, tool, traceback; secrets masked) and return what may be shown.

    That is ``mask(error)`` when an ``on_tool_error`` mask is configured (a string becomes an
    ``Error`` with that message), else ``error`` itself
    if no configured secret appears in it, else a `RedactedToolError` with the same name.
    """
    trace = "".join(traceback.format_exception(error)).rstrip()
    log.warning("run %s: tool %s failed\n%s", run_id, tool_name, redact(trace))
    if mask is not None:
        return _masked(error, mask, tool_name)
    return _redacted(error)
