"""``agentstream smooth``: Mastra chunks (JSON lines on stdin) → smoothed chunks (JSON lines on stdout)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import IO, Any

from ._args import milliseconds, milliseconds_or_none
from ._errors import CLIError, UsageError
from ._stdin import read_lines

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
        "--delay-ms",
        type=milliseconds_or_none,
        default=10.0,
        metavar="N|none",
        help="delay after each piece in ms (default 10)",
    )
    parser.add_argument(
        "--max-lag-ms", type=milliseconds, default=None, metavar="N", help="catch up beyond this lag"
    )
    parser.add_argument("--hold-back", action="store_true", help="keep the last segment until more text")
    parser.set_defaults(func=run)
    return parser


def parse_chunking(value: str) -> Any:
    """The ``--chunking`` argument → a ``smooth_stream(chunking=...)`` value (`UsageError` if bad)."""
    if value in ("word", "line", "grapheme"):
        return value
    if value.startswith("regex:"):
        return _regex(value[len("regex:") :])
    if value.startswith("segmenter:"):
        from agentstream.stream import Segmenter

        locale, _, granularity = value[len("segmenter:") :].partition(":")
        try:
            return Segmenter(locale or None, granularity or "word")  # type: ignore[arg-type]
        except (ValueError, TypeError) as exc:
            raise UsageError(f"--chunking {value!r}: {exc}") from exc
    raise UsageError(
        f"--chunking {value!r} is not a chunking: use word, line, grapheme, regex:PATTERN "
        "or segmenter:LOCALE[:GRANULARITY]"
    )


def _regex(source: str) -> Any:
    from agentstream.stream import js_regex, parse_js_literal

    if not source:
        raise UsageError(
            "--chunking regex: needs a pattern after 'regex:', e.g. 'regex:[^,]*,\\s*' or 'regex:/b,/i'"
        )
    try:
        pattern = parse_js_literal(source) or js_regex(source)
    except ValueError as exc:
        raise UsageError(f"--chunking regex:{source}: {exc}") from exc
    if pattern.search("") is not None:
        # smooth_stream would stop at the first empty match (Mastra's TypeError): refuse it up front.
        raise UsageError(
            f"--chunking regex:{source}: the pattern matches the empty string, so it cannot cut text "
            "into pieces; make it match at least one character"
        )
    return pattern


async def _main(args: argparse.Namespace, chunking: Any, stdin: IO[bytes], stdout: IO[bytes]) -> None:
    from agentstream.chunks import aiter_jsonl, encode_chunk
    from agentstream.stream import smooth_stream

    transform = smooth_stream(
        delay_in_ms=args.delay_ms, chunking=chunking, max_lag_ms=args.max_lag_ms, hold_back=args.hold_back
    )
    async for chunk in transform(aiter_jsonl(read_lines(stdin.fileno()), unknown="keep")):
        stdout.write(encode_chunk(chunk) + b"\n")
        stdout.flush()


def run(args: argparse.Namespace) -> int:
    from agentstream.chunks import ChunkDecodeError

    chunking = parse_chunking(args.chunking)
    try:
        asyncio.run(_main(args, chunking, sys.stdin.buffer, sys.stdout.buffer))
    except (ChunkDecodeError, TypeError) as exc:  # a bad line, or a malformed chunk (Mastra's TypeError)
        raise CLIError(str(exc)) from exc
    return 0
