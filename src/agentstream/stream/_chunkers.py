"""The chunking rules of ``smooth_stream``: where a buffered text is cut into pieces (Mastra's
``chunking``: ``"word"``, ``"line"``, a RegExp, a segmenter, a detector function; plus ``"grapheme"``).

Each chunker keeps its own scan state so that feeding a buffer costs linear time in total (see
`agentstream.stream._smooth` for the behaviour they reproduce).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Protocol, TypeAlias, runtime_checkable

import regex  # type: ignore[import-untyped]

from ._jsregex import JS_WHITESPACE_CLASS, parse_js_literal

__all__ = [
    "EMPTY_DETECTION",
    "EMPTY_MATCH",
    "INVALID_CHUNKING",
    "NOT_A_PREFIX",
    "ChunkDetector",
    "Chunking",
    "SegmenterLike",
]

INVALID_CHUNKING: Final = (
    'chunking must be "word", "line", a RegExp, an Intl.Segmenter, or a chunk detector function.'
)
EMPTY_DETECTION: Final = "The chunking function must return a non-empty string."
NOT_A_PREFIX: Final = "The chunking function must return a prefix of the buffered text."
EMPTY_MATCH: Final = "The chunking RegExp must match a non-empty string."


@runtime_checkable
class SegmenterLike(Protocol):
    """Anything with ``segment(text)`` yielding strings, objects with a ``segment`` string, or mappings
    ``{"segment": str}`` (``Intl.Segmenter``'s shape)."""

    def segment(self, text: str, /) -> Iterable[Any]: ...


ChunkDetector: TypeAlias = Callable[[str], "str | None"]
Chunking: TypeAlias = "str | re.Pattern[str] | regex.Pattern[str] | ChunkDetector | SegmenterLike"

_WS = JS_WHITESPACE_CLASS
_LEAD = re.compile(rf"[{_WS}]*+(?:([^{_WS}]++)([{_WS}]++)?)?")
"""From a position with no word seen yet: group 2 set ⇒ a piece ends at ``end()``; only group 1 ⇒ in a word."""
_TAIL = re.compile(rf"[^{_WS}]*+([{_WS}]++)?")
"""From a position inside a word: group 1 set ⇒ a piece ends at ``end()``."""
_NEWLINES = re.compile(r"\n+")
_GRAPHEME = regex.compile(r"\X")
_SEGMENT_WINDOW = 256
_SEGMENT_MARGIN = 32
_HOLD_BACK_WORD_CHARS = 2


def _combine(high: str, low: str) -> str:
    return chr(0x10000 + ((ord(high) - 0xD800) << 10) + (ord(low) - 0xDC00))


class _Chunker:
    """The pending text of the current buffer and the rule cutting pieces off its front.

    Pending text is ``"".join(_prefix) + _t[_s:]``. ``total`` counts the characters pushed.

    Two protocols: *eager* chunkers (``"word"``, ``"line"``: pure, cannot fail) return every piece
    of a delta at once from ``feed``; the others are asked piece by piece with ``next_piece`` after
    ``push``, so a user detector runs (and may raise) between the delays exactly as in Mastra.
    """

    __slots__ = ("_prefix", "_s", "_t", "total")

    eager = False

    def __init__(self) -> None:
        self._prefix: list[str] = []
        self._t = ""
        self._s = 0
        self.total = 0

    def push(self, text: str) -> None:
        if text and "\udc00" <= text[0] <= "\udfff":
            text = self._join_surrogates(text)
        t = self._t
        s = self._s
        if s < len(t):
            self._prefix.append(t[s:] if s else t)
        self._t = text
        self._s = 0
        self.total += len(text)
        self._pushed()

    def feed(self, text: str) -> list[str] | None:  # pragma: no cover - eager chunkers only
        raise NotImplementedError

    def _join_surrogates(self, text: str) -> str:
        """Pending text ending in a high surrogate + text starting with a low one: one character."""
        t = self._t
        if self._s < len(t):
            if "\ud800" <= t[-1] <= "\udbff":
                self._t = t[:-1]
                self.total -= 1
                return _combine(t[-1], text[0]) + text[1:]
        elif self._prefix:
            last = self._prefix[-1]
            if "\ud800" <= last[-1] <= "\udbff":
                if len(last) > 1:
                    self._prefix[-1] = last[:-1]
                else:
                    self._prefix.pop()
                self.total -= 1
                return _combine(last[-1], text[0]) + text[1:]
        return text

    def _pushed(self) -> None:
        pass

    def _emit_to(self, end: int) -> str:
        if self._prefix:
            piece = "".join(self._prefix) + self._t[self._s : end]
            self._prefix.clear()
        else:
            piece = self._t[self._s : end]
        self._s = end
        return piece

    def take_all(self) -> str:
        """Everything pending, as one piece (flush); the chunker is empty afterwards."""
        rest = self._t[self._s :]
        if self._prefix:
            rest = "".join(self._prefix) + rest
            self._prefix.clear()
        self._t = ""
        self._s = 0
        self._reset()
        return rest

    def _reset(self) -> None:
        pass

    def next_piece(self) -> str | None:  # pragma: no cover - lazy chunkers only
        raise NotImplementedError


class _WordChunker(_Chunker):
    """``/\\S+\\s+/`` with JavaScript's ``\\s``, scanning each character once."""

    __slots__ = ("_in_word",)

    eager = True

    def __init__(self) -> None:
        super().__init__()
        self._in_word = False
        """The pending text holds a non-space character (and no space after it)."""

    def _reset(self) -> None:
        self._in_word = False

    def feed(self, text: str) -> list[str] | None:
        if text and "\udc00" <= text[0] <= "\udfff":
            text = self._join_surrogates(text)
        n = len(text)
        self.total += n
        prefix = self._prefix
        pieces: list[str] | None = None
        s = 0
        if self._in_word:
            m = _TAIL.match(text)
            assert m is not None
            if m.lastindex is None:
                if n:
                    prefix.append(text)
                return None
            s = m.end()
            pieces = ["".join(prefix) + text[:s] if prefix else text[:s]]
            prefix.clear()
            self._in_word = False
        while s < n:
            m = _LEAD.match(text, s)
            assert m is not None
            found = m.lastindex
            if found == 2:
                end = m.end()
                piece = text[s:end]
                if prefix:
                    piece = "".join(prefix) + piece
                    prefix.clear()
                if pieces is None:
                    pieces = [piece]
                else:
                    pieces.append(piece)
                s = end
            else:
                if found == 1:
                    self._in_word = True
                prefix.append(text[s:] if s else text)
                break
        return pieces


class _LineChunker(_Chunker):
    """``/\\n+/``."""

    __slots__ = ()

    eager = True

    def feed(self, text: str) -> list[str] | None:
        if text and "\udc00" <= text[0] <= "\udfff":
            text = self._join_surrogates(text)
        self.total += len(text)
        prefix = self._prefix
        j = text.find("\n")
        if j < 0:
            if text:
                prefix.append(text)
            return None
        pieces: list[str] = []
        s = 0
        while j >= 0:
            m = _NEWLINES.match(text, j)
            assert m is not None
            end = m.end()
            piece = text[s:end]
            if prefix:
                piece = "".join(prefix) + piece
                prefix.clear()
            pieces.append(piece)
            s = end
            j = text.find("\n", s)
        if s < len(text):
            prefix.append(text[s:])
        return pieces


class _WholeBufferChunker(_Chunker):
    """Keeps the pending text as one string (``_t[_s:]``) for rules that look at all of it."""

    __slots__ = ()

    def _pushed(self) -> None:
        if self._prefix:
            self._t = "".join(self._prefix) + self._t
            self._prefix.clear()

    def _rest(self) -> str:
        return self._t[self._s :] if self._s else self._t


class _GraphemeChunker(_WholeBufferChunker):
    __slots__ = ("_hold",)

    def __init__(self, hold_back: bool) -> None:
        super().__init__()
        self._hold = hold_back

    def next_piece(self) -> str | None:
        t = self._t
        if self._s >= len(t):
            return None
        m = _GRAPHEME.match(t, self._s)
        assert m is not None
        end = m.end()
        if self._hold and end >= len(t):
            return None
        return self._emit_to(end)


class _SegmenterChunker(_WholeBufferChunker):
    __slots__ = ("_need", "_segmenter")

    def __init__(self, segmenter: SegmenterLike, hold_back: bool) -> None:
        super().__init__()
        self._segmenter = segmenter
        if not hold_back:
            self._need = 0
        elif getattr(segmenter, "granularity", None) == "word":
            self._need = _HOLD_BACK_WORD_CHARS
        else:
            self._need = 1

    def next_piece(self) -> str | None:
        t = self._t
        s = self._s
        n = len(t)
        if s >= n:
            return None
        window = _SEGMENT_WINDOW
        while True:
            end = min(n, s + window)
            text = t[s:end]
            first = next(iter(self._segmenter.segment(text)), None)
            segment = None if first is None else _segment_text(first)
            if not segment:
                return None
            if end < n and len(segment) > window - _SEGMENT_MARGIN:
                window *= 4
                continue
            break
        if not text.startswith(segment):
            raise TypeError("The segmenter must return segments that are prefixes of the buffered text.")
        stop = s + len(segment)
        if n - stop < self._need:
            return None
        return self._emit_to(stop)


def _segment_text(item: Any) -> str:
    """A segment's text: a string, an object with a ``segment`` string (our `Segment`), or a mapping
    ``{"segment": ...}`` (``Intl.Segmenter``'s segment data as JSON-like dicts)."""
    if isinstance(item, str):
        return item
    value = item.get("segment") if isinstance(item, Mapping) else getattr(item, "segment", None)
    if not isinstance(value, str):
        raise TypeError(
            "segmenter segments must be strings, objects with a 'segment' string, or mappings "
            f"{{'segment': str}}, got {type(item).__name__}"
            + ("" if value is None else f" whose 'segment' is {type(value).__name__}")
        )
    return value


_LEFT_CONTEXT = re.compile(r"\\[AbBG]|(?<![\[\\])\^|\(\?<[=!]")
"""Constructs whose result depends on text before the search position (anchors, lookbehind)."""


class _PatternChunker(_WholeBufferChunker):
    """Mastra's ``pattern.exec(buffer)`` on the remaining buffer.

    A pattern that cannot see text before its start (no ``^``, ``\\A``, ``\\b``, lookbehind) is
    searched from the buffer position instead of on a copy of the remaining buffer: same matches,
    no quadratic copying when one delta holds many pieces.
    """

    __slots__ = ("_pattern", "_use_pos")

    def __init__(self, pattern: re.Pattern[str] | regex.Pattern[str]) -> None:
        super().__init__()
        self._pattern = pattern
        self._use_pos = _LEFT_CONTEXT.search(pattern.pattern) is None

    def next_piece(self) -> str | None:
        s = self._s
        if self._use_pos:
            m = self._pattern.search(self._t, s)
            end = m.end() - s if m is not None else 0
        else:
            m = self._pattern.search(self._rest())
            end = m.end() if m is not None else 0
        if m is None:
            return None
        if end == 0:
            raise TypeError(EMPTY_MATCH)
        return self._emit_to(s + end)


class _FunctionChunker(_WholeBufferChunker):
    __slots__ = ("_fn",)

    def __init__(self, fn: ChunkDetector) -> None:
        super().__init__()
        self._fn = fn

    def next_piece(self) -> str | None:
        rest = self._rest()
        found = self._fn(rest)
        if found is None:
            return None
        if not isinstance(found, str) or not found:  # Mastra: `!m.length` (a non-string has no length)
            raise TypeError(EMPTY_DETECTION)
        if not rest.startswith(found):
            raise TypeError(NOT_A_PREFIX)
        return self._emit_to(self._s + len(found))


def _chunker_factory(chunking: object, hold_back: bool) -> Callable[[], _Chunker]:
    """Mastra's ``createChunkDetector`` check order: segmenter, function, name or pattern."""
    segment = getattr(chunking, "segment", None)
    if (
        segment is not None
        and callable(segment)
        and not isinstance(chunking, (str, re.Pattern, regex.Pattern))
    ):
        segmenter: Any = chunking
        return lambda: _SegmenterChunker(segmenter, hold_back)
    if callable(chunking) and not isinstance(chunking, type):
        fn: Any = chunking
        return lambda: _FunctionChunker(fn)
    if isinstance(chunking, str):
        if chunking == "word":
            return _WordChunker
        if chunking == "line":
            return _LineChunker
        if chunking == "grapheme":
            return lambda: _GraphemeChunker(hold_back)
        literal = parse_js_literal(chunking)
        if literal is not None:
            return lambda: _PatternChunker(literal)
        raise TypeError(INVALID_CHUNKING)
    if isinstance(chunking, (re.Pattern, regex.Pattern)) and isinstance(chunking.pattern, str):
        pattern: Any = chunking
        return lambda: _PatternChunker(pattern)
    raise TypeError(INVALID_CHUNKING)
