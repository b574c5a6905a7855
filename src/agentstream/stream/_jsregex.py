"""JavaScript ``RegExp`` → Python ``regex`` pattern with the same meaning (as far as chunking needs).

What changes between the two dialects and how it is translated:

* ``\\s``/``\\S``: JavaScript's whitespace (includes U+FEFF, excludes U+0085 and U+001C–U+001F).
* ``\\d``/``\\w``/``\\b`` (and negations): ASCII only in JavaScript.
* ``.``: excludes every JS line terminator (``\\n``, ``\\r``, U+2028, U+2029) unless flag ``s``.
* ``^``/``$``: start/end of input (``$`` never matches before a final ``\\n``); with ``m`` they also
  match around any JS line terminator.
* ``(?<name>..)``, ``\\k<name>``, ``\\u{...}``, ``\\uHHHH\\uHHHH`` surrogate pairs, ``[^]``, ``[]``,
  ``\\cX``, ``\\/``.
* Flags: ``g``/``d``/``u``/``v`` change nothing for chunking (Mastra resets ``lastIndex``), ``y``
  anchors at index 0 (``\\A(?:...)``), ``i``/``m``/``s`` as above. ``\\p{...}`` works through the
  ``regex`` package.
"""

from __future__ import annotations

import regex  # type: ignore[import-untyped]

__all__ = [
    "JS_FLAGS",
    "JS_LINE_TERMINATORS",
    "JS_WHITESPACE",
    "JS_WHITESPACE_CLASS",
    "JSRegexError",
    "check_js_flags",
    "js_regex",
    "parse_js_literal",
]

JS_FLAGS = "dgimsuvy"
"""Every flag ``new RegExp(source, flags)`` accepts."""


class JSRegexError(ValueError):
    """The source or flags are not a valid JavaScript ``RegExp`` (V8's wording, plus what is wrong)."""


class _Invalid(Exception):
    """Raised while translating; `js_regex` turns it into `JSRegexError` with the source."""


JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""Every character JavaScript's ``\\s`` matches (ECMAScript WhiteSpace + LineTerminator)."""

JS_LINE_TERMINATORS = "\n\r\u2028\u2029"

# Class bodies (no brackets), escaped for use inside [...] in both re and regex.
JS_WHITESPACE_CLASS = r"\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_NOT_WS_CLASS = (
    r"\x00-\x08\x0e-\x1f\x21-\x9f\xa1-\u167f\u1681-\u1fff\u200b-\u2027\u202a-\u202e"
    r"\u2030-\u205e\u2060-\u2fff\u3001-\ufefe\uff00-\U0010ffff"
)
_DIGIT_CLASS = "0-9"
_NOT_DIGIT_CLASS = r"\x00-/:-\U0010ffff"
_WORD_CLASS = "A-Za-z0-9_"
_NOT_WORD_CLASS = r"\x00-/:-@\[-\^`{-\U0010ffff"
_LT_CLASS = r"\n\r\u2028\u2029"

_CLASS_ESCAPES = {
    "s": JS_WHITESPACE_CLASS,
    "S": _NOT_WS_CLASS,
    "d": _DIGIT_CLASS,
    "D": _NOT_DIGIT_CLASS,
    "w": _WORD_CLASS,
    "W": _NOT_WORD_CLASS,
}
_WORD_BOUNDARY = r"(?:(?<=[A-Za-z0-9_])(?![A-Za-z0-9_])|(?<![A-Za-z0-9_])(?=[A-Za-z0-9_]))"
_NOT_WORD_BOUNDARY = r"(?:(?<=[A-Za-z0-9_])(?=[A-Za-z0-9_])|(?<![A-Za-z0-9_])(?![A-Za-z0-9_]))"
_SIMPLE_ESCAPES = {"t": r"\t", "n": r"\n", "r": r"\r", "v": r"\x0b", "f": r"\x0c", "0": r"\x00"}


def _hex4(source: str, i: int) -> int | None:
    digits = source[i : i + 4]
    if len(digits) == 4 and all(c in "0123456789abcdefABCDEF" for c in digits):
        return int(digits, 16)
    return None


def _code_point(cp: int) -> str:
    return f"\\U{cp:08x}"


def _escape(source: str, i: int, in_class: bool) -> tuple[str, int]:
    """Translate the escape starting at ``source[i] == '\\\\'``; returns (python, next index)."""
    if i + 1 >= len(source):
        raise _Invalid("\\ at end of pattern")
    c = source[i + 1]
    if c in _CLASS_ESCAPES:
        body = _CLASS_ESCAPES[c]
        return (body if in_class else f"[{body}]"), i + 2
    if c in _SIMPLE_ESCAPES and not (c == "0" and i + 2 < len(source) and source[i + 2].isdigit()):
        return _SIMPLE_ESCAPES[c], i + 2
    if c == "b":
        return (r"\x08" if in_class else _WORD_BOUNDARY), i + 2
    if c == "B" and not in_class:
        return _NOT_WORD_BOUNDARY, i + 2
    if c == "u":
        if source.startswith("{", i + 2):
            end = _find(source, "}", i + 3, "Invalid Unicode escape")
            try:
                cp = int(source[i + 3 : end], 16)
            except ValueError:
                raise _Invalid("Invalid Unicode escape") from None
            if cp > 0x10FFFF:
                raise _Invalid("Invalid Unicode escape")
            return _code_point(cp), end + 1
        hi = _hex4(source, i + 2)
        if hi is None:
            return "u", i + 2
        if 0xD800 <= hi <= 0xDBFF and source.startswith("\\u", i + 6):
            lo = _hex4(source, i + 8)
            if lo is not None and 0xDC00 <= lo <= 0xDFFF:
                return _code_point(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)), i + 12
        return _code_point(hi), i + 6
    if c == "x" and len(source) >= i + 4:
        return "\\x" + source[i + 2 : i + 4], i + 4
    if c == "c" and i + 2 < len(source) and source[i + 2].isalpha():
        return _code_point(ord(source[i + 2]) % 32), i + 3
    if c == "k" and source.startswith("<", i + 2):
        end = _find(source, ">", i + 3, "Invalid named reference")
        return f"(?P={source[i + 3 : end]})", end + 1
    if c in "pP":
        end = _find(source, "}", i + 2, "Invalid property name") + 1
        return source[i:end], end
    if c.isdigit():  # back-reference
        j = i + 1
        while j < len(source) and source[j].isdigit():
            j += 1
        return "\\" + source[i + 1 : j], j
    if c.isalnum():  # identity escape of a letter (non-unicode JS): the letter itself
        return regex.escape(c), i + 2
    return regex.escape(c), i + 2


def _translate(source: str, flags: str) -> str:
    dotall = "s" in flags
    multiline = "m" in flags
    out: list[str] = []
    i = 0
    n = len(source)
    while i < n:
        c = source[i]
        if c == "\\":
            piece, i = _escape(source, i, in_class=False)
            out.append(piece)
        elif c == "[":
            i += 1
            negate = i < n and source[i] == "^"
            if negate:
                i += 1
            body: list[str] = []
            while i < n and source[i] != "]":
                if source[i] == "\\":
                    piece, i = _escape(source, i, in_class=True)
                    body.append(piece)
                else:
                    ch = source[i]
                    body.append(regex.escape(ch) if ch in "[&~|" else ch)
                    i += 1
            if i >= n:
                raise _Invalid("Unterminated character class")
            i += 1
            if not body:
                out.append(r"[\s\S]" if negate else "(?!)")
            else:
                out.append(("[^" if negate else "[") + "".join(body) + "]")
        elif c == ".":
            out.append("(?s:.)" if dotall else f"[^{_LT_CLASS}]")
            i += 1
        elif c == "^":
            out.append(f"(?<![^{_LT_CLASS}])" if multiline else r"\A")
            i += 1
        elif c == "$":
            out.append(f"(?=[{_LT_CLASS}]|\\Z)" if multiline else r"\Z")
            i += 1
        elif c == "(" and source.startswith("(?<", i) and not source.startswith(("(?<=", "(?<!"), i):
            end = _find(source, ">", i, "Invalid capture group name")
            out.append(f"(?P<{source[i + 3 : end]}>")
            i = end + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _find(source: str, char: str, start: int, problem: str) -> int:
    end = source.find(char, start)
    if end < 0:
        raise _Invalid(problem)
    return end


def check_js_flags(flags: str) -> None:
    """Raise `JSRegexError` naming the first unknown or repeated flag."""
    for index, flag in enumerate(flags):
        if flag not in JS_FLAGS:
            problem = f"unknown flag {flag!r} (valid flags: {', '.join(JS_FLAGS)})"
        elif flag in flags[:index]:
            problem = f"flag {flag!r} given twice"
        else:
            continue
        raise JSRegexError(f"Invalid flags supplied to RegExp constructor '{flags}': {problem}")


def js_regex(source: str, flags: str = "") -> regex.Pattern[str]:
    """Compile JavaScript ``new RegExp(source, flags)`` as a Python ``regex`` pattern with the same matches.

    Raises `JSRegexError` (a ``ValueError``) for an invalid pattern or flag, saying which.
    """
    check_js_flags(flags)
    try:
        body = _translate(source, flags)
        if "y" in flags:
            body = rf"\A(?:{body})"
        options = regex.VERSION0
        if "i" in flags:
            options |= regex.IGNORECASE
        return regex.compile(body, options)
    except _Invalid as exc:
        problem = str(exc)
    except regex.error as exc:
        problem = exc.msg
    raise JSRegexError(f"Invalid regular expression: /{source}/{flags}: {problem}")


def parse_js_literal(literal: str) -> regex.Pattern[str] | None:
    """``"/source/flags"`` → compiled pattern; ``None`` if ``literal`` is not in that form.

    Anything after the last ``/`` made of letters counts as flags, so ``"/a/q"`` raises
    `JSRegexError` naming ``q`` rather than being taken for something else.
    """
    if len(literal) < 2 or not literal.startswith("/"):
        return None
    end = literal.rfind("/")
    if end == 0:
        return None
    flags = literal[end + 1 :]
    if flags and not (flags.isascii() and flags.isalpha()):
        return None
    return js_regex(literal[1:end], flags)
