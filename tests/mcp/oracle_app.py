"""``agentstream mcp serve --app tests.mcp.oracle_app:server``: the recorded oracle server."""

from __future__ import annotations

from tests.conformance import CONFORMANCE, load

from .oracle_server import build

server = build(load(CONFORMANCE / "mcp" / "server-sdk-client.json"))
