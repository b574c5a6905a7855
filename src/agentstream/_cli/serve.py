"""``agentstream serve``: the chat page and ``useChat`` endpoints over uvicorn."""

from __future__ import annotations

import argparse
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
    parser.set_defaults(func=run)


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
        )
    except (ImportError, AttributeError, TypeError, ValueError) as exc:
        print(f"agentstream serve: {exc}", file=sys.stderr)
        return 2
    if not args.app:
        print(
            "agentstream serve: serving the demo agent (offline demo model unless AGENTSTREAM_MODEL is set)",
            file=sys.stderr,
        )
    print(f"agentstream serve: http://{args.host}:{args.port}/", file=sys.stderr)
    _log_to_stderr()
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


def _log_to_stderr() -> None:
    """Run and tool errors (with their run ids and upstream details, redacted) are the server log."""
    import logging

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s:  %(name)s: %(message)s"))
    logger = logging.getLogger("agentstream")
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
