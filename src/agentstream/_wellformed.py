"""JSON bytes for values whose strings may hold lone UTF-16 surrogates, as JavaScript writes them.

A JavaScript string is UTF-16 and may hold half of a surrogate pair (a model's delta cut inside an
emoji, a tool that slices a string); ``JSON.stringify`` writes such a half as an escape
(``"\\ud83d"``, lowercase hex, ES2019's well-formed ``JSON.stringify``) and everything else as
itself. UTF-8 cannot carry a lone surrogate, so msgspec refuses to encode one and refuses to parse
its escape. `dumps_wellformed` writes what ``JSON.stringify`` writes (a pair held as two code
points becomes the one character it spells); `loads_wellformed` reads it back, lone halves kept.

One module below both users: ``chunks`` (the wire codec) and ``storage`` (stored records, which a
model's delta or a JavaScript client's text reaches too) import it; neither imports the other.
PostgreSQL's jsonb refuses the escape as well: ``postgres.pg_json_text`` has its own spelling.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

__all__ = ["copy_record", "dumps_wellformed", "loads_wellformed", "wellformed_json_text"]

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


def wellformed_json_text(text: str) -> str:
    """JSON text (``json.dumps(..., ensure_ascii=False)``'s) with each lone surrogate written as
    its escape and each pair held as two code points joined: encodable as UTF-8, as
    ``JSON.stringify`` would have written it. Text without surrogates comes back as it is."""
    if not _LONE.search(text):
        return text
    # Surrogates appear only inside JSON strings (the syntax around them is ASCII).
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return _LONE.sub(_escape, joined)


def _string(text: str) -> str:
    """``text`` as a JSON string literal: a pair held as two code points re-joined, lone halves escaped."""
    return wellformed_json_text(json.dumps(text, ensure_ascii=False))


def _walk(value: Any) -> Any:
    """``value`` with each string holding a surrogate replaced by its literal, ready-made."""
    if isinstance(value, str):
        return msgspec.Raw(_string(value).encode("utf-8")) if _LONE.search(value) else value
    if isinstance(value, dict):
        if any(isinstance(key, str) and _LONE.search(key) for key in value):
            raise UnicodeEncodeError("utf-8", "", 0, 1, "a key holds a lone surrogate")
        return {key: _walk(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_walk(item) for item in value]
    return value


def dumps_wellformed(value: Any, default: Callable[[Any], Any] | None = None) -> bytes:
    """Compact JSON of ``value`` as UTF-8; a lone surrogate in a string (or key) as ``\\udxxx``.

    ``default`` converts what JSON cannot hold (as msgspec's ``enc_hook``); without it such a value
    raises ``TypeError``. Values without surrogates (nearly all) take msgspec's path unchanged.
    """
    encode = _encode if default is None else msgspec.json.Encoder(enc_hook=default).encode
    try:
        return encode(value)
    except UnicodeEncodeError:
        pass
    try:
        return encode(_walk(value))
    except UnicodeEncodeError:  # a key, a struct's field, or what only ``default`` made holds it
        builtins = msgspec.to_builtins(value, enc_hook=default)
        text = json.dumps(builtins, ensure_ascii=False, separators=(",", ":"))
        return wellformed_json_text(text).encode("utf-8")


def loads_wellformed(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse JSON that may spell lone surrogates as escapes (what `dumps_wellformed` and
    ``JSON.stringify`` write); a lone half is kept in the string. Other malformed JSON raises
    ``msgspec.DecodeError`` as msgspec's parser does (the same numbers refused)."""
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
