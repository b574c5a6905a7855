"""``agentstream smooth``: Mastra chunks (JSON lines on stdin) → smoothed chunks (JSON lines on stdout)."""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
from collections.abc import AsyncIterator
from typing import IO, Any

__all__ = ["add_parser", "parse_chunking", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "smooth",
        help="smooth text/reasoning deltas of Mastra chunks (JSON lines on stdin) like smoothStream",
        description=(
            "Read Mastra chunks as JSON lines on stdin as they arrive and write the chunks of "
            "smooth_stream() as JSON lines on stdout, each flushed as soon as it is produced. A bad "
            "input line is reported on stderr with its line number; the exit code is then 1, after "
            "everything produced before it was written."
        ),
    )
    parser.add_argument(
        "--chunking",
        default="word",
        metavar="MODE",
        help=(
            "word (default), line, grapheme, regex:PATTERN (JavaScript RegExp source, or /source/flags), "
            "segmenter:LOCALE[:GRANULARITY] (ICU; granularity word, grapheme or sentence; default word)"
        ),
    )
    parser.add_argument(
        "--delay-ms", default="10", metavar="N|none", help="delay after each piece in ms (default 10)"
    )
    parser.add_argument(
        "--max-lag-ms", type=float, default=None, metavar="N", help="catch up beyond this lag"
    )
    parser.add_argument("--hold-back", action="store_true", help="keep the last segment until more text")
    parser.set_defaults(func=run)
    return parser


def parse_chunking(value: str) -> Any:
    """The ``--chunking`` argument → a ``smooth_stream(chunking=...)`` value."""
    if value in ("word", "line", "grapheme"):
        return value
    if value.startswith("regex:"):
        from agentstream.stream import js_regex
        from agentstream.stream._jsregex import parse_js_literal

        source = value[len("regex:") :]
        return parse_js_literal(source) or js_regex(source)
    if value.startswith("segmenter:"):
        from agentstream.stream import Segmenter

        locale, _, granularity = value[len("segmenter:") :].partition(":")
        return Segmenter(locale or None, granularity or "word")  # type: ignore[arg-type]
    raise argparse.ArgumentTypeError(
        f"invalid --chunking {value!r}: use word, line, grapheme, regex:PATTERN or segmenter:LOCALE[:GRANULARITY]"
    )


def parse_delay(value: str) -> float | None:
    if value.lower() in ("none", "null"):
        return None
    try:
        delay = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid --delay-ms {value!r}: a number of ms or 'none'") from None
    if delay < 0:
        raise argparse.ArgumentTypeError(f"invalid --delay-ms {value!r}: must be >= 0")
    return delay


async def _lines(stream: IO[bytes]) -> AsyncIterator[bytes]:
    """Lines of ``stream`` as they arrive (a reader thread; the event loop never blocks on stdin)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()

    def read() -> None:
        try:
            for line in iter(stream.readline, b""):
                loop.call_soon_threadsafe(queue.put_nowait, line)
        finally:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, None)
            except RuntimeError:  # loop already closed
                pass

    threading.Thread(target=read, name="agentstream-smooth-stdin", daemon=True).start()
    while (line := await queue.get()) is not None:
        yield line


async def _main(
    args: argparse.Namespace, chunking: Any, delay: float | None, stdin: IO[bytes], stdout: IO[bytes]
) -> None:
    from agentstream.chunks import aiter_jsonl, encode_chunk
    from agentstream.stream import smooth_stream

    transform = smooth_stream(
        delay_in_ms=delay, chunking=chunking, max_lag_ms=args.max_lag_ms, hold_back=args.hold_back
    )
    async for chunk in transform(aiter_jsonl(_lines(stdin), unknown="keep")):
        stdout.write(encode_chunk(chunk) + b"\n")
        stdout.flush()


def run(args: argparse.Namespace) -> int:
    from agentstream.chunks import ChunkDecodeError

    try:
        chunking = parse_chunking(args.chunking)
        delay = parse_delay(args.delay_ms)
    except (argparse.ArgumentTypeError, ValueError, ImportError) as exc:
        print(f"agentstream smooth: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(_main(args, chunking, delay, sys.stdin.buffer, sys.stdout.buffer))
    except (ChunkDecodeError, TypeError) as exc:
        sys.stdout.flush()
        print(f"agentstream smooth: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    return 0
