"""Errors an MCP tool call raises, shaped as ``@mastra/mcp`` reports them in a ``tool-error`` chunk."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MCPConnectionError", "MCPError", "MCPTimeoutError", "MCPToolError"]


class MCPError(Exception):
    """Base of the errors `agentstream.mcp` raises (``name`` is ``"Error"``, as JavaScript shows it)."""

    name = "Error"

    def __init__(self, message: str, *, server_name: str, tool_name: str | None = None) -> None:
        super().__init__(message)
        self.server_name = server_name
        self.tool_name = tool_name


class MCPConnectionError(MCPError):
    """The server could not be reached, or the session died and one reconnect did not bring it back."""


class MCPTimeoutError(MCPError):
    """The server did not answer a request within the server's ``timeout``."""


class MCPToolError(MCPError):
    """A tool call the server answered with ``isError: true`` (or that failed on the way).

    Serialised (``details`` is merged into the chunk's error dict) as Mastra's ``MastraError``
    ``TOOL_EXECUTION_FAILED`` whose cause is ``MCP_CLIENT_TOOL_EXECUTION_FAILED``; ``str()`` is the
    server's text, which is what the model gets back (``error-text``).
    """

    def __init__(self, message: str, *, server_name: str, tool_name: str, result: Any = None) -> None:
        super().__init__(message, server_name=server_name, tool_name=tool_name)
        self.result = result

    @property
    def details(self) -> dict[str, Any]:
        """The error as Mastra's tool wrapper reports it (``TOOL_EXECUTION_FAILED`` with the MCP cause)."""
        cause = {
            "message": str(self),
            "domain": "MCP",
            "category": "THIRD_PARTY",
            "code": "MCP_CLIENT_TOOL_EXECUTION_FAILED",
            "details": {"toolName": self.tool_name, "serverName": self.server_name},
        }
        return {
            "id": "TOOL_EXECUTION_FAILED",
            "domain": "TOOL",
            "category": "USER",
            "cause": cause,
            "details": {"errorMessage": json.dumps(cause, separators=(",", ":"), ensure_ascii=False)},
        }
