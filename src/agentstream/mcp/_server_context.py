"""``context.mcp`` for tools an MCP client called: elicitation, logging, progress and sampling
over the request's session (`agentstream.tools.MCPToolExecutionContext`)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.message import ServerMessageMetadata

from ..tools import LogLevel

__all__ = ["InputRequired", "LogLevels", "ServerToolContext", "UnsupportedByClient"]

_SEVERITY: dict[str, int] = {
    name: rank
    for rank, name in enumerate(
        ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
    )
}


class UnsupportedByClient(RuntimeError):
    """A tool asked the client for something it did not declare (sampling, elicitation)."""


class InputRequired(Exception):
    """The tool asked the client for input on a channel without server-to-client requests
    (protocol 2026-07-28, stateless): the call answers ``InputRequiredResult`` and the client
    calls again with the answers, which the tool's next run finds (as a resumed tool does)."""

    def __init__(self, requests: dict[str, Any]) -> None:
        super().__init__(sorted(requests))
        self.requests = requests


class LogLevels:
    """The level each connection set with ``logging/setLevel`` (MCP 2025-11-25); messages below it
    are dropped. Keyed by the HTTP session id (the session object is per request) or one key for
    stdio, where the process is the connection."""

    def __init__(self) -> None:
        self._levels: dict[str, int] = {}

    @staticmethod
    def key(ctx: ServerRequestContext[Any]) -> str:
        request = ctx.request
        headers = getattr(request, "headers", None)
        session_id = headers.get("mcp-session-id") if headers is not None else None
        return f"http:{session_id}" if session_id else "stdio"

    def set(self, ctx: ServerRequestContext[Any], level: str) -> None:
        self._levels[self.key(ctx)] = _SEVERITY[level]

    def allows(self, ctx: ServerRequestContext[Any], level: str) -> bool:
        return _SEVERITY[level] >= self._levels.get(self.key(ctx), 0)


class _Elicitation:
    def __init__(self, owner: ServerToolContext) -> None:
        self._owner = owner

    async def send_request(self, params: Mapping[str, Any]) -> dict[str, Any]:
        message, schema = params.get("message"), params.get("requestedSchema")
        if not isinstance(message, str) or not isinstance(schema, Mapping):
            raise ValueError(
                "elicitation.send_request needs {'message': str, 'requestedSchema': {...}}, "
                f"got keys {sorted(params)}"
            )
        capability = types.ClientCapabilities(elicitation=types.ElicitationCapability())
        return await self._owner.ask("elicitation", capability, types.ElicitRequest, dict(params))


class ServerToolContext:
    """One tool call's view of its MCP request.

    A request to the client (elicitation, sampling) goes out on the request's back-channel when
    it has one; on a stateless request the answers come with the call's retry (``inputResponses``),
    keyed by the order of the tool's requests, so a tool that asks the same questions in the same
    order gets its answers on the rerun."""

    def __init__(self, ctx: ServerRequestContext[Any], levels: LogLevels) -> None:
        self._ctx = ctx
        self._levels = levels
        self._elicitation = _Elicitation(self)
        self._asked = 0
        responses = (ctx.params or {}).get("inputResponses")
        self._responses: Mapping[str, Any] = responses if isinstance(responses, Mapping) else {}

    @property
    def elicitation(self) -> _Elicitation:
        return self._elicitation

    @property
    def extra(self) -> Mapping[str, Any]:
        out: dict[str, Any] = {"requestId": self._ctx.request_id}
        key = LogLevels.key(self._ctx)
        if key.startswith("http:"):
            out["sessionId"] = key[5:]
        auth = getattr(getattr(self._ctx.request, "state", None), "principal", None)
        if auth is not None:
            out["authInfo"] = auth
        return out

    async def ask(
        self, kind: str, capability: types.ClientCapabilities, request_type: Any, params: dict[str, Any]
    ) -> dict[str, Any]:
        """Send ``request_type(params)`` to the client and return its answer as JSON."""
        self._asked += 1
        key = f"{kind}-{self._asked}"
        if key in self._responses:
            answer = self._responses[key]
            return dict(answer) if isinstance(answer, Mapping) else {"value": answer}
        if not self._ctx.session.check_client_capability(capability):
            raise UnsupportedByClient(f"the MCP client does not support {kind} (no {kind} capability)")
        request = request_type.model_validate(
            {"method": request_type.model_fields["method"].default, "params": params}
        )
        if not self._ctx.session.can_send_request:
            raise InputRequired({key: request})
        result_type = types.ElicitResult if kind == "elicitation" else types.CreateMessageResult
        # on the calling request's own stream: the session's standalone stream may not be open yet
        metadata = ServerMessageMetadata(related_request_id=self._ctx.request_id)
        result = await self._ctx.session.send_request(request, result_type, metadata=metadata)
        return result.model_dump(by_alias=True, exclude_none=True, mode="json")

    async def log(self, level: LogLevel, data: Any, logger: str | None = None) -> None:
        if level not in _SEVERITY:
            raise ValueError(f"log level must be one of {list(_SEVERITY)}, got {level!r}")
        if not self._levels.allows(self._ctx, level):
            return
        with warnings.catch_warnings():
            # logging is deprecated from protocol 2026-07-28 on; the SDK drops it there by itself
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await self._ctx.session.send_log_message(
                level, data, logger, related_request_id=self._ctx.request_id
            )

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        await self._ctx.session.report_progress(progress, total, message)

    async def request_sampling(self, params: Mapping[str, Any]) -> dict[str, Any]:
        capability = types.ClientCapabilities(sampling=types.SamplingCapability())
        return await self.ask("sampling", capability, types.CreateMessageRequest, dict(params))
