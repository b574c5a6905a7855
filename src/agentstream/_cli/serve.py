"""``agentstream serve``: the chat page and ``useChat`` endpoints over uvicorn."""

from __future__ import annotations

import argparse
import errno
import os
import socket
import sys
from typing import Any

from ._args import milliseconds, milliseconds_or_none, positive_count, positive_seconds
from ._errors import CLIError, UsageError, missing_extra

__all__ = ["add_parser", "run"]


def _port(value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {value!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port between 0 and 65535, got {value!r}")
    return port


def add_parser(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "serve",
        help="serve agents to AI SDK useChat clients, with a chat page at /",
        description=(
            "Serve POST /api/chat and /api/chat/{agent_id} (AI SDK UI message stream over SSE) and a "
            "chat page. Every agent's model is resolved before the server starts."
        ),
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=_port, default=8000, help="0 picks a free port (8000)")
    parser.add_argument(
        "--app",
        metavar="MODULE:ATTR",
        help=(
            "what to serve: a Mastra, an Agent, an ASGI app, or a zero-argument factory of one; the "
            "module is looked up in the current directory first (default: the demo agent)"
        ),
    )
    parser.add_argument("--agent", metavar="ID", help="agent answering POST /api/chat (default: the first)")
    parser.add_argument("--no-smooth", action="store_true", help="turn off smoothing (word chunking)")
    parser.add_argument(
        "--delay-ms",
        type=milliseconds_or_none,
        default=10.0,
        metavar="N|none",
        help="smoothing delay per piece (10)",
    )
    parser.add_argument(
        "--heartbeat-ms",
        type=milliseconds,
        default=15_000,
        metavar="N",
        help="SSE heartbeat interval, 0 disables (15000)",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("AGENTSTREAM_TOKEN") or None,
        help="require 'Authorization: Bearer TOKEN' on the API (default: $AGENTSTREAM_TOKEN; off)",
    )
    parser.add_argument(
        "--allow-host", action="append", default=None, metavar="HOST", help="serve this Host too"
    )
    parser.add_argument(
        "--allow-origin", action="append", default=[], metavar="ORIGIN", help="accept (with CORS) this origin"
    )
    parser.add_argument(
        "--stream-store",
        default=os.environ.get("AGENTSTREAM_STREAM_STORE") or "memory",
        metavar="memory|none|redis://HOST:PORT/DB",
        help=(
            "where running answers are kept so a reloaded page resumes them: this process (memory), "
            "Redis shared by several server processes, or none (default: $AGENTSTREAM_STREAM_STORE or memory)"
        ),
    )
    parser.add_argument(
        "--durable-db",
        metavar="URL",
        help=(
            "run chat answers and workflow runs on `agentstream worker --app ...` processes sharing this database "
            "(postgresql://… or sqlite:///file); needs --stream-store redis://… (default: off)"
        ),
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        help="trace the agents with OpenTelemetry and print each run's span tree on stderr as it ends",
    )
    parser.add_argument(
        "--no-record-traces",
        action="store_true",
        help=(
            "do not keep the runs' traces (prompts and answers included) in the app's storage for "
            "Studio's observability pages (default: kept while serving)"
        ),
    )
    _add_limits(parser)
    parser.set_defaults(func=run)


def _add_limits(parser: argparse.ArgumentParser) -> None:
    """The connection limits (``ConnectionLimits``) and body caps (``RequestGuard``) as flags."""
    group = parser.add_argument_group('connection limits (docs/serving.md, "Connection limits")')
    seconds: list[tuple[str, str, str]] = [
        ("--header-timeout", "header_timeout_s", "the request head must be complete within S seconds (10)"),
        ("--body-timeout", "body_timeout_s", "the whole request body within S seconds of its head (30)"),
        ("--keep-alive", "keep_alive_s", "close an idle keep-alive connection after S seconds (20)"),
        ("--graceful-shutdown", "graceful_shutdown_s", "on SIGTERM, open streams get S seconds (2)"),
    ]
    for flag, dest, text in seconds:
        group.add_argument(flag, dest=dest, type=positive_seconds, default=None, metavar="S", help=text)
    counts: list[tuple[str, str, str]] = [
        ("--max-connections", "max_connections", "connections open at once (the open-file limit less 128)"),
        ("--max-header-bytes", "max_header_bytes", "bytes of an incomplete request head buffered (16384)"),
        ("--max-body-bytes", "max_body_bytes", "largest request body, a 413 beyond (1048576)"),
        (
            "--max-buffered-bytes",
            "max_buffered_bytes",
            "request-body bytes read at once in total, a 503 beyond (16777216)",
        ),
    ]
    for flag, dest, text in counts:
        group.add_argument(flag, dest=dest, type=positive_count, default=None, metavar="N", help=text)


_LIMIT_FIELDS = ("header_timeout_s", "body_timeout_s", "keep_alive_s", "graceful_shutdown_s")
_COUNT_FIELDS = ("max_connections", "max_header_bytes")


def _limits(args: argparse.Namespace) -> Any:
    """The `ConnectionLimits` of the flags given (the defaults for the others)."""
    from agentstream.server import ConnectionLimits, default_max_connections

    ceiling = default_max_connections()
    if args.max_connections is not None and args.max_connections > ceiling:
        raise UsageError(
            f"--max-connections {args.max_connections} is above what the open-file limit allows ({ceiling}: "
            "ulimit -n less 128 for the server's own files); raise ulimit -n or lower --max-connections"
        )
    given = {name: getattr(args, name) for name in (*_LIMIT_FIELDS, *_COUNT_FIELDS)}
    try:
        return ConnectionLimits(**{name: value for name, value in given.items() if value is not None})
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def _body_caps(args: argparse.Namespace) -> dict[str, int]:
    """``--max-body-bytes`` / ``--max-buffered-bytes`` for `RequestGuard`, checked together."""
    from agentstream.server import RequestGuard

    body = args.max_body_bytes or RequestGuard.max_body_bytes
    buffered = args.max_buffered_bytes or RequestGuard.max_buffered_bytes
    if buffered < body:
        raise UsageError(
            f"--max-buffered-bytes {buffered} is below the largest body allowed ({body}, --max-body-bytes): "
            "no full-size body could ever be read"
        )
    return {"max_body_bytes": body, "max_buffered_bytes": buffered}


def _runner(args: argparse.Namespace) -> Any:
    """``--durable-db``: a `DurableChat` (checked against ``--stream-store`` first), or ``None``."""
    if args.durable_db is None:
        return None
    if not args.stream_store.startswith(("redis://", "rediss://", "unix://")):
        raise UsageError(
            f"--durable-db needs --stream-store redis://HOST:PORT/DB shared with the workers, got "
            f"--stream-store {args.stream_store}"
        )
    try:
        from agentstream.durable import DurableChat
    except ImportError as exc:
        raise missing_extra(exc, "--durable-db") or CLIError(str(exc)) from exc
    try:
        return DurableChat(args.durable_db)
    except Exception as exc:
        from .worker import _redacted

        raise CLIError(
            f"--durable-db: cannot use {_redacted(args.durable_db)}: {type(exc).__name__}: {exc}"
        ) from exc


def _workflow_runner(url: str) -> Any:
    """``--durable-db``: workflow runs go to the workers too (the URL was checked by `_runner`)."""
    from agentstream.durable import DurableWorkflows

    return DurableWorkflows(url)


def _app(args: argparse.Namespace) -> Any:
    """The ASGI app to serve, every agent's model resolved (a missing key stops here)."""
    from agentstream._app import AppLoadError, check_models, create_app, demo_mastra, load_app
    from agentstream._mastra import Mastra

    try:
        target = load_app(args.app) if args.app else demo_mastra()
        if not isinstance(target, Mastra):
            if args.durable_db is not None:
                raise UsageError(f"--durable-db needs --app to name a Mastra; {args.app} is an ASGI app")
            return target  # an ASGI app of the user's: served as it is
        check_models(target)
        if args.agent is not None and args.agent not in target.get_agents():
            known = ", ".join(sorted(target.get_agents())) or "none"
            raise UsageError(f"--agent {args.agent!r} is not registered (agents: {known})")
        runner = _runner(args)
        workflow_runner = None if runner is None else _workflow_runner(args.durable_db)
        return create_app(
            target,
            default_agent=args.agent,
            smooth=not args.no_smooth,
            delay_in_ms=args.delay_ms,
            heartbeat_ms=args.heartbeat_ms,
            guard=_guard(args),
            stream_store=_stream_store(args.stream_store),
            runner=runner,
            workflow_runner=workflow_runner,
            record_traces=not args.no_record_traces,
        )
    except AppLoadError as exc:
        raise (UsageError if exc.usage else CLIError)(str(exc)) from exc
    except ValueError as exc:  # create_app: e.g. a Mastra without agents
        raise UsageError(str(exc)) from exc


def _stream_store(url: str) -> Any:
    """``--stream-store``: the store, Redis checked to answer now (one clear line if not)."""
    from agentstream.resumable import stream_store_from_url

    if url == "none":
        return None
    try:
        store = stream_store_from_url(url)
    except ValueError as exc:
        raise UsageError(f"--stream-store: {exc} (or 'none')") from exc
    except ImportError as exc:
        raise missing_extra(exc, "--stream-store redis://") or CLIError(str(exc)) from exc
    if url != "memory":
        import redis

        try:
            redis.Redis.from_url(url, socket_connect_timeout=5).ping()
        except redis.RedisError as exc:
            raise CLIError(f"--stream-store: cannot reach Redis at {url} ({exc}); is it running?") from exc
    return store


def _listen(host: str, port: int) -> socket.socket:
    """Bind now, so a busy port is one clear line (and ``--port 0`` knows its port before serving)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise UsageError(f"--host {host!r} cannot be resolved ({exc.strerror})") from exc
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        # Listening now (not when uvicorn starts) queues a client that connects as soon as the URL
        # is printed, instead of refusing it while the app is still being loaded.
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise CLIError(
                f"port {port} on {host} is already in use: stop what is using it, or pick another with --port"
            ) from exc
        raise CLIError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.set_inheritable(True)
    return sock


def _guard(args: argparse.Namespace) -> Any:
    from agentstream.server import RequestGuard, bearer_token_auth

    if args.token is None and not _is_loopback(args.host):
        print(
            f"agentstream serve: warning: {args.host} is not a loopback address and there is no --token "
            "(or AGENTSTREAM_TOKEN): anyone who can reach it can run the agents",
            file=sys.stderr,
        )
    return RequestGuard(
        allowed_hosts=args.allow_host,
        allowed_origins=args.allow_origin,
        cors=bool(args.allow_origin),
        auth=bearer_token_auth(args.token) if args.token else None,
        **_body_caps(args),
    )


def _is_loopback(host: str) -> bool:
    import ipaddress

    try:
        return host == "localhost" or ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn
    except ImportError as exc:
        raise missing_extra(exc, "serving") or exc from exc
    if args.trace:
        from ._trace import trace_each_run

        trace_each_run(include_content=not args.no_record_traces)  # Studio shows the kept spans' content
    limits = _limits(args)
    app = _app(args)
    sock = _listen(args.host, args.port)
    host, port = sock.getsockname()[:2]
    if not args.app:
        print(
            "agentstream serve: serving the demo agent and the demo workflow publish-article "
            "(offline demo model unless AGENTSTREAM_MODEL is set)",
            file=sys.stderr,
        )
    shown = f"[{host}]" if ":" in host else host
    fragment = f"#token={args.token}" if args.token else ""
    print(f"agentstream serve: http://{shown}:{port}/{fragment}", file=sys.stderr, flush=True)
    _log_to_stderr()
    from agentstream.server import serving_config

    # Head/body deadlines, a connection cap, a 2 s grace on SIGTERM (docs/serving.md, "Limits").
    server = uvicorn.Server(serving_config(app, limits, log_level="warning"))
    with sock:
        server.run(sockets=[sock])
    return 0


def _log_to_stderr() -> None:
    """Run and tool errors (with their run ids and upstream details, redacted) are the server log."""
    import logging

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s:  %(name)s: %(message)s"))
    logger = logging.getLogger("agentstream")
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
