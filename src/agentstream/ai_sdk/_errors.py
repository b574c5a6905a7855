"""Error types of the AI SDK bridge and Mastra's default ``onError`` (``safeParseErrorObject``)."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from typing import Any

from .._secrets import redact

__all__ = [
    "STORAGE_ERROR_TEXT",
    "ChatRequestError",
    "UIMessageError",
    "UIMessageStreamError",
    "default_error_text",
    "is_storage_error",
    "js_string",
]

logger = logging.getLogger("agentstream.server")

STORAGE_ERROR_TEXT = "the server's storage failed (details are in the server log)"
"""What a client is told of a database error: its text (SQL, parameters, schema) stays in the log."""

# Errors raised by these modules' drivers are database errors, whatever wraps them.
_STORAGE_MODULES = frozenset(
    {"psycopg", "psycopg_pool", "psycopg2", "asyncpg", "sqlite3", "_sqlite3", "aiosqlite"}
)

# Left out of the JSON form, unlike Mastra's safeParseErrorObject (which stringifies everything):
# provider request/response dumps and endpoints can carry secrets and internal addresses. Both
# spellings, since Python errors hold snake_case attributes.
_HIDDEN_KEYS = frozenset(
    {
        "requestBodyValues",
        "request_body_values",
        "responseBody",
        "response_body",
        "responseHeaders",
        "response_headers",
        "headers",
        "request",
        "response",
        "url",
        "data",
        "prompt",
    }
)


class UIMessageStreamError(ValueError):
    """A Mastra chunk cannot be turned into a UI message chunk (e.g. a ``data-*`` chunk without ``data``)."""


class UIMessageError(ValueError):
    """A UI message (request body) is malformed: ``messages[2].parts[0].type: expected ..., got 'foo'``.

    ``path`` is the JSON path inside the request.
    """

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}" if path else problem)


def _js_number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == int(value) and abs(value) < 1e21:
        return str(int(value))
    return repr(value)


def js_string(value: Any) -> str:
    """JavaScript's ``String(value)`` for JSON-like Python values and exceptions."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, str):
        return value
    if isinstance(value, BaseException):
        name = getattr(value, "name", None)
        name = name if isinstance(name, str) else type(value).__name__
        message = str(value)
        return f"{name}: {message}" if message else name
    if isinstance(value, (list, tuple)):
        return ",".join("" if v is None else js_string(v) for v in value)
    return "[object Object]"


# Built-in JavaScript errors keep ``name`` on the prototype (not serialised); custom error classes
# (``MastraError``, ``AI_APICallError``) assign it in their constructor, so JSON shows it.
_JS_BUILTIN_NAMES = frozenset(
    {
        "Error",
        "TypeError",
        "RangeError",
        "SyntaxError",
        "ReferenceError",
        "EvalError",
        "URIError",
        "AggregateError",
    }
)
# Like JavaScript's non-enumerable ``message``/``stack``: never part of the JSON form.
_NOT_ENUMERABLE = frozenset({"message", "args", "details", "stack"})


def _own_fields(error: BaseException) -> dict[str, Any]:
    """What ``JSON.stringify`` sees of an Error: its own enumerable properties.

    In Python: the public instance attributes that are set (not ``None``), without the message, plus
    the ``details`` mapping the chunk codec also writes; ``name`` only when it is not a built-in
    JavaScript error name. A plain exception therefore gives ``{}`` and falls back to
    ``"Name: message"``; one carrying its own attributes (``self.name = "MastraError"``,
    ``self.status_code = 500``) is written as those attributes.
    """
    try:
        attrs = vars(error)
    except TypeError:
        attrs = {}
    out = {
        k: v for k, v in attrs.items() if not k.startswith("_") and k not in _NOT_ENUMERABLE and v is not None
    }
    if out.get("name") in _JS_BUILTIN_NAMES:
        del out["name"]
    details = attrs.get("details")
    if isinstance(details, Mapping):
        for key, value in details.items():
            if value is not None:
                out.setdefault(str(key), value)
    return out


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=_default)


def _default(value: Any) -> Any:
    if isinstance(value, BaseException):
        return _own_fields(value)
    from agentstream.chunks import to_jsonable

    return to_jsonable(value)


def is_storage_error(error: object) -> bool:
    """Whether ``error``, or an exception it was raised from or while handling, is a database
    driver's (psycopg, sqlite3 ...): its text may quote SQL, parameters and the schema."""
    seen: set[int] = set()
    current: object = error
    while isinstance(current, BaseException) and id(current) not in seen:
        seen.add(id(current))
        if any(cls.__module__.split(".")[0] in _STORAGE_MODULES for cls in type(current).__mro__):
            return True
        current = current.__cause__ or current.__context__
    return False


def default_error_text(error: Any) -> str:
    """Mastra's default ``onError``: compact JSON of the error, ``String(error)`` when that says nothing.

    Two departures keep secrets from the client: an error that offers a ``client_message`` (a
    provider's `APICallError`) is sent as that short line
    (``openai (status 401): Incorrect API key provided: ***.``), and keys holding provider
    request/response dumps or endpoints (``responseBody``/``response_body``, ``url``, ``data`` ...)
    are left out. Every configured key is then redacted from the text. A database error (see
    `is_storage_error`) is `STORAGE_ERROR_TEXT`, its details logged.
    """
    if is_storage_error(error):
        logger.error("a storage error is reported to the client as %r", STORAGE_ERROR_TEXT, exc_info=error)
        return STORAGE_ERROR_TEXT
    return redact(_error_text(error))


def _error_text(error: Any) -> str:
    if isinstance(error, BaseException):
        client_message = getattr(error, "client_message", None)
        if isinstance(client_message, str):
            return client_message
        fields = {k: v for k, v in _own_fields(error).items() if k not in _HIDDEN_KEYS}
        if not fields:
            return js_string(error)
        try:
            return _dumps(fields)
        except (TypeError, ValueError):
            return js_string(error)
    if isinstance(error, Mapping):
        fields = {k: v for k, v in error.items() if k not in _HIDDEN_KEYS}
        try:
            text = _dumps(fields)
        except (TypeError, ValueError):
            return js_string(error)
        return js_string(error) if text == "{}" else text
    if isinstance(error, (list, tuple)):
        try:
            return _dumps(list(error))
        except (TypeError, ValueError):
            return js_string(error)
    return js_string(error)


_MAX_MESSAGE = 500
_MAX_PATH = 200


def _clip(text: str, limit: int) -> str:
    # Error messages quote the client's values; a megabyte id must not come back in full.
    if len(text) <= limit:
        return text
    return f"{text[: limit - 40]}… ({len(text) - limit + 40} more characters)"


class ChatRequestError(ValueError):
    """A chat request that cannot be served: malformed body (400), unknown agent (404), or refused
    by a request guard (401/403/405/413/415).

    ``status_code`` is the HTTP status to answer with, ``headers`` extra response headers and
    `to_dict` the JSON body ``{"error": {"name", "message", "path"?}}``. Messages and paths
    are clipped, so a client's over-long value is never echoed back in full.
    """

    name = "ChatRequestError"

    def __init__(
        self,
        message: str,
        *,
        status_code: int = 400,
        path: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(_clip(message, _MAX_MESSAGE))
        self.status_code = status_code
        self.path = None if path is None else _clip(path, _MAX_PATH)
        self.headers = dict(headers or {})

    def to_dict(self) -> dict[str, Any]:
        """The JSON error body: `{"error": {"name": ..., "message": ..., "path"?: ...}}`."""
        error: dict[str, Any] = {"name": self.name, "message": str(self)}
        if self.path is not None:
            error["path"] = self.path
        return {"error": error}
