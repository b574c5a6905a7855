"""``agentstream worker``: a durable worker process running background tasks dispatched by servers."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from typing import Any

from ._errors import CLIError, UsageError

__all__ = ["add_parser", "load_tools", "run"]

_TOOLS_HELP = (
    "module:attr naming the tools to run: a dict of name → Tool or function(args, context), a list of "
    "Tools, an Agent or a Mastra (their agents' tools), or a zero-argument function returning one"
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "worker",
        help="run background tasks dispatched by servers, durably (DBOS)",
        description=(
            "Run background tasks that `agentstream serve` processes (or any DurableBackground) enqueue "
            "on the shared database. Limits hold across all workers; a worker that dies has its "
            "tasks finished by another, after their last completed step. Stop with Ctrl-C or SIGTERM."
        ),
    )
    parser.add_argument("tools", metavar="TOOLS", help=_TOOLS_HELP)
    parser.add_argument(
        "--database-url",
        metavar="URL",
        help="postgresql://… or sqlite:///file (default: $AGENTSTREAM_DURABLE_DB)",
    )
    parser.add_argument(
        "--global-concurrency", type=_positive_int, metavar="N", help="tasks running at once, all workers"
    )
    parser.add_argument(
        "--per-agent-concurrency", type=_positive_int, metavar="N", help="tasks of one agent at once"
    )
    parser.add_argument(
        "--worker-concurrency", type=_positive_int, metavar="N", help="tasks at once in this process"
    )
    parser.add_argument(
        "--lease-sec",
        type=_positive_float,
        default=30.0,
        metavar="S",
        help="a worker silent this long is taken over (default 30)",
    )
    parser.add_argument(
        "--poll-sec",
        type=_positive_float,
        default=0.1,
        metavar="S",
        help="how often the queue is polled for new tasks (default 0.1)",
    )
    parser.set_defaults(func=run)
    return parser


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def load_tools(spec: str) -> dict[str, Any]:
    """``module:attr`` → ``{tool name: Tool or executor}``; a wrong spec raises `UsageError`."""
    from agentstream import Mastra
    from agentstream._app import AppLoadError, _attribute, _zero_argument_callable
    from agentstream.agent import Agent
    from agentstream.tools import Tool

    try:
        value = _attribute(spec)
    except AppLoadError as exc:
        raise (UsageError if exc.usage else CLIError)(str(exc)) from exc
    if _zero_argument_callable(value) and not isinstance(value, (dict, list, Tool)):
        try:
            value = value()
        except Exception as exc:
            raise CLIError(f"calling {spec}() failed: {type(exc).__name__}: {exc}") from exc
    if isinstance(value, Mastra):
        return {name: t for agent in value.get_agents().values() for name, t in agent.tools.items()}
    if isinstance(value, Agent):
        return dict(value.tools)
    if isinstance(value, list) and all(isinstance(t, Tool) for t in value):
        return {t.id: t for t in value}
    if isinstance(value, dict):
        for key, entry in value.items():
            if not isinstance(key, str) or not (isinstance(entry, Tool) or callable(entry)):
                raise UsageError(
                    f"{spec}[{key!r}] is a {type(entry).__name__}; expected a Tool or a function(args, context)"
                )
        return dict(value)
    raise UsageError(
        f"{spec} is a {type(value).__name__}; expected a dict of name → Tool or function, a list of "
        "Tools, an Agent, a Mastra, or a zero-argument function returning one"
    )


def run(args: argparse.Namespace) -> int:
    url = args.database_url or os.environ.get("AGENTSTREAM_DURABLE_DB")
    if not url:
        raise UsageError("no database: pass --database-url postgresql://… (or set $AGENTSTREAM_DURABLE_DB)")
    tools = load_tools(args.tools)
    if not tools:
        raise UsageError(f"{args.tools} has no tools; a worker needs at least one")
    from agentstream.durable import DurableWorker

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    worker = DurableWorker(
        url,
        tools,
        global_concurrency=args.global_concurrency,
        per_agent_concurrency=args.per_agent_concurrency,
        worker_concurrency=args.worker_concurrency,
        polling_interval_sec=args.poll_sec,
        lease_sec=args.lease_sec,
    )
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    try:
        worker.launch()
    except Exception as exc:
        raise CLIError(f"cannot start on {_redacted(url)}: {type(exc).__name__}: {exc}") from exc
    print(
        f"agentstream worker {worker.executor_id}: running {', '.join(sorted(tools))}",
        file=sys.stderr,
        flush=True,
    )
    stop.wait()
    worker.shutdown()
    return 0


def _redacted(url: str) -> str:
    """The URL without its password, which must not reach a log."""
    scheme, sep, rest = url.partition("://")
    creds, at, host = rest.rpartition("@")
    if not at or ":" not in creds:
        return url
    return f"{scheme}{sep}{creds.split(':', 1)[0]}:***@{host}"
