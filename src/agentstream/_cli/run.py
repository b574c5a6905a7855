"""``agentstream run PROMPT``: stream an agent's answer to the terminal (or raw chunks as JSON lines)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any

from . import _app_agent, _hitl
from ._args import milliseconds
from ._errors import CLIError, UsageError
from ._trace import TraceRecorder

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
            "Run an agent on PROMPT and stream the answer: your own with --app MODULE:ATTR (a Mastra, "
            "an Agent, or a zero-argument function returning one; --agent ID picks one of a Mastra's "
            "agents), else the demo agent (tools: weather, research, book_table, choose_time). Reasoning is "
            "dimmed (marked [reasoning] when the output is not a colour terminal, or NO_COLOR is set), "
            "tool calls and results as they happen, usage at the end. --jsonl writes every "
            "chunk as a JSON line instead. Ctrl-C aborts the run at once (exit code 130). With --until-idle "
            "the stream goes on until the background tasks are done (the --app agent's, or the demo "
            "agent's in a Mastra with background tasks: 'research' runs in the background, "
            "its lifecycle (started/running/output/completed) is shown as it happens, and a "
            "continuation turn answers with the result). --thread ID runs the --app agent in a memory "
            "thread. --trace prints the run's OpenTelemetry span tree "
            "(model calls, tool calls, background tasks, with durations and token counts) on stderr. "
            "A tool call that needs approval (the demo's book_table) is asked about on a terminal "
            "('Approve book_table {...}? [y/N]'), a suspended tool (the demo's choose_time) asks for a JSON "
            "answer; elsewhere --approve, --decline or --resume answer. "
            "With --goal the answer is judged against the objective after each attempt (by the same "
            "model, or --judge) and the agent goes round again with the judge's feedback until the "
            "judge says done, or --max-runs attempts."
        ),
    )
    parser.add_argument("prompt", help="what to ask")
    _app_agent.add_arguments(parser)
    parser.add_argument(
        "--model",
        help="the demo agent's model, e.g. openai/gpt-4o-mini (default: $AGENTSTREAM_MODEL or demo)",
    )
    parser.add_argument(
        "--smooth",
        choices=("word", "line", "none"),
        default=None,
        help="smoothing (word; with --jsonl: none unless given, then the text chunks are re-cut)",
    )
    parser.add_argument(
        "--delay-ms", type=milliseconds, default=10.0, metavar="N", help="smoothing delay per piece (10)"
    )
    parser.add_argument("--jsonl", action="store_true", help="write raw chunks as JSON lines")
    parser.add_argument(
        "--until-idle",
        action="store_true",
        help="run with background tasks and stream until idle (continuation turns included)",
    )
    parser.add_argument(
        "--max-idle-ms",
        type=milliseconds,
        default=None,
        metavar="N",
        help="with --until-idle: close after N ms without background-task news (default 300000)",
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        help="trace the run with OpenTelemetry and print its span tree on stderr at the end "
        "(needs opentelemetry-sdk)",
    )
    _hitl.add_arguments(parser)
    parser.add_argument(
        "--goal", metavar="OBJECTIVE", help="judge the answers against OBJECTIVE until it is met"
    )
    parser.add_argument(
        "--judge", metavar="MODEL", help="with --goal: the judge model (default: the agent's model)"
    )
    parser.add_argument(
        "--max-runs",
        type=_positive_int,
        default=None,
        metavar="N",
        help="with --goal: judged attempts before the goal pauses (5)",
    )
    parser.set_defaults(func=run)
    return parser


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of attempts, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _check_goal_args(args: argparse.Namespace) -> None:
    if args.goal is None:
        if args.judge is not None or args.max_runs is not None:
            raise UsageError("--judge and --max-runs only apply with --goal OBJECTIVE")
        return
    if args.until_idle:
        raise UsageError("--goal and --until-idle cannot be combined: drop one of them")
    if not args.goal.strip():
        raise UsageError('--goal is empty: say what the answer must achieve, e.g. --goal "include a haiku"')
    if args.judge is not None and not args.judge.strip():
        raise UsageError("--judge is empty: give a model such as openai/gpt-4o-mini, or leave it out")
    if args.max_runs is None:
        args.max_runs = 5


async def _goal_agent(args: argparse.Namespace, model: str, options: dict[str, Any]) -> Any:
    """The demo agent with a goal on a fresh in-memory thread (``--goal``)."""
    from agentstream._demo import demo_agent
    from agentstream.memory import Memory
    from agentstream.storage import InMemoryStore

    agent = demo_agent(model, goal={"judge": args.judge or model}, memory=Memory(InMemoryStore()))
    await agent.set_objective(args.goal, thread_id="cli", resource_id="cli", max_runs=args.max_runs)
    options["memory"] = {"thread": "cli", "resource": "cli"}
    options["max_steps"] = 5 * args.max_runs  # room for tool steps within every attempt
    return agent


def _transform(args: argparse.Namespace) -> Any:
    # JSON lines are the raw chunks unless --smooth is asked for (then they are what a smoothed
    # consumer sees: the text re-cut into words or lines).
    smooth = args.smooth or ("none" if args.jsonl else "word")
    if smooth == "none":
        return None
    from agentstream.stream import smooth_stream_factory

    return smooth_stream_factory(delay_in_ms=args.delay_ms, chunking=smooth)


def _model(args: argparse.Namespace) -> str:
    model: str | None = args.model or os.environ.get("AGENTSTREAM_MODEL")
    if args.model is not None and not args.model.strip():
        raise UsageError("--model is empty: give a model such as openai/gpt-4o-mini, or leave it out")
    if not model:
        print(
            "note: using the offline demo model (set AGENTSTREAM_MODEL or --model for a real one)",
            file=sys.stderr,
        )
        return "demo"
    return model


def _check_model(agent: Any, args: argparse.Namespace) -> None:
    """Resolve the agent's model now, so a bad model string or a missing key is one line, not a run."""
    from agentstream.models import MissingAPIKeyError

    source = (
        f"agent {agent.id!r} of --app {args.app}"
        if args.app
        else "--model"
        if args.model
        else "AGENTSTREAM_MODEL"
    )
    try:
        agent.model  # noqa: B018 - resolving is the point
    except MissingAPIKeyError as exc:
        raise CLIError(str(exc)) from exc
    except ValueError as exc:
        raise UsageError(f"{source}: {exc}") from exc


def _check_judge(agent: Any, args: argparse.Namespace) -> None:
    from agentstream.models import MissingAPIKeyError, resolve_model

    try:
        resolve_model(args.judge)
    except MissingAPIKeyError as exc:
        raise CLIError(str(exc)) from exc
    except ValueError as exc:
        raise UsageError(f"--judge: {exc}") from exc


async def _main(args: argparse.Namespace) -> int:
    if not args.prompt.strip():
        raise UsageError(
            'the prompt is empty: say what to ask, e.g. agentstream run "Explain how rainbows form"'
        )
    _check_goal_args(args)
    _app_agent.check_arguments(args)
    recorder = TraceRecorder() if args.trace else None
    try:
        return await _run_agent(args)
    finally:
        if recorder is not None:
            recorder.print_tree()


async def _demo_agent(args: argparse.Namespace, options: dict[str, Any]) -> tuple[Any, Any]:
    """The demo agent for these flags, and the Mastra to close afterwards (or ``None``)."""
    from agentstream._demo import demo_agent, demo_mastra

    model = _model(args)
    if args.goal is not None:
        return await _goal_agent(args, model, options), None
    if args.until_idle:
        mastra = demo_mastra(model)
        return mastra.get_agent("demo"), mastra
    return demo_agent(model), None


async def _run_agent(args: argparse.Namespace) -> int:
    from agentstream._abort import AbortController

    controller = AbortController()
    options: dict[str, Any] = {"abort_signal": controller.signal, "experimental_transform": _transform(args)}
    if args.app is not None:
        agent, mastra = await _app_agent.app_agent(args, options)
    else:
        agent, mastra = await _demo_agent(args, options)
    if args.until_idle:
        options["until_idle"] = {"max_idle_ms": args.max_idle_ms} if args.max_idle_ms else True
    try:
        _check_model(agent, args)
        if args.judge:
            _check_judge(agent, args)
        output = agent.stream(args.prompt, **options)
        leg_options = {k: v for k, v in options.items() if k != "until_idle"}
        with _interrupts(controller, cancel_at_once=not args.jsonl) as interrupted:
            try:
                while True:
                    code, waiting = await _render(args, output)
                    if waiting is None:
                        return code
                    await output.aclose()
                    output = await _hitl.answer(agent, output.run_id, waiting, args, leg_options)
            except asyncio.CancelledError:
                if not interrupted():
                    raise
                _write_aborted()
                return 130
            finally:
                await output.aclose()
    finally:
        if mastra is not None:
            manager = mastra.background_task_manager
            if controller.signal.aborted and manager is not None:
                await manager.shutdown(grace_ms=0)  # Ctrl-C: don't wait for background tasks
            await mastra.aclose()


@contextlib.contextmanager
def _interrupts(controller: Any, *, cancel_at_once: bool) -> Iterator[Callable[[], bool]]:
    """Ctrl-C aborts the run; and stops the output at once (smoothing may hold seconds of text).

    With ``cancel_at_once`` false (JSON lines: unsmoothed, a consumer wants the ``abort`` chunk) the
    first Ctrl-C only aborts, and a second one stops the output.
    """
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    count = 0
    cancelled = False

    def on_sigint() -> None:
        nonlocal count, cancelled
        count += 1
        controller.abort()
        if (cancel_at_once or count > 1) and task is not None and not cancelled:
            cancelled = True
            task.cancel()

    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    except (NotImplementedError, RuntimeError):  # pragma: no cover - non-Unix: KeyboardInterrupt
        pass
    try:
        yield lambda: count > 0
    finally:
        if cancelled and task is not None:
            task.uncancel()  # the cancellation was ours, and handled
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)


def _write_aborted() -> None:
    out = sys.stdout
    out.write(_paint(_colour(out), RED, "\n[aborted]\n"))
    out.flush()


def _colour(out: Any) -> bool:
    """Colour only on a terminal, and never when ``NO_COLOR`` is set (https://no-color.org)."""
    return bool(out.isatty()) and not os.environ.get("NO_COLOR")


def _paint(colour: bool, code: str, text: str) -> str:
    return f"{code}{text}{RESET}" if colour else text


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _failure(output: Any, payload: Any) -> str:
    """The run's error in one line; a failed HTTP call names its URL (the user runs this locally)."""
    error = getattr(output, "error", None)
    if isinstance(payload, dict):
        message = str(payload.get("message") or payload.get("name") or payload)
    else:
        message = str(error if error is not None else payload)
    url = getattr(error, "url", None)
    if url and str(url) not in message:
        message = f"{message} ({url})"
    return f"the run failed: {message}"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


_BG_LINES: dict[str, tuple[str, str, Callable[[Any], str]]] = {
    "background-task-started": (YELLOW, "⧗", lambda p: "started in the background"),
    "background-task-running": (YELLOW, "⧗", lambda p: f"running {_short(p.args)}"),
    "background-task-completed": (GREEN, "✓", lambda p: f"completed: {_short(p.result)}"),
    "background-task-failed": (RED, "✗", lambda p: f"failed: {p.error.get('message', '')}"),
    "background-task-suspended": (YELLOW, "⏸", lambda p: f"suspended: {_short(p.suspend_payload)}"),
    "background-task-cancelled": (YELLOW, "⧗", lambda p: "cancelled"),
    "background-task-resumed": (YELLOW, "⧗", lambda p: "resumed"),
}


class _Terminal:
    """Chunks as a person reads them: text as it comes, everything else on lines of its own.

    Colour (reasoning dimmed, tools cyan/green, errors red) only on a colour terminal; otherwise
    each line of reasoning starts with ``[reasoning]`` so it stays apart from the answer.
    """

    def __init__(self, out: Any) -> None:
        self.out = out
        self.colour = _colour(out)
        self.at_line_start = True
        self.starts = 0
        self.aborted = False
        self.error: Any = None

    def write(self, text: str, code: str = "") -> None:
        if text:
            self.out.write(_paint(self.colour, code, text) if code else text)
            self.at_line_start = text.endswith("\n")

    def line(self, text: str, code: str = "") -> None:
        """``text`` on a line of its own."""
        if not self.at_line_start:
            self.write("\n")
        self.write(text + "\n", code)

    def reasoning(self, text: str) -> None:
        if self.colour:
            self.write(text, DIM)
            return
        for piece in text.splitlines(keepends=True):
            self.write(("[reasoning] " if self.at_line_start else "") + piece)

    def chunk(self, kind: str, payload: Any) -> None:
        if kind == "text-delta":
            self.write(payload.text)
        elif kind == "reasoning-delta":
            self.reasoning(payload.text)
        elif kind == "reasoning-end":
            if not self.at_line_start:
                self.write("\n")
        elif kind in _BG_LINES:
            code, mark, describe = _BG_LINES[kind]
            self.line(f"{mark} {self._tag(payload)} {describe(payload)}", code)
        elif kind == "background-task-output":
            inner = payload.payload
            value = inner.get("payload", {}).get("output", inner) if isinstance(inner, dict) else inner
            self.line(f"  {self._tag(payload)} … {_short(value)}", DIM)
        elif kind == "start":
            self.starts += 1
            if self.starts > 1:
                self.line("── continuation ──", DIM)
        elif kind == "tool-call":
            self.line(f"→ {payload.tool_name}({_json(payload.args)})", CYAN)
        elif kind == "tool-output":
            self.line(f"  … {_json(payload.output)}", DIM)
        elif kind == "tool-result":
            self.line(f"← {payload.tool_name}: {_json(payload.result)}", GREEN)
        elif kind == "tool-error":
            self.line(f"← {payload.tool_name} failed: {payload.error}", RED)
        elif kind == "tool-call-approval":
            self.line(f"? {payload.tool_name} needs approval", YELLOW)
        elif kind == "tool-call-suspended":
            self.line(f"⏸ {payload.tool_name} is waiting: {_short(payload.suspend_payload)}", YELLOW)
        elif kind == "tool-output-denied":
            self.line(f"← {payload.tool_name}: declined", RED)
        elif kind == "error":  # reported on stderr once the stream has ended
            self.error = payload.error
        elif kind == "abort":
            self.aborted = True
            self.line("[aborted]", RED)
        elif kind == "goal":
            self.goal(payload)

    def goal(self, payload: Any) -> None:
        """A judged attempt: announced when judging starts, then the verdict."""
        data = payload.extra
        attempt = f"{data.get('iteration')}/{data.get('maxRuns')}"
        if payload.pending:
            if "activity" not in data:
                self.line(f"⚖ judging attempt {attempt} …", DIM)
            return
        status, reason = data.get("status"), payload.reason or ""
        if payload.should_continue:
            self.line(f"✗ attempt {attempt} not done yet: {reason}", YELLOW)
            self.line("── next attempt ──", DIM)
        elif status == "done":
            self.line(f"✓ goal met on attempt {attempt}: {reason}", GREEN)
        elif data.get("waitingForUser"):
            self.line(f"… goal waiting for you after attempt {attempt}: {reason}", YELLOW)
        else:
            self.line(f"⏸ goal paused after attempt {attempt}: {reason}", RED)

    @staticmethod
    def _tag(payload: Any) -> str:
        return f"[bg {getattr(payload, 'tool_name', '')} {str(getattr(payload, 'task_id', ''))[:8]}]"


async def _render(args: argparse.Namespace, output: Any) -> tuple[int, _hitl.Waiting | None]:
    """Write one leg; the exit code, and what the run waits for when it ended suspended."""
    from agentstream.chunks import encode_chunk

    out = sys.stdout
    waiting: _hitl.Waiting | None = None
    if args.jsonl:
        error: Any = None
        aborted = False
        async for chunk in output.full_stream:
            out.buffer.write(encode_chunk(chunk) + b"\n")
            out.flush()
            kind = getattr(chunk, "type", "")
            aborted = aborted or kind == "abort"
            waiting = _hitl.waiting_from(chunk, waiting)
            if kind == "error":
                error = chunk.payload.error
        if error is not None:
            raise CLIError(_failure(output, error))
        return (130 if aborted else 0), (waiting if await output.finish_reason == "suspended" else None)
    terminal = _Terminal(out)
    async for chunk in output.full_stream:
        terminal.chunk(getattr(chunk, "type", ""), getattr(chunk, "payload", None))
        waiting = _hitl.waiting_from(chunk, waiting)
        out.flush()
    if terminal.aborted:
        return 130, None
    if output.tripwire is not None:  # a guardrail blocked the prompt, a part, a step or the result
        trip = output.tripwire
        by = f" by {trip.processor_id}" if trip.processor_id else ""
        terminal.line(f"[blocked{by}] {trip.reason}", RED)
        out.flush()
        return 0, None
    if terminal.error is not None:
        if not terminal.at_line_start:
            out.write("\n")
            out.flush()
        raise CLIError(_failure(output, terminal.error))
    if waiting is not None and await output.finish_reason == "suspended":
        return 0, waiting
    usage = await output.usage
    out.write("\n")
    out.flush()
    print(
        f"[usage] input {usage.input_tokens or 0} · output {usage.output_tokens or 0} · "
        f"total {usage.total_tokens or 0} tokens",
        file=sys.stderr,
    )
    return 0, None


def run(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_main(args))
    except KeyboardInterrupt:
        return 130
