"""Decode errors that name the JSON path, what was expected and what was found."""

from __future__ import annotations

import re

__all__ = ["ChunkDecodeError"]


class ChunkDecodeError(ValueError):
    """A chunk could not be decoded: ``payload.text: expected str, got int``.

    ``path`` is the JSON path inside the chunk (``""`` for the whole value), ``line`` the 1-based
    line number when the chunk came from a JSON-lines stream.
    """

    def __init__(self, path: str, expected: str, got: str, *, line: int | None = None) -> None:
        self.path = path
        self.expected = expected
        self.got = got
        self.line = line
        where = f"line {line}: " if line is not None else ""
        super().__init__(f"{where}{path or '<chunk>'}: expected {expected}, got {got}")

    def at_line(self, line: int) -> ChunkDecodeError:
        """The same error, located at `line` of a JSON-lines stream."""
        return ChunkDecodeError(self.path, self.expected, self.got, line=line)


_AT = re.compile(r"^(?P<msg>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.S)
_EXPECTED = re.compile(r"^Expected `(?P<exp>[^`]+)`, got `(?P<got>[^`]+)`")
_MISSING = re.compile(r"^Object missing required field `(?P<field>[^`]+)`")
_ENUM = re.compile(r"^Invalid enum value (?P<got>.+)$")


def from_validation_message(message: str, *, choices: dict[str, str] | None = None) -> ChunkDecodeError:
    """Turn a msgspec validation message into a ``ChunkDecodeError`` with a dotted path."""
    m = _AT.match(message)
    assert m is not None
    text, raw_path = m["msg"], (m["path"] or "")
    path = raw_path[1:] if raw_path.startswith(".") else raw_path
    if e := _EXPECTED.match(text):
        return ChunkDecodeError(
            path, e["exp"].replace("object", "an object").replace("array", "an array"), e["got"]
        )
    if e := _MISSING.match(text):
        field = e["field"]
        return ChunkDecodeError(
            f"{path}.{field}" if path else field, "a value", "nothing (required field missing)"
        )
    if e := _ENUM.match(text):
        expected = (choices or {}).get(path, "one of the allowed values")
        return ChunkDecodeError(path, expected, e["got"])
    return ChunkDecodeError(path, "a valid value", text)
