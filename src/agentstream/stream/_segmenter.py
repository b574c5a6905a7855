"""``Segmenter``: a small ``Intl.Segmenter`` look-alike backed by ICU (the ``icu`` extra, ``icu4py``).

``icu4py`` (1.2) exposes ICU's break iterators as ``icu4py.breakers.{Character,Word,Sentence,Line}Breaker``
(``BaseBreaker(text, locale)``; iterating yields the segment strings, ``segments()`` yields
``(start, end)`` in UTF-16 code units). That is all ``Intl.Segmenter`` needs for
``granularity`` ``"grapheme"`` / ``"word"`` / ``"sentence"``; it does not expose the rule status, so
``is_word_like`` is derived from the segment's characters (a letter, digit or ideograph).

Lone surrogates (which JavaScript strings, and so Mastra's wire JSON, can carry) cannot be handed
to ICU through UTF-8: they are replaced by U+FFFD for the break iterator (one code point either way,
so offsets are unchanged) and the original characters are returned. ICU treats both as a segment of
their own, as V8 does for a lone surrogate.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Granularity", "Segment", "Segmenter"]

Granularity = Literal["grapheme", "word", "sentence"]

_SURROGATE = re.compile("[\ud800-\udfff]")
_WORD_LIKE = re.compile(r"[^\W_]", re.UNICODE)

_ICU_MISSING = (
    "agentstream.stream.Segmenter needs ICU: install the extra with pip install 'agentstream[icu]' (icu4py)"
)


def _breaker_class(granularity: str) -> Any:
    try:
        from icu4py import breakers
    except ImportError as exc:  # pragma: no cover - exercised with the extra missing
        raise ImportError(_ICU_MISSING) from exc
    return {
        "grapheme": breakers.CharacterBreaker,
        "word": breakers.WordBreaker,
        "sentence": breakers.SentenceBreaker,
    }[granularity]


@dataclass(frozen=True, slots=True)
class Segment:
    """One segment, shaped like ``Intl.Segmenter``'s segment data."""

    segment: str
    index: int
    input: str
    is_word_like: bool | None = None


class Segmenter:
    """Locale-aware segmentation like ``new Intl.Segmenter(locale, {granularity})``.

    The default granularity is ``"word"`` (``Intl.Segmenter`` defaults to ``"grapheme"``).
    ``segment(text)`` yields ``Segment`` objects lazily, in order; their texts concatenate to
    ``text``. Pass an instance as ``smooth_stream(chunking=...)``.
    """

    __slots__ = ("_breaker", "granularity", "locale")

    def __init__(self, locale: str | None = None, granularity: Granularity = "word") -> None:
        if granularity not in ("grapheme", "word", "sentence"):
            raise ValueError(f"granularity must be 'grapheme', 'word' or 'sentence', got {granularity!r}")
        self.locale = locale or "en"
        self.granularity: Granularity = granularity
        self._breaker = _breaker_class(granularity)

    def __repr__(self) -> str:
        return f"Segmenter({self.locale!r}, granularity={self.granularity!r})"

    def segment(self, text: str) -> Iterator[Segment]:
        """Split `text` into segments (words, sentences or graphemes) that cover it exactly, in order."""
        if not text:
            return
        safe = _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text
        index = 0
        word = self.granularity == "word"
        for piece in self._breaker(safe, self.locale):
            end = index + len(piece)
            original = text[index:end] if safe is not text else piece
            like = bool(_WORD_LIKE.search(original)) if word else None
            yield Segment(original, index, text, like)
            index = end
        if index < len(text):  # defensive: never lose text
            yield Segment(text[index:], index, text, None)
