"""What a tool sees of the MCP request it serves (Mastra's ``MCPToolExecutionContext``).

Only tools called through an `agentstream.mcp.MCPServer` get one (``context.mcp``); elsewhere
``context.mcp`` is ``None``. Parameters and results are MCP's JSON (camelCase), as Mastra's tools
pass and receive them, so a tool ported from TypeScript keeps its payloads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol

__all__ = ["LogLevel", "MCPElicitation", "MCPToolExecutionContext"]

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


class MCPElicitation(Protocol):
    """``context.mcp.elicitation``: ask the calling client's user for input."""

    async def send_request(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """``elicitation/create`` with ``{"message", "requestedSchema"}``; the client's
        ``{"action": "accept" | "decline" | "cancel", "content"?: {...}}``."""
        ...


class MCPToolExecutionContext(Protocol):
    """``context.mcp`` inside a tool an MCP client called."""

    @property
    def elicitation(self) -> MCPElicitation:
        """Elicitation requests to the client (raises if the client did not declare the capability)."""
        ...

    @property
    def extra(self) -> Mapping[str, Any]:
        """The request's ``requestId``, ``sessionId`` (HTTP) and ``authInfo`` when known."""
        ...

    async def log(self, level: LogLevel, data: Any, logger: str | None = None) -> None:
        """A ``notifications/message`` to the client, dropped below the level it set."""
        ...

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """A ``notifications/progress`` for this call (nothing if the client sent no progress token)."""
        ...

    async def request_sampling(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """``sampling/createMessage`` with ``{"messages", "maxTokens", ...}``: the client's model
        answers (``{"role", "content", "model", "stopReason"}``)."""
        ...
