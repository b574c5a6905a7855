"""The ``"word"`` and ``"line"`` chunkings of `smooth_stream` as one tight loop (no lag limit).

Same output as the general loop in `agentstream.stream._smooth` with `_WordChunker` /
`_LineChunker`, at a fraction of the cost per delta: the buffer state lives in local variables, a
delta holding no cut is appended after one ``str`` check, a printable delta ending one or two
words is cut with ``str.partition``, and any other delta holding cuts is split by one regex call
into its pieces and the rest.

The cut patterns stay linear on any input: a match either starts the delta (``\\A``) or starts
right after a whitespace character (``(?<=\\s)``), so a long word is scanned once however it is
split into deltas, and positions inside a word fail at once.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Final, cast

import msgspec

from ..chunks import Chunk, ReasoningDelta, TextDelta
from ._jsregex import JS_WHITESPACE_CLASS as _WS

__all__ = ["EAGER_KINDS", "run_eager"]

EAGER_KINDS: Final = frozenset({"word", "line"})

_IN_WORD = re.compile(rf"(\A[^{_WS}]*+[{_WS}]++|(?<=[{_WS}])[^{_WS}]++[{_WS}]++)")
"""``/\\S+\\s+/`` pieces of a delta when the pending text already holds a word."""
_OUT_OF_WORD = re.compile(rf"(\A[{_WS}]*+[^{_WS}]++[{_WS}]++|(?<=[{_WS}])[^{_WS}]++[{_WS}]++)")
"""``/\\S+\\s+/`` pieces of a delta when the pending text is empty or only whitespace."""
_HAS_WORD = re.compile(rf"[^{_WS}]")
_LINES = re.compile(r"(\A[^\n]*+\n++|(?<=\n)[^\n]++\n++)")
"""``/\\n+/`` pieces of a delta (pending text never holds a newline)."""
_TEXT_TYPES: Final = (TextDelta, ReasoningDelta)
_SPILL_AT: Final = 1024
_replace = msgspec.structs.replace


def _combine(high: str, low: str) -> str:
    return chr(0x10000 + ((ord(high) - 0xD800) << 10) + (ord(low) - 0xDC00))


def _unspill(spill: list[str], pending: str) -> str:
    """The pending text, ``spill`` emptied into it."""
    text = "".join(spill) + pending
    spill.clear()
    return text


def _piece(last: Any, spill: list[str], pending: str, metadata: Any, provider_metadata: Any) -> Chunk | None:
    """A flushed piece (Mastra's ``flushBuffer``), emptying ``spill``: ``None`` when there is
    nothing to carry."""
    if spill:
        pending = _unspill(spill, pending)
    if last is None or (not pending and metadata is None and provider_metadata is None):
        return None
    payload = _replace(last.payload, text=pending, provider_metadata=provider_metadata)
    chunk: Chunk = _replace(last, payload=payload, metadata=metadata)
    return chunk


def _cuts(text: str, word: bool, in_word: bool) -> tuple[bool, Sequence[str], str]:
    """``(True, pieces, rest)`` for the cuts in ``text``; ``(False, (), text)`` when it has none."""
    if not text:
        return False, (), text
    parts = (_IN_WORD if in_word else _OUT_OF_WORD).split(text) if word else _LINES.split(text)
    if len(parts) == 1:
        return False, (), text
    # ["", piece, "", piece, ..., rest]: the pieces are contiguous from 0.
    return True, parts[1::2], parts[-1]


def _two_spaces(head: str, tail: str, in_word: bool) -> tuple[bool, str | None, Sequence[str], str, bool]:
    """The cuts of printable ``head + " " + tail`` (``tail`` holding a space): ``(cut, one piece or
    None, the pieces when more than one, rest, in_word)``; two spaces without a regex."""
    mid, _, rest = tail.partition(" ")
    if " " in rest:
        text = head + " " + tail
        cut, pieces, rest = _cuts(text, True, in_word)
        return cut, None, pieces, rest, in_word or (not cut and _HAS_WORD.search(text) is not None)
    if head != "" or in_word:  # the first space ends a word
        if mid != "":
            return True, None, (head + " ", mid + " "), rest, rest != ""
        return True, head + "  ", (), rest, rest != ""
    if mid != "":  # the first space leads the pending text, the second ends a word
        return True, " " + mid + " ", (), rest, rest != ""
    return False, None, (), rest, rest != ""


async def run_eager(
    source: AsyncIterable[Chunk],
    kind: str,
    delay: float | None,
    sleep: Callable[[float], Awaitable[Any]],
    malformed: Callable[[Any], TypeError | None],
    close: Callable[[bool], Awaitable[None]],
) -> AsyncIterator[Chunk]:
    """Smooth ``source`` (pause ``delay`` s per piece); ``close(finished)`` runs however it ends."""
    word = kind == "word"
    # The text since the last cut (never holding a cut) is "".join(spill) + pending: a long word
    # goes to ``spill`` in parts, so appending stays linear.
    pending = ""
    spill: list[str] = []
    in_word = False  # word chunking: the pending text holds a non-whitespace character
    # ``last``: the latest delta of the buffer (Mastra's ``bufferedChunk``), keyed by (type, id).
    last = key_type = key_id = metadata = provider_metadata = cast(Any, None)
    at_yield = finished = False  # an exception thrown in at a yield or from sleep is not the upstream's
    pieces: Sequence[str]
    try:
        chunk: Any
        async for chunk in source:
            # Most deltas continue the buffered one (same type and id, well-formed): one check.
            if type(chunk) is key_type:
                payload = chunk.payload
                try:
                    pid, text = payload.id, payload.text
                except AttributeError:
                    pid = text = None
                same = pid == key_id and type(text) is str and type(pid) is str
            else:
                same = False
            if not same:
                cls = type(chunk)
                is_text = cls is TextDelta or cls is ReasoningDelta or isinstance(chunk, _TEXT_TYPES)
                if is_text:
                    payload = chunk.payload
                    try:
                        pid, text = payload.id, payload.text
                    except AttributeError:
                        pid = text = None
                    if (type(text) is not str or type(pid) is not str) and (
                        error := malformed(chunk)
                    ) is not None:
                        raise error  # after the buffer, as an upstream error
                if last is not None:
                    out = _piece(last, spill, pending, metadata, provider_metadata)
                    last = key_type = key_id = metadata = provider_metadata = None
                    pending, in_word = "", False
                    if out is not None:
                        at_yield = True
                        yield out
                        at_yield = False
                if not is_text:
                    at_yield = True
                    yield chunk
                    at_yield = False
                    continue
                key_type, key_id = cls, pid
            last = chunk
            if chunk.metadata is not None:
                metadata = chunk.metadata
            if payload.provider_metadata is not None:
                provider_metadata = payload.provider_metadata
            # Printable text holds no surrogate and no whitespace but " ": most deltas hold no
            # space or one, whose cut needs no regex.
            if word and text.isprintable():
                if " " not in text:
                    if text:
                        in_word = True
                        if len(pending) < _SPILL_AT:
                            pending += text
                        else:
                            spill.append(pending)
                            pending = text
                    continue
                head, _, rest = text.partition(" ")
                if " " in rest:
                    mid, _, tail = rest.partition(" ")
                    if mid and (head or in_word) and " " not in tail:
                        # Two words end here: two pieces, no regex.
                        if spill:
                            pending = _unspill(spill, pending)
                        cut, pieces, rest, pending = True, (f"{pending}{head} ", f"{mid} "), tail, ""
                    else:
                        cut, piece, pieces, rest, in_word = _two_spaces(head, rest, in_word)
                        if piece is not None:
                            pieces = (piece,)
                elif head or in_word:
                    if spill:
                        pending = _unspill(spill, pending)
                    out = _replace(
                        chunk,
                        payload=_replace(
                            payload, text=f"{pending}{head} ", provider_metadata=provider_metadata
                        ),
                        metadata=metadata,
                    )
                    metadata = provider_metadata = None
                    pending = rest
                    in_word = rest != ""
                    at_yield = True
                    yield out
                    if delay is not None:
                        await sleep(delay)
                    at_yield = False
                    continue
                else:
                    cut = False
                    in_word = rest != ""  # the space leads the pending text
            elif not word and "\n" not in text and not "\udc00" <= text[:1] <= "\udfff":
                cut = False
            else:
                if "\udc00" <= text[:1] <= "\udfff" and "\ud800" <= pending[-1:] <= "\udbff":
                    pending = pending[:-1] + _combine(pending[-1], text[0])  # moves no cut
                    text = text[1:]
                cut, pieces, rest = _cuts(text, word, in_word)
                if not cut and word and not in_word:
                    in_word = _HAS_WORD.search(text) is not None
            if not cut:
                if text:
                    if len(pending) < _SPILL_AT:
                        pending += text
                    else:
                        spill.append(pending)
                        pending = text
                continue
            if spill:
                pending = _unspill(spill, pending)
            for piece in pieces:
                if pending:
                    piece, pending = pending + piece, ""
                payload_out = _replace(payload, text=piece, provider_metadata=provider_metadata)
                out = _replace(chunk, payload=payload_out, metadata=metadata)
                metadata = provider_metadata = None
                at_yield = True
                yield out
                if delay is not None:
                    await sleep(delay)
                at_yield = False
            pending, in_word = rest, rest != ""
        finished = True
    except Exception:
        if not at_yield and (out := _piece(last, spill, pending, metadata, provider_metadata)) is not None:
            yield out
        raise
    finally:
        await close(finished)
    if (out := _piece(last, spill, pending, metadata, provider_metadata)) is not None:
        yield out
