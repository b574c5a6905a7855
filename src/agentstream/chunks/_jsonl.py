"""JSON-lines streams of chunks, sync and async, with line numbers in errors."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import IO

from ._codec import Chunk, UnknownMode, decode_chunk, encode_chunk
from ._errors import ChunkDecodeError

__all__ = ["aencode_jsonl", "aiter_jsonl", "encode_jsonl", "iter_jsonl", "write_jsonl"]


def _decode_line(line: bytes | str, number: int, unknown: UnknownMode) -> Chunk | None:
    if not line.strip():
        return None
    try:
        return decode_chunk(line, unknown=unknown)
    except ChunkDecodeError as exc:
        raise exc.at_line(number) from None


def iter_jsonl(lines: Iterable[bytes | str], *, unknown: UnknownMode = "raise") -> Iterator[Chunk]:
    """Chunks from JSON lines (a file object or any iterable of lines); blank lines are skipped.

    A bad line raises ``ChunkDecodeError`` with ``line`` set, after every chunk before it was
    yielded.
    """
    for number, line in enumerate(lines, start=1):
        chunk = _decode_line(line, number, unknown)
        if chunk is not None:
            yield chunk


async def aiter_jsonl(
    lines: AsyncIterable[bytes | str], *, unknown: UnknownMode = "raise"
) -> AsyncIterator[Chunk]:
    """Async form of ``iter_jsonl``."""
    number = 0
    async for line in lines:
        number += 1
        chunk = _decode_line(line, number, unknown)
        if chunk is not None:
            yield chunk


def encode_jsonl(chunks: Iterable[Chunk]) -> Iterator[bytes]:
    """One ``<json>\\n`` line per chunk."""
    for chunk in chunks:
        yield encode_chunk(chunk) + b"\n"


async def aencode_jsonl(chunks: AsyncIterable[Chunk]) -> AsyncIterator[bytes]:
    """Async form of ``encode_jsonl``."""
    async for chunk in chunks:
        yield encode_chunk(chunk) + b"\n"


def write_jsonl(chunks: Iterable[Chunk], fp: IO[bytes], *, flush: bool = True) -> int:
    """Write chunks as JSON lines to a binary file; flushes after each line by default. Returns the count."""
    count = 0
    for line in encode_jsonl(chunks):
        fp.write(line)
        if flush:
            fp.flush()
        count += 1
    return count
