"""``agentstream worker``: a durable worker process running background tasks dispatched by servers."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from typing import Any

from ._args import milliseconds_or_none
from ._errors import CLIError, UsageError
from .serve import _stream_store as _serve_stream_store

__all__ = ["add_parser", "load_tools", "run"]

_TOOLS_HELP = (
    "module:attr naming the tools to run: a dict of name → Tool or function(args, context), a list of "
    "Tools, an Agent or a Mastra (their agents' tools), or a zero-argument function returning one"
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "worker",
        help="run background tasks and chat turns dispatched by servers, durably (DBOS)",
        description=(
            "Run background tasks that `agentstream serve` processes (or any DurableBackground) enqueue "
            "on the shared database, and with --app the chat answers of `agentstream serve "
            "--durable-db`, written to the shared --stream-store. Limits hold across all workers; a "
            "worker that dies has its work finished by another, after its last completed step. "
            "Stop with Ctrl-C or SIGTERM."
        ),
    )
    parser.add_argument("tools", metavar="TOOLS", nargs="?", help=_TOOLS_HELP)
    parser.add_argument(
        "--app",
        metavar="MODULE:ATTR",
        help="a Mastra (or a zero-argument factory of one) whose agents answer chat turns and whose workflows run the workflow runs servers dispatch",
    )
    parser.add_argument(
        "--stream-store",
        default=os.environ.get("AGENTSTREAM_STREAM_STORE") or None,
        metavar="redis://HOST:PORT/DB",
        help="the Redis the servers follow answers in (with --app; default: $AGENTSTREAM_STREAM_STORE)",
    )
    parser.add_argument(
        "--chat-concurrency", type=_positive_int, metavar="N", help="chat turns running at once, all workers"
    )
    parser.add_argument(
        "--chat-worker-concurrency",
        type=_positive_int,
        metavar="N",
        help="chat turns at once in this process",
    )
    parser.add_argument("--no-smooth", action="store_true", help="turn off smoothing of chat answers")
    parser.add_argument(
        "--delay-ms",
        type=milliseconds_or_none,
        default=10.0,
        metavar="N|none",
        help="smoothing delay per piece of a chat answer (10)",
    )
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
        default=1.0,
        metavar="S",
        help=(
            "how often the background-task queue is polled (default 1; chat turns and workflow runs "
            "wake the worker at once, unless --chat-concurrency routes chat turns through a queue too)"
        ),
    )
    parser.add_argument(
        "--db-pool-size",
        type=_positive_int,
        default=8,
        metavar="N",
        help="connections in this worker's PostgreSQL pool (default 8; docs/serving.md's connection budget)",
    )
    parser.add_argument(
        "--executor-id",
        default=os.environ.get("DBOS__VMID") or None,
        metavar="ID",
        help=(
            "this worker's DBOS executor id (default: $DBOS__VMID, else unique to the process); a worker "
            "restarted with the same id recovers its own unfinished work when it starts"
        ),
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


def _chat(args: argparse.Namespace) -> tuple[Any, Any, dict[str, Any]]:
    """``--app`` / ``--stream-store``: the Mastra, the shared store and the chat settings (or Nones)."""
    if args.app is None:
        return None, None, {}
    if args.stream_store is None:
        raise UsageError("--app needs --stream-store redis://HOST:PORT/DB, the Redis the servers follow")
    if not args.stream_store.startswith(("redis://", "rediss://", "unix://")):
        raise UsageError(
            f"--stream-store: expected a redis://host:port/db URL shared with the servers, got {args.stream_store!r}"
        )
    from agentstream._app import AppLoadError, load_app
    from agentstream._mastra import Mastra
    from agentstream.ai_sdk import smooth_stream

    try:
        mastra = load_app(args.app)
    except AppLoadError as exc:
        raise (UsageError if exc.usage else CLIError)(str(exc)) from exc
    if not isinstance(mastra, Mastra):
        raise UsageError(f"--app {args.app} is a {type(mastra).__name__}; a worker needs a Mastra")
    store = _serve_stream_store(args.stream_store)
    transform = None if args.no_smooth else smooth_stream(delay_in_ms=args.delay_ms)
    return mastra, store, {"experimental_transform": transform} if transform else {}


def run(args: argparse.Namespace) -> int:
    url = args.database_url or os.environ.get("AGENTSTREAM_DURABLE_DB")
    if args.tools is None and args.app is None:
        raise UsageError("nothing to run: name the TOOLS, or a Mastra with --app for chat turns (or both)")
    if not url:
        raise UsageError("no database: pass --database-url postgresql://… (or set $AGENTSTREAM_DURABLE_DB)")
    tools = load_tools(args.tools) if args.tools is not None else {}
    if args.tools is not None and not tools:
        raise UsageError(f"{args.tools} has no tools; name a module:attr with at least one")
    # an app that reads $AGENTSTREAM_DURABLE_DB (examples/durable_demo.py) gets --database-url too
    os.environ.setdefault("AGENTSTREAM_DURABLE_DB", url)
    mastra, store, chat_options = _chat(args)
    _warn_untaken_tasks(mastra, tools, args.app)
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
        pool_size=args.db_pool_size,
        **({"executor_id": args.executor_id} if args.executor_id else {}),
        mastra=mastra,
        stream_store=store,
        chat_options=chat_options,
        chat_concurrency=args.chat_concurrency,
        chat_worker_concurrency=args.chat_worker_concurrency,
    )
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    try:
        worker.launch()
    except Exception as exc:
        raise CLIError(f"cannot start on {_redacted(url)}: {type(exc).__name__}: {exc}") from exc
    running = sorted(tools) + ([f"chat turns and workflow runs of {args.app}"] if mastra is not None else [])
    print(
        f"agentstream worker {worker.executor_id}: running {', '.join(running)}",
        file=sys.stderr,
        flush=True,
    )
    stop.wait()
    worker.shutdown()
    return 0


def _warn_untaken_tasks(mastra: Any, tools: dict[str, Any], app: str | None) -> None:
    """Say so when the app's background tools will not run here: without TOOLS a worker takes no
    background task, and a task no worker takes waits (a chat until-idle on it never ends)."""
    if mastra is None or tools:
        return
    background = sorted(
        {
            name
            for agent in mastra.get_agents().values()
            for name, tool in agent.tools.items()
            if getattr(getattr(tool, "background", None), "enabled", False)
        }
    )
    if background:
        print(
            f"agentstream worker: warning: {app} has background tools ({', '.join(background)}) but no "
            "TOOLS were given, so this worker takes no background tasks; they wait for a worker started "
            "with them (e.g. agentstream worker MODULE:tools --app ...)",
            file=sys.stderr,
            flush=True,
        )


def _redacted(url: str) -> str:
    """The URL without its password, which must not reach a log."""
    scheme, sep, rest = url.partition("://")
    creds, at, host = rest.rpartition("@")
    if not at or ":" not in creds:
        return url
    return f"{scheme}{sep}{creds.split(':', 1)[0]}:***@{host}"
