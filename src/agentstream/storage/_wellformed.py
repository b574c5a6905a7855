"""JSON for stored values whose strings may hold lone UTF-16 surrogates.

A model's delta cut inside an emoji, or a JavaScript client's text, can hold half a surrogate
pair; UTF-8 (SQLite's text, msgspec) cannot. Stored JSON spells such a half as JavaScript's
``JSON.stringify`` does (``"\\ud83d"``) and reads it back as the same half. This is
``chunks.dumps_wellformed`` / ``loads_wellformed`` again, because ``storage`` imports no other
package (docs/architecture.md, "Layers"); tests/storage/test_wellformed.py holds both to the
same bytes. PostgreSQL's jsonb refuses the escape too: ``postgres.pg_json_text`` has its own.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, TypeVar

import msgspec

__all__ = ["copy_record", "dumps_wellformed", "loads_wellformed"]

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode
_LONE = re.compile("[\ud800-\udfff]")
_T = TypeVar("_T")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


# A surrogate's escape: what msgspec's parser refuses and the stdlib's keeps.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _int(text: str) -> int:
    # msgspec's range, so that the fallback accepts no number the fast path refuses
    value = int(text)
    if not -(2**63) <= value < 2**64:
        raise ValueError(f"integer {text[:40]} out of range")
    return value


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text[:40]} out of range")
    return value


def _lenient(raw: bytes | str) -> Any:
    return json.loads(raw, parse_constant=_refuse_constant, parse_int=_int, parse_float=_float)


def dumps_wellformed(value: Any) -> bytes:
    """Compact UTF-8 JSON; a lone surrogate as ``\\udxxx`` (a pair held as two code points joined)."""
    try:
        return _encode(value)
    except UnicodeEncodeError:
        pass
    # Surrogates appear only inside JSON strings (the syntax around them is ASCII).
    text = json.dumps(msgspec.to_builtins(value), ensure_ascii=False, separators=(",", ":"))
    text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return _LONE.sub(_escape, text).encode("utf-8")


def loads_wellformed(data: bytes | str) -> Any:
    """JSON read back, a lone surrogate's escape kept as that half; other bad JSON raises
    ``msgspec.DecodeError`` (the same numbers refused as msgspec's parser refuses)."""
    try:
        return _decode(data)
    except msgspec.DecodeError as exc:
        raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
        if not _SURROGATE_ESCAPE.search(raw):
            raise
        try:
            return _lenient(raw)
        except (ValueError, UnicodeDecodeError):
            raise exc from None


def copy_record(record: _T) -> _T:
    """An independent copy of a record through JSON (what the SQL backends accept, surrogates too)."""
    try:
        return msgspec.json.decode(_encode(record), type=type(record))
    except UnicodeEncodeError:
        return msgspec.convert(loads_wellformed(dumps_wellformed(record)), type=type(record))
