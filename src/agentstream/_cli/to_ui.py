"""``agentstream to-ui``: Mastra chunks (JSON lines on stdin) → AI SDK UI message chunks on stdout."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import IO, Any

from ._errors import CLIError
from ._stdin import read_lines

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "to-ui",
        help="convert Mastra chunks (JSON lines on stdin) to AI SDK UI message chunks",
        description=(
            "Read Mastra agent chunks as JSON lines on stdin and write AI SDK UI message chunks "
            "(what useChat reads) as JSON lines, or the SSE response body with --sse. Output is "
            "flushed per line. A bad input line is reported on stderr with its line number; "
            "the exit code is then 1, after everything produced before it was written."
        ),
    )
    parser.add_argument("--version", choices=("v5", "v6", "v7"), default="v5", help="AI SDK version")
    parser.add_argument("--send-reasoning", action="store_true", help="forward reasoning parts")
    parser.add_argument("--send-sources", action="store_true", help="forward source parts")
    parser.add_argument("--send-goals", action="store_true", help="forward goal progress as data-goal parts")
    parser.add_argument("--no-start", action="store_true", help="do not send the start chunk")
    parser.add_argument("--no-finish", action="store_true", help="do not send the finish chunk")
    parser.add_argument("--last-message-id", metavar="ID", help="message id to continue (overrides start)")
    parser.add_argument("--sse", action="store_true", help="write the SSE body (data: ... frames, [DONE])")
    parser.set_defaults(func=run)
    return parser


async def _main(args: argparse.Namespace, stdin: IO[bytes], stdout: IO[bytes]) -> None:
    from agentstream.ai_sdk import DONE_FRAME, encode_sse_frame, encode_ui_chunk, to_ai_sdk_stream
    from agentstream.chunks import aiter_jsonl

    parts = to_ai_sdk_stream(
        aiter_jsonl(read_lines(stdin.fileno()), unknown="keep"),
        version=args.version,
        send_start=not args.no_start,
        send_finish=not args.no_finish,
        send_reasoning=args.send_reasoning,
        send_sources=args.send_sources,
        send_goals=args.send_goals,
        last_message_id=args.last_message_id,
    )
    async for part in parts:
        stdout.write(encode_sse_frame(part) if args.sse else encode_ui_chunk(part) + b"\n")
        stdout.flush()
    if args.sse:
        stdout.write(DONE_FRAME)
        stdout.flush()


def run(args: argparse.Namespace) -> int:
    from agentstream.ai_sdk import UIMessageStreamError
    from agentstream.chunks import ChunkDecodeError

    try:
        asyncio.run(_main(args, sys.stdin.buffer, sys.stdout.buffer))
    except (ChunkDecodeError, UIMessageStreamError) as exc:
        raise CLIError(str(exc)) from exc
    return 0
