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

DIM, RESET, CYAN, GREEN, RED, YELLOW = (
    "\x1b[2m",
    "\x1b[0m",
    "\x1b[36m",
    "\x1b[32m",
    "\x1b[31m",
    "\x1b[33m",
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "run",
        help="run an agent on a prompt and stream its answer",
        description=(
            "Run the demo agent (tools: weather, research) on PROMPT and stream the answer: reasoning "
            "dimmed, tool calls and results as they happen, usage at the end. --jsonl writes every "
            "chunk as a JSON line instead. Ctrl-C aborts the run (exit code 130). With --until-idle "
            "the demo agent runs in a Mastra with background tasks: 'research' runs in the background, "
            "its lifecycle (started/running/output/completed) is shown as it happens, and a "
            "continuation turn answers with the result."
        ),
    )
    parser.add_argument("prompt", help="what to ask")
    parser.add_argument(
        "--model", help="model, e.g. openai/gpt-4o-mini (default: $AGENTSTREAM_MODEL or demo)"
    )
    parser.add_argument("--smooth", choices=("word", "line", "none"), default="word", help="smoothing (word)")
    parser.add_argument("--delay-ms", type=float, default=10.0, metavar="N", help="smoothing delay per piece")
    parser.add_argument("--jsonl", action="store_true", help="write raw chunks as JSON lines")
    parser.add_argument(
        "--until-idle",
        action="store_true",
        help="run with background tasks and stream until idle (continuation turns included)",
    )
    parser.add_argument(
        "--max-idle-ms",
        type=float,
        default=None,
        metavar="N",
        help="with --until-idle: close after N ms without background-task news (default 300000)",
    )
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
    from agentstream._demo import demo_agent

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
    mastra: Any = None
    options: dict[str, Any] = {"abort_signal": controller.signal, "experimental_transform": _transform(args)}
    if args.until_idle:
        from agentstream._demo import demo_mastra

        mastra = demo_mastra(model)
        agent = mastra.get_agent("demo")
        options["until_idle"] = {"max_idle_ms": args.max_idle_ms} if args.max_idle_ms else True
    else:
        agent = demo_agent(model)
    output = agent.stream(args.prompt, **options)
    try:
        return await _render(args, output, controller)
    finally:
        if mastra is not None:
            manager = mastra.background_task_manager
            if controller.signal.aborted and manager is not None:
                await manager.shutdown(grace_ms=0)  # Ctrl-C: don't wait for background tasks
            await mastra.aclose()


_LINE_KINDS = frozenset(
    {"reasoning-end", "tool-call", "tool-output", "tool-result", "tool-error", "error", "abort"}
)


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def _render(args: argparse.Namespace, output: Any, controller: Any) -> int:
    from agentstream.chunks import encode_chunk

    out = sys.stdout
    tty = out.isatty()

    def paint(color: str, text: str) -> str:
        return f"{color}{text}{RESET}" if tty else text

    aborted = False
    failed = False
    mode = "text"
    starts = 0
    at_line_start = True
    async for chunk in output.full_stream:
        kind = chunk.type if hasattr(chunk, "type") else ""
        if args.jsonl:
            out.buffer.write(encode_chunk(chunk) + b"\n")
            out.flush()
            aborted = aborted or kind == "abort"
            failed = failed or kind == "error"
            continue
        payload: Any = getattr(chunk, "payload", None)
        if kind.startswith("background-task-"):
            if not at_line_start:
                out.write("\n")
            tag = f"[bg {getattr(payload, 'tool_name', '')} {str(getattr(payload, 'task_id', ''))[:8]}]"
            if kind == "background-task-started":
                out.write(paint(YELLOW, f"⧗ {tag} started in the background\n"))
            elif kind == "background-task-running":
                out.write(paint(YELLOW, f"⧗ {tag} running {_short(payload.args)}\n"))
            elif kind == "background-task-output":
                inner = payload.payload
                value = inner.get("payload", {}).get("output", inner) if isinstance(inner, dict) else inner
                out.write(paint(DIM, f"  {tag} … {_short(value)}\n"))
            elif kind == "background-task-completed":
                out.write(paint(GREEN, f"✓ {tag} completed: {_short(payload.result)}\n"))
            elif kind == "background-task-failed":
                out.write(paint(RED, f"✗ {tag} failed: {payload.error.get('message', '')}\n"))
            elif kind == "background-task-suspended":
                out.write(paint(YELLOW, f"⏸ {tag} suspended: {_short(payload.suspend_payload)}\n"))
            elif kind in ("background-task-cancelled", "background-task-resumed"):
                out.write(paint(YELLOW, f"⧗ {tag} {kind.removeprefix('background-task-')}\n"))
        elif kind == "start":
            starts += 1
            if starts > 1:
                out.write(paint(DIM, "\n── continuation ──\n"))
        elif kind == "reasoning-delta":
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
        if kind == "text-delta":
            at_line_start = payload.text.endswith("\n")
        elif kind == "reasoning-delta":
            at_line_start = False
        elif kind in _LINE_KINDS or kind.startswith("background-task-") or (kind == "start" and starts > 1):
            at_line_start = True
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
