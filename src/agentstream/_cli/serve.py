"""``agentstream serve``: the chat page and ``useChat`` endpoints over uvicorn."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any


def add_parser(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "serve",
        help="serve agents to AI SDK useChat clients, with a chat page at /",
        description="Serve POST /api/chat and /api/chat/{agent_id} (AI SDK UI message stream over SSE) and a chat page.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--app",
        metavar="MODULE:ATTR",
        help="a Mastra instance (or factory) to serve; default: the demo agent",
    )
    parser.add_argument("--agent", metavar="ID", help="agent answering POST /api/chat (default: the first)")
    parser.add_argument("--no-smooth", action="store_true", help="turn off smoothing (word chunking)")
    parser.add_argument("--delay-ms", default="10", metavar="N|none", help="smoothing delay per piece (10)")
    parser.add_argument(
        "--heartbeat-ms", type=float, default=15_000, help="SSE heartbeat interval, 0 disables"
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
    parser.set_defaults(func=run)


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
    except ImportError:
        print("agentstream serve needs the server extra: pip install 'agentstream[server]'", file=sys.stderr)
        return 2
    from agentstream._app import create_app, demo_mastra, load_mastra

    delay = None if args.delay_ms == "none" else float(args.delay_ms)
    try:
        mastra = load_mastra(args.app) if args.app else demo_mastra()
        app = create_app(
            mastra,
            default_agent=args.agent,
            smooth=not args.no_smooth,
            delay_in_ms=delay,
            heartbeat_ms=args.heartbeat_ms,
            guard=_guard(args),
        )
    except (ImportError, AttributeError, TypeError, ValueError) as exc:
        print(f"agentstream serve: {exc}", file=sys.stderr)
        return 2
    if not args.app:
        print(
            "agentstream serve: serving the demo agent (offline demo model unless AGENTSTREAM_MODEL is set)",
            file=sys.stderr,
        )
    fragment = f"#token={args.token}" if args.token else ""
    print(f"agentstream serve: http://{args.host}:{args.port}/{fragment}", file=sys.stderr)
    # Open streams get a short grace on SIGTERM, then are cancelled (uvicorn's default waits forever).
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", timeout_graceful_shutdown=2)
    return 0
