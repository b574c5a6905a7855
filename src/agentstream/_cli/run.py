"""``agentstream run PROMPT``: stream an agent's answer to the terminal (or raw chunks as JSON lines)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from typing import Any

__all__ = ["add_parser", "run"]

DIM, RESET, CYAN, GREEN, RED = "\x1b[2m", "\x1b[0m", "\x1b[36m", "\x1b[32m", "\x1b[31m"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "run",
        help="run an agent on a prompt and stream its answer",
        description=(
            "Run the demo agent (tools: weather, research) on PROMPT and stream the answer: reasoning "
            "dimmed, tool calls and results as they happen, usage at the end. --jsonl writes every "
            "chunk as a JSON line instead. Ctrl-C aborts the run (exit code 130)."
        ),
    )
    parser.add_argument("prompt", help="what to ask")
    parser.add_argument(
        "--model", help="model, e.g. openai/gpt-4o-mini (default: $AGENTSTREAM_MODEL or demo)"
    )
    parser.add_argument("--smooth", choices=("word", "line", "none"), default="word", help="smoothing (word)")
    parser.add_argument("--delay-ms", type=float, default=10.0, metavar="N", help="smoothing delay per piece")
    parser.add_argument("--jsonl", action="store_true", help="write raw chunks as JSON lines")
    parser.set_defaults(func=run)
    return parser


def _transform(args: argparse.Namespace) -> Any:
    if args.smooth == "none" or args.jsonl:  # JSON lines are the raw chunks, unsmoothed
        return None
    try:
        from agentstream.stream._smooth import smooth_stream
    except ImportError:  # pragma: no cover - smoothing not available in this build
        return None
    return lambda: smooth_stream(delay_in_ms=args.delay_ms, chunking=args.smooth)


async def _main(args: argparse.Namespace) -> int:
    from agentstream._abort import AbortController
    from agentstream.agent._demo_agent import demo_agent
    from agentstream.chunks import encode_chunk

    model = args.model or os.environ.get("AGENTSTREAM_MODEL")
    if not model:
        model = "demo"
        print(
            "note: using the offline demo model (set AGENTSTREAM_MODEL or --model for a real one)",
            file=sys.stderr,
        )
    controller = AbortController()
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, controller.abort)
    except (NotImplementedError, RuntimeError):  # pragma: no cover - non-Unix
        pass
    agent = demo_agent(model)
    output = agent.stream(
        args.prompt, abort_signal=controller.signal, experimental_transform=_transform(args)
    )
    out = sys.stdout
    tty = out.isatty()

    def paint(color: str, text: str) -> str:
        return f"{color}{text}{RESET}" if tty else text

    aborted = False
    failed = False
    mode = "text"
    async for chunk in output.full_stream:
        kind = chunk.type if hasattr(chunk, "type") else ""
        if args.jsonl:
            out.buffer.write(encode_chunk(chunk) + b"\n")
            out.flush()
            aborted = aborted or kind == "abort"
            failed = failed or kind == "error"
            continue
        payload: Any = getattr(chunk, "payload", None)
        if kind == "reasoning-delta":
            if mode != "reasoning":
                mode = "reasoning"
            out.write(paint(DIM, payload.text))
        elif kind == "reasoning-end":
            out.write("\n")
        elif kind == "text-delta":
            mode = "text"
            out.write(payload.text)
        elif kind == "tool-call":
            out.write(
                paint(CYAN, f"\n→ {payload.tool_name}({json.dumps(payload.args, ensure_ascii=False)})\n")
            )
        elif kind == "tool-output":
            out.write(paint(DIM, f"  … {json.dumps(payload.output, ensure_ascii=False)}\n"))
        elif kind == "tool-result":
            out.write(
                paint(GREEN, f"← {payload.tool_name}: {json.dumps(payload.result, ensure_ascii=False)}\n")
            )
        elif kind == "tool-error":
            out.write(paint(RED, f"← {payload.tool_name} failed: {payload.error}\n"))
        elif kind == "error":
            failed = True
            out.write(paint(RED, f"\nerror: {payload.error}\n"))
        elif kind == "abort":
            aborted = True
            out.write(paint(RED, "\n[aborted]\n"))
        out.flush()
    if not args.jsonl and not aborted and not failed:
        usage = await output.usage
        out.write("\n")
        print(
            f"[usage] input {usage.get('inputTokens', 0)} · output {usage.get('outputTokens', 0)} · "
            f"total {usage.get('totalTokens', 0)} tokens",
            file=sys.stderr,
        )
    out.flush()
    if aborted:
        return 130
    return 1 if failed else 0


def run(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_main(args))
    except KeyboardInterrupt:
        return 130
