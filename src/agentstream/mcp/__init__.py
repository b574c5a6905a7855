"""MCP (Model Context Protocol): use any MCP server's tools in agents (`MCPClient`), and serve
agentstream's tools, agents and workflows over MCP (`MCPServer`).

Needs the ``mcp`` extra: ``pip install 'agentstream[mcp]'``.
"""

from __future__ import annotations

from ._client import MCPClient
from ._config import HttpServer, StdioServer
from ._errors import MCPConnectionError, MCPError, MCPTimeoutError, MCPToolError
from ._http import MCPHttpApp
from ._oauth import AuthorizationCodeResult, FileTokenStorage, MemoryTokenStorage, TokenStorage, oauth_client
from ._server import MCPServer
from ._server_resources import MCPPrompt, MCPResource, MCPResourceTemplate
from ._subscriptions import MCPSubscriptionError
from ._tools import MCPTool

__all__ = [
    "AuthorizationCodeResult",
    "FileTokenStorage",
    "HttpServer",
    "MCPClient",
    "MCPConnectionError",
    "MCPError",
    "MCPHttpApp",
    "MCPPrompt",
    "MCPResource",
    "MCPResourceTemplate",
    "MCPServer",
    "MCPSubscriptionError",
    "MCPTimeoutError",
    "MCPTool",
    "MCPToolError",
    "MemoryTokenStorage",
    "StdioServer",
    "TokenStorage",
    "oauth_client",
]
