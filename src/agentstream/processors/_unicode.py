"""`UnicodeNormalizer`: one Unicode form for prompts and streamed text (Mastra's ``UnicodeNormalizer``)."""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Literal

from ..chunks import Chunk
from ._text import HoldBack, map_message_text

__all__ = ["UnicodeNormalizer"]

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")
_SPACES = re.compile(r"[^\S\n]+")
_NEWLINES = re.compile(r"\n{3,}")
_HANGUL_JAMO = re.compile(r"[\u1100-\u11ff\ua960-\ua97f\ud7b0-\ud7ff]")


def _starter(ch: str) -> bool:
    """A character no later character can change under NFC/NFKC: combining class 0, not a jamo."""
    return unicodedata.combining(ch) == 0 and not _HANGUL_JAMO.match(ch)


class UnicodeNormalizer:
    """Normalises text to ``form`` (``NFKC`` by default: compatibility characters such as full-width
    letters and ligatures become plain ones), optionally strips control and invisible formatting
    characters (zero-width spaces, bidirectional overrides) and collapses runs of spaces.

    As an input processor it rewrites every message's text; as an output processor it normalises
    the stream, holding back the last character of each delta until the next one shows that no
    combining mark follows (a mark split into the next delta still composes).
    """

    id = "unicode-normalizer"
    name = "Unicode Normalizer"

    def __init__(
        self,
        *,
        form: Literal["NFC", "NFD", "NFKC", "NFKD"] = "NFKC",
        strip_control_chars: bool = False,
        collapse_whitespace: bool = False,
    ) -> None:
        if form not in ("NFC", "NFD", "NFKC", "NFKD"):
            raise ValueError(f"UnicodeNormalizer form must be NFC, NFD, NFKC or NFKD, got {form!r}")
        self.form: Literal["NFC", "NFD", "NFKC", "NFKD"] = form
        self.strip_control_chars = strip_control_chars
        self.collapse_whitespace = collapse_whitespace
        self._stream = HoldBack(self._split, reasoning=True)

    def normalize(self, text: str) -> str:
        """``text`` in the configured form."""
        text = unicodedata.normalize(self.form, text)
        if self.strip_control_chars:
            text = _CONTROL.sub("", text)
        if self.collapse_whitespace:
            text = _NEWLINES.sub("\n\n", _SPACES.sub(" ", text))
        return text

    async def _split(self, text: str, final: bool, _abort: Any = None) -> tuple[str, str]:
        if final:
            return self.normalize(text), ""
        cut = len(text)
        while cut > 0 and not _starter(text[cut - 1]):
            cut -= 1
        cut = max(cut - 1, 0)  # the last starter may still take marks from the next delta
        if self.collapse_whitespace:
            while cut > 0 and text[cut - 1].isspace():  # a run of spaces may go on
                cut -= 1
        return self.normalize(text[:cut]), text[cut:]

    async def process_input(self, *, messages: list[dict[str, Any]], **_: Any) -> list[dict[str, Any]]:
        """Every message's text, normalised."""

        async def norm(text: str) -> str:
            return self.normalize(text)

        return [await map_message_text(m, norm) for m in messages]

    async def process_output_stream(
        self, *, part: Chunk, state: dict[str, Any], writer: Any, **_: Any
    ) -> Chunk | None:
        """Streamed text, normalised (see the class docstring)."""
        return await self._stream(part, state, writer)
