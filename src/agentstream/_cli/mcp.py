"""``agentstream mcp serve``: serve an `MCPServer` (or a Mastra's / an Agent's tools) over stdio or HTTP."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from ._errors import CLIError, UsageError

__all__ = ["add_parser", "load_server", "run"]

_APP_HELP = (
    "module:attr naming an MCPServer, a Mastra (its agents as ask_<key>, its workflows as run_<key>), "
    "an Agent, or a zero-argument function returning one"
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "mcp",
        help="serve agents, tools and workflows over MCP",
        description="Model Context Protocol commands.",
    )
    commands = parser.add_subparsers(dest="mcp_command", metavar="COMMAND", required=True)
    serve = commands.add_parser(
        "serve",
        help="serve an MCPServer over stdio (default) or streamable HTTP",
        description=(
            "Serve an MCPServer over stdio (for a client that launches this command) or, with --http, "
            "over streamable HTTP at http://HOST:PORT/mcp behind the default RequestGuard. Needs the "
            "mcp extra (pip install 'agentstream[mcp]'). Stop with Ctrl-C or by closing stdin."
        ),
    )
    serve.add_argument("--app", metavar="MODULE:ATTR", required=True, help=_APP_HELP)
    serve.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    serve.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8808, help="HTTP port (default 8808)")
    serve.add_argument("--name", default="agentstream", help="server name when --app is not an MCPServer")
    serve.set_defaults(func=run)
    return parser


def load_server(spec: str, name: str = "agentstream") -> Any:
    """``module:attr`` → an `MCPServer` (a Mastra or an Agent is wrapped in one)."""
    from .._app import AppLoadError, _attribute, _zero_argument_callable
    from .._mastra import Mastra
    from ..agent import Agent

    try:
        from ..mcp import MCPServer
    except ImportError as exc:  # the mcp extra is missing
        raise UsageError(
            f"agentstream mcp needs the mcp extra: pip install 'agentstream[mcp]' ({exc})"
        ) from exc
    try:
        value = _attribute(spec)
    except AppLoadError as exc:
        raise (UsageError if exc.usage else CLIError)(str(exc)) from exc
    if _zero_argument_callable(value):
        try:
            value = value()
        except Exception as exc:
            raise CLIError(f"calling {spec}() failed: {type(exc).__name__}: {exc}") from exc
    if isinstance(value, MCPServer):
        return value
    if isinstance(value, Agent):
        return MCPServer(name=name, version="1.0.0", agents={value.id: value})
    if isinstance(value, Mastra):
        return MCPServer(
            name=name, version="1.0.0", agents=value.get_agents(), workflows=value.get_workflows()
        )
    raise UsageError(
        f"{spec} is a {type(value).__name__}; expected an MCPServer, a Mastra, an Agent, "
        "or a zero-argument function returning one"
    )


def run(args: argparse.Namespace) -> int:
    server = load_server(args.app, args.name)
    if not args.http:
        asyncio.run(server.run_stdio())
        return 0
    import uvicorn

    uvicorn.run(server.http_app(), host=args.host, port=args.port, log_level="warning", lifespan="on")
    return 0
