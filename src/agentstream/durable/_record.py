"""What a checkpointed step records, as JSON: provider parts (dates, bytes and errors tagged) and
the exceptions a model or tool call ended with, rebuilt on a replay so the loop treats them as it
treated the originals (same type where it matters, same ``{name, message, ...}`` on the wire)."""

from __future__ import annotations

import base64
import builtins
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from .._abort import AbortError
from ..agent import Tripwire
from ..chunks import error_to_dict as _wire_error
from ..chunks import to_jsonable
from ..models import APICallError
from ..tools import ToolSuspended

__all__ = ["ReplayedError", "decode", "decode_error", "encode", "encode_error"]

_TAGS = ("$date", "$bytes", "$error", "$literal")


class ReplayedError(Exception):
    """An exception recorded by a step, raised again on a replay: its type could not be rebuilt, so
    it carries the original's type name (as its own class name), ``name``, message and ``details``,
    which is all a chunk shows of an error."""

    def __init__(self, name: str, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.name = name
        self.message = message
        if details:
            self.details = dict(details)


_replayed_types: dict[str, type[ReplayedError]] = {}


def _replayed_type(type_name: str) -> type[ReplayedError]:
    if not type_name.isidentifier():
        return ReplayedError
    made = _replayed_types.get(type_name)
    if made is None:
        made = _replayed_types[type_name] = type(type_name, (ReplayedError,), {})
    return made


_SCALARS = frozenset({str, int, float, bool, type(None)})


def encode(value: Any) -> Any:
    """``value`` (a provider part, a tool's result) as JSON; dates, bytes and errors are tagged."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if type(value) is dict and len(value) > 1 and all(type(v) in _SCALARS for v in value.values()):
        return value  # most parts (every text delta): already JSON, and not a tag
    if isinstance(value, Mapping):
        out = {str(k): encode(v) for k, v in value.items()}
        return {"$literal": out} if len(out) == 1 and next(iter(out)) in _TAGS else out
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, datetime):
        return {"$date": value.isoformat()}
    if isinstance(value, bytes):
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    if isinstance(value, BaseException):
        return {"$error": encode_error(value)}
    return to_jsonable(value)


def decode(value: Any) -> Any:
    """The inverse of `encode`."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((key, inner),) = value.items()
        if key == "$date":
            return datetime.fromisoformat(inner)
        if key == "$bytes":
            return base64.b64decode(inner)
        if key == "$error":
            return decode_error(inner)
        if key == "$literal":
            return {k: decode(v) for k, v in inner.items()}
    return {k: decode(v) for k, v in value.items()}


def encode_error(error: BaseException) -> dict[str, Any]:
    """A recorded exception: its kind and what rebuilding it needs (see `decode_error`)."""
    if isinstance(error, ToolSuspended):
        return {"kind": "suspended", "payload": to_jsonable(error.payload)}
    if isinstance(error, Tripwire):
        return {
            "kind": "tripwire",
            "reason": error.reason,
            "retry": error.retry,
            "metadata": to_jsonable(error.metadata),
            "processor_id": error.processor_id,
        }
    if isinstance(error, APICallError):
        return {
            "kind": "api",
            "message": error.message,
            "url": error.url,
            "provider": error.provider,
            "status_code": error.status_code,
            "response_body": error.response_body,
            "response_headers": error.response_headers,
            "is_retryable": error.is_retryable,
            "data": to_jsonable(error.data),
        }
    if isinstance(error, AbortError):
        return {"kind": "abort", "reason": to_jsonable(error.reason)}
    wire = to_jsonable(_wire_error(error))
    return {
        "kind": "error",
        "type": type(error).__name__,
        "builtin": type(error).__module__ == "builtins",
        "name": wire.pop("name"),
        "message": wire.pop("message"),
        "details": wire,
    }


def decode_error(record: Mapping[str, Any]) -> Exception:
    """The exception `encode_error` recorded: the same type for the ones the loop tells apart
    (suspension, tripwire, provider error, abort, built-in exceptions), else a `ReplayedError`."""
    kind = record["kind"]
    if kind == "suspended":
        return ToolSuspended(record["payload"])
    if kind == "tripwire":
        return Tripwire(
            record["reason"],
            retry=record["retry"],
            metadata=record["metadata"],
            processor_id=record["processor_id"],
        )
    if kind == "api":
        fields = {k: v for k, v in record.items() if k != "kind"}
        return APICallError(fields.pop("message"), **fields)
    if kind == "abort":
        return AbortError(record["reason"])
    name, message, details = record["name"], record["message"], record["details"]
    builtin = getattr(builtins, record["type"], None) if record["builtin"] else None
    if (
        isinstance(builtin, type)
        and issubclass(builtin, Exception)
        and not details
        and name == record["type"]
    ):
        try:
            return builtin(message)
        except Exception:  # a built-in that does not take one message: fall back below
            pass
    return _replayed_type(record["type"])(name, message, details)
