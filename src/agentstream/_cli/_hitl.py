"""``agentstream run``'s answers to a run that stops for the user: approve or decline a tool call,
or give a suspended tool what it asks for. On a terminal it asks; otherwise ``--approve`` /
``--decline`` / ``--resume JSON`` answer, and a run with no answer is a one-line error."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from ._errors import UsageError

__all__ = ["Waiting", "add_arguments", "answer", "waiting_from"]


class Waiting:
    """What a suspended run waits for: its last ``tool-call-approval`` or ``tool-call-suspended``."""

    def __init__(self, kind: str, payload: Any) -> None:
        self.kind = kind
        self.tool_name: str = payload.tool_name
        self.tool_call_id: str = payload.tool_call_id
        self.args = getattr(payload, "args", None)
        self.suspend_payload = getattr(payload, "suspend_payload", None)


def waiting_from(chunk: Any, current: Waiting | None) -> Waiting | None:
    """Track the chunks of a leg; the last suspension wins."""
    kind = getattr(chunk, "type", "")
    if kind in ("tool-call-approval", "tool-call-suspended"):
        return Waiting(kind, chunk.payload)
    return current


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--approve", action="store_true", help="approve tool calls that need approval")
    group.add_argument(
        "--decline",
        nargs="?",
        const="",
        default=None,
        metavar="REASON",
        help="decline them (the model is told)",
    )
    parser.add_argument(
        "--resume",
        type=_json_object,
        default=None,
        metavar="JSON",
        help="""answer a suspended tool with this JSON object (e.g. '{"time": "19:30"}')""",
    )


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(
            f'expected a JSON object such as \'{{"time": "19:30"}}\', got {text!r}'
        )
    return value


def _args_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


async def _readline() -> str:
    # Not a thread: a Ctrl-C at the prompt must end the program, not wait for a line.
    loop = asyncio.get_running_loop()
    line: asyncio.Future[str] = loop.create_future()
    fd = sys.stdin.fileno()

    def ready() -> None:
        if not line.done():
            line.set_result(sys.stdin.readline())

    loop.add_reader(fd, ready)
    try:
        return await line
    finally:
        loop.remove_reader(fd)


async def _ask(question: str) -> str:
    sys.stderr.write(question)
    sys.stderr.flush()
    line = await _readline()
    if not line:  # end of input: no answer is a "no"
        sys.stderr.write("\n")
    return line.strip()


async def _ask_resume(waiting: Waiting) -> dict[str, Any]:
    question = waiting.suspend_payload
    sys.stderr.write(f"{waiting.tool_name} asks: {_args_text(question)}\n")
    while True:
        text = await _ask("Answer as a JSON object (empty to cancel): ")
        if not text:
            raise UsageError(f"{waiting.tool_name} is waiting for an answer and none was given")
        try:
            return _json_object(text)
        except argparse.ArgumentTypeError as exc:
            sys.stderr.write(f"{exc}\n")


async def answer(
    agent: Any, run_id: str, waiting: Waiting, args: argparse.Namespace, options: dict[str, Any]
) -> Any:
    """The next leg of the run: the user's answer to what ``waiting`` asks."""
    interactive = sys.stdin.isatty()
    if waiting.kind == "tool-call-suspended":
        if args.resume is not None:
            data = args.resume
        elif interactive:
            data = await _ask_resume(waiting)
        else:
            raise UsageError(
                f"{waiting.tool_name} is waiting for an answer {_args_text(waiting.suspend_payload)}: "
                "run on a terminal, or pass --resume JSON"
            )
        return agent.resume_stream(data, run_id=run_id, tool_call_id=waiting.tool_call_id, **options)
    if args.approve:
        approved, reason = True, None
    elif args.decline is not None:
        approved, reason = False, args.decline or None
    elif interactive:
        reply = await _ask(f"Approve {waiting.tool_name} {_args_text(waiting.args)}? [y/N] ")
        approved, reason = reply.lower() in ("y", "yes"), None
    else:
        raise UsageError(
            f"{waiting.tool_name} {_args_text(waiting.args)} needs approval: run on a terminal, "
            "or pass --approve or --decline"
        )
    if approved:
        return agent.approve_tool_call(run_id=run_id, tool_call_id=waiting.tool_call_id, **options)
    return agent.decline_tool_call(run_id=run_id, tool_call_id=waiting.tool_call_id, reason=reason, **options)
