"""`SecretRedactor`: secrets and personal data masked by patterns, in prompts and in streamed text
even when a match spans deltas."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import regex  # type: ignore[import-untyped]

from ..chunks import Chunk
from ._text import HoldBack, map_message_text

__all__ = ["DEFAULT_PATTERNS", "SecretRedactor", "luhn_valid"]

DEFAULT_PATTERNS: dict[str, str] = {
    "api-key": (
        r"\b(?:sk|pk|rk)-(?:proj-|ant-(?:api\d\d-)?|live_|test_)?[A-Za-z0-9_-]{16,}"
        r"|\bAKIA[0-9A-Z]{16}\b"
        r"|\bgh[pousr]_[A-Za-z0-9]{36,}"
        r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"
        r"|\bAIza[0-9A-Za-z_-]{35}"
    ),
    "email": r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b",
    "card": r"\b\d(?:[ -]?\d){12,18}\b",
}
"""Pattern names → regular expressions (the ``regex`` package's syntax)."""


def luhn_valid(digits: str) -> bool:
    """The Luhn checksum of a card number (spaces and dashes ignored)."""
    numbers = [int(c) for c in digits if c.isdigit()]
    total = 0
    for i, n in enumerate(reversed(numbers)):
        if i % 2 == 1:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return bool(numbers) and total % 10 == 0


class SecretRedactor:
    """Replaces every match of ``patterns`` (``{name: regex}``, default `DEFAULT_PATTERNS`: API keys,
    e-mail addresses, card numbers that pass the Luhn check) by ``replacement`` (``{name}`` is the
    pattern's name).

    An input processor (the prompt's text) and an output processor (streamed text). On the stream,
    text that could still become a match (a partial match at the end of what has arrived, or a
    full one that the next delta could extend) is held back until the next delta decides it, so a
    key split across deltas is still masked; what is held when the text part ends is released then.
    Held-back text is at most the length of one candidate match.
    """

    id = "secret-redactor"
    name = "Secret Redactor"

    def __init__(
        self,
        patterns: Mapping[str, str] | None = None,
        *,
        replacement: str = "[REDACTED:{name}]",
        validators: Mapping[str, Callable[[str], bool]] | None = None,
    ) -> None:
        table = dict(DEFAULT_PATTERNS if patterns is None else patterns)
        if not table:
            raise ValueError("SecretRedactor needs at least one pattern")
        for name, pattern in table.items():
            if not name.isidentifier() and not name.replace("-", "_").isidentifier():
                raise ValueError(f"SecretRedactor pattern name {name!r}: use letters, digits, - and _")
            try:
                compiled = regex.compile(pattern)
            except regex.error as exc:
                raise ValueError(f"SecretRedactor pattern {name!r} is not a valid regex: {exc}") from None
            if compiled.fullmatch("") is not None:
                raise ValueError(f"SecretRedactor pattern {name!r} matches the empty string")
        self.names = list(table)
        self._groups = {f"p{i}": name for i, name in enumerate(self.names)}
        self._pattern = regex.compile("|".join(f"(?P<p{i}>{p})" for i, p in enumerate(table.values())))
        self.replacement = replacement
        self.validators: dict[str, Callable[[str], bool]] = {"card": luhn_valid} if patterns is None else {}
        self.validators.update(validators or {})
        self._stream = HoldBack(self._split, reasoning=True)

    def _replace(self, match: Any) -> str:
        name = self._groups[match.lastgroup]
        valid = self.validators.get(name)
        if valid is not None and not valid(match.group()):
            return str(match.group())
        return self.replacement.format(name=name)

    def redact(self, text: str) -> str:
        """``text`` with every match replaced."""
        return str(self._pattern.sub(self._replace, text))

    async def _split(self, text: str, final: bool, _abort: Any = None) -> tuple[str, str]:
        if final:
            return self.redact(text), ""
        out, pos = [], 0
        while True:
            match = self._pattern.search(text, pos, partial=True)
            if match is None:
                out.append(text[pos:])
                return "".join(out), ""
            # the next delta may still decide it: a partial match, or a full one that what follows
            # it up to the end could extend (``a@b.co`` + ``.`` may become ``a@b.co.uk``)
            if match.partial or self._pattern.fullmatch(text, match.start(), partial=True) is not None:
                out.append(text[pos : match.start()])
                return "".join(out), text[match.start() :]
            out.append(text[pos : match.start()])
            out.append(self._replace(match))
            pos = match.end()

    async def process_input(self, *, messages: list[dict[str, Any]], **_: Any) -> list[dict[str, Any]]:
        """Every message's text, redacted."""

        async def redact(text: str) -> str:
            return self.redact(text)

        return [await map_message_text(m, redact) for m in messages]

    async def process_output_stream(
        self, *, part: Chunk, state: dict[str, Any], writer: Any, **_: Any
    ) -> Chunk | None:
        """Streamed text, redacted (see the class docstring)."""
        return await self._stream(part, state, writer)
