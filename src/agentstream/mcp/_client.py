"""`MCPClient`: Mastra's ``MCPClient`` on the official ``mcp`` SDK, in snake_case."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from mcp_types import Tool as MCPToolDefinition

from mcp import Client

from ._config import ServerSpec, parse_servers
from ._connection import Connection, ElicitationHandler, LogHandler, is_connection_failure
from ._errors import MCPConnectionError
from ._subscriptions import ListKind, Subscriptions
from ._tools import MCPTool, build_tool

__all__ = ["MCPClient"]

log = logging.getLogger("agentstream.mcp")

_T = TypeVar("_T")
_Listing = dict[str, list[dict[str, Any]]]


def _dump(value: Any) -> dict[str, Any]:
    # exclude_unset: not the 2026-07-28 fields (ttlMs, resultType...) the SDK fills in for older peers.
    dumped: dict[str, Any] = value.model_dump(
        mode="json", by_alias=True, exclude_none=True, exclude_unset=True
    )
    return dumped


_DEFINITION_KEYS = ("name", "description", "inputSchema", "outputSchema", "annotations")


def _definition(tool: MCPToolDefinition) -> dict[str, Any]:
    """The serialisable part of a tool definition Mastra keeps (no ``title``, ``execution``, ``_meta``)."""
    dumped = _dump(tool)
    return {key: dumped[key] for key in _DEFINITION_KEYS if key in dumped}


class _Resources:
    """``client.resources``: ``list()``, ``templates()``, ``read(server, uri)``, ``subscribe``/``unsubscribe``."""

    def __init__(self, owner: MCPClient) -> None:
        self._owner = owner

    async def list(self) -> _Listing:
        """Every server's resources (MCP ``Resource`` objects as JSON), by server name."""

        async def one(client: Client) -> list[dict[str, Any]]:
            return [_dump(r) for r in (await client.list_resources()).resources]

        return await self._owner._each(one, capability="resources")

    async def templates(self) -> _Listing:
        """Every server's resource templates, by server name."""

        async def one(client: Client) -> list[dict[str, Any]]:
            return [_dump(t) for t in (await client.list_resource_templates()).resource_templates]

        return await self._owner._each(one, capability="resources")

    async def read(self, server_name: str, uri: str) -> dict[str, Any]:
        """``resources/read`` of ``uri`` on ``server_name``: ``{contents: [{uri, mimeType, text | blob}]}``."""

        async def one(client: Client) -> dict[str, Any]:
            return _dump(await client.read_resource(uri))

        return await self._owner._on(server_name, one)

    async def subscribe(self, server_name: str, uri: str) -> None:
        """Receive ``notifications/resources/updated`` about ``uri`` from ``server_name`` (handlers:
        `on_updated`). ``resources/subscribe`` on a 2025-11-25 session; on 2026-07-28 the URI joins
        the server's one ``subscriptions/listen`` stream (`MCPSubscriptionError` if the server
        does not acknowledge it). The subscription survives reconnects."""
        _check_uri("subscribe", uri)
        await self._owner._on(server_name, lambda c: self._owner._subs(server_name).subscribe(c, uri))

    async def unsubscribe(self, server_name: str, uri: str) -> None:
        """Stop the updates about ``uri`` (a no-op if it was not subscribed)."""
        _check_uri("unsubscribe", uri)
        await self._owner._on(server_name, lambda c: self._owner._subs(server_name).unsubscribe(c, uri))

    def on_updated(self, server_name: str, handler: Callable[[dict[str, Any]], Any]) -> None:
        """Call ``handler({"uri": ...})`` (sync or async) for each ``notifications/resources/updated``
        from ``server_name`` (Mastra's ``resources.onUpdated``); then read the resource again."""
        _check_handler("resources.on_updated", handler)
        self._owner._subs(server_name).on_updated.append(handler)

    async def on_list_changed(self, server_name: str, handler: Callable[[], Any]) -> None:
        """Call ``handler()`` when ``server_name``'s resource list changes (Mastra's
        ``resources.onListChanged``); on 2026-07-28 this opts the listen stream in."""
        await self._owner._on_list_changed(server_name, "resources", handler)


def _check_uri(method: str, uri: Any) -> None:
    if not isinstance(uri, str) or not uri:
        raise ValueError(f"resources.{method}(uri=...) must be a non-empty string, got {uri!r}")


def _check_handler(where: str, handler: Any) -> None:
    if not callable(handler):
        raise TypeError(f"{where}(handler=...) must be callable, got {type(handler).__name__}")


class _Prompts:
    """``client.prompts``: ``list()`` and ``get(server, name, args)``."""

    def __init__(self, owner: MCPClient) -> None:
        self._owner = owner

    async def list(self) -> _Listing:
        async def one(client: Client) -> list[dict[str, Any]]:
            return [_dump(p) for p in (await client.list_prompts()).prompts]

        return await self._owner._each(one, capability="prompts")

    async def get(self, server_name: str, name: str, args: Mapping[str, str] | None = None) -> dict[str, Any]:
        """``prompts/get``: ``{description?, messages: [...]}``."""

        async def one(client: Client) -> dict[str, Any]:
            return _dump(await client.get_prompt(name, dict(args) if args else None))

        return await self._owner._on(server_name, one)

    async def on_list_changed(self, server_name: str, handler: Callable[[], Any]) -> None:
        """Call ``handler()`` when ``server_name``'s prompt list changes (Mastra's ``prompts.onListChanged``)."""
        await self._owner._on_list_changed(server_name, "prompts", handler)


class MCPClient:
    """Tools, resources and prompts of one or more MCP servers.

    ``servers={"fs": {"command": "npx", "args": [...], "env": {...}, "cwd": ...}, "web": {"url":
    "https://.../mcp", "headers": {...}, "timeout": 30}}``: a ``command`` is launched and spoken
    to over stdio, a ``url`` over streamable HTTP (legacy HTTP+SSE when the server refuses it). The
    protocol revision is negotiated (``server/discover`` for 2026-07-28 servers, ``initialize`` for
    older ones). Sessions open on first use; `disconnect` (or leaving ``async with``) closes them
    and stops the stdio processes.

    ``on_log(server_name, params)`` receives the servers' log notifications (they are also logged
    on the ``agentstream.mcp`` logger). ``on_elicitation(server_name, request)`` answers servers'
    ``elicitation/create`` requests (``{"action": "accept", "content": {...}}``); without it the
    client does not advertise elicitation. ``on_elicitation="suspend"``: in a chat, the question
    suspends the calling agent run (``tool-call-suspended``, the question as its payload) and
    ``agent.resume_stream(answer, run_id=...)`` answers it.
    """

    def __init__(
        self,
        servers: Mapping[str, Mapping[str, Any] | ServerSpec],
        *,
        id: str | None = None,
        on_log: LogHandler | None = None,
        on_elicitation: ElicitationHandler | None = None,
    ) -> None:
        if isinstance(on_elicitation, str) and on_elicitation != "suspend":
            raise ValueError(
                f"MCPClient(on_elicitation=...) must be a function or 'suspend', got {on_elicitation!r}"
            )
        self.id = id
        self._specs = parse_servers(servers)
        self._connections = {
            name: Connection(name, spec, on_log, on_elicitation) for name, spec in self._specs.items()
        }
        self.resources = _Resources(self)
        self.prompts = _Prompts(self)

    async def __aenter__(self) -> MCPClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.disconnect()

    @property
    def server_names(self) -> list[str]:
        """The configured servers' names, in configuration order."""
        return list(self._connections)

    def _connection(self, server_name: str) -> Connection:
        try:
            return self._connections[server_name]
        except KeyError:
            raise KeyError(
                f"no MCP server named {server_name!r} (configured: {sorted(self._connections)})"
            ) from None

    async def _on(self, server_name: str, request: Callable[[Client], Awaitable[_T]]) -> _T:
        """``request`` on one server's session, bounded by its timeout, reconnecting once if it died."""
        connection = self._connection(server_name)
        for attempt in (1, 2):
            try:
                client = await connection.client()
                return await asyncio.wait_for(request(client), connection.timeout)
            except TimeoutError:
                raise TimeoutError(
                    f"MCP server {server_name!r} did not answer within {connection.timeout:g}s"
                ) from None
            except Exception as exc:
                if attempt == 2 or not is_connection_failure(exc) or isinstance(exc, MCPConnectionError):
                    raise
                log.info("MCP server %r: session lost (%s); reconnecting once", server_name, exc)
                await connection.reconnect()
        raise AssertionError("unreachable")  # pragma: no cover

    def _subs(self, server_name: str) -> Subscriptions:
        return self._connection(server_name).subscriptions

    async def _on_list_changed(self, server_name: str, kind: ListKind, handler: Callable[[], Any]) -> None:
        _check_handler(f"{kind}.on_list_changed" if kind != "tools" else "on_tool_list_changed", handler)
        subscriptions = self._subs(server_name)
        subscriptions.on_list_changed[kind].append(handler)
        await self._on(server_name, lambda c: subscriptions.want_list(c, kind))

    async def on_tool_list_changed(self, server_name: str, handler: Callable[[], Any]) -> None:
        """Call ``handler()`` when ``server_name``'s tool list changes; then `list_tools` again."""
        await self._on_list_changed(server_name, "tools", handler)

    async def _each(
        self, request: Callable[[Client], Awaitable[_T]], *, capability: str | None = None
    ) -> dict[str, _T]:
        """``request`` on every server that has ``capability``, by server name."""
        out: dict[str, _T] = {}
        for name in self._connections:
            if capability is not None:
                client = await self._connection(name).client()
                if getattr(client.server_capabilities, capability, None) is None:
                    continue
            out[name] = await self._on(name, request)
        return out

    async def _definitions(self, server_name: str) -> list[MCPToolDefinition]:
        async def one(client: Client) -> list[MCPToolDefinition]:
            tools: list[MCPToolDefinition] = []
            cursor: str | None = None
            while True:
                page = await client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    return tools

        return await self._on(server_name, one)

    async def _server_tools(self, server_name: str) -> list[MCPTool]:
        definitions = await self._definitions(server_name)
        connection = self._connection(server_name)
        client = await connection.client()
        version = client.server_info.version if client.server_info is not None else None
        return [
            build_tool(connection, d, server_version=version, instructions=client.instructions)
            for d in definitions
        ]

    async def list_tools(self) -> dict[str, MCPTool]:
        """Every server's tools keyed ``<server>_<tool>``, ready for ``Agent(tools=...)``."""
        out: dict[str, MCPTool] = {}
        for name in self._connections:
            for tool in await self._server_tools(name):
                out[tool.id] = tool
        return out

    async def list_toolsets(self) -> dict[str, dict[str, MCPTool]]:
        """The tools grouped by server, keyed by the server's own tool name (``ids`` stay namespaced).

        For per-user credentials build one `MCPClient` per request (the user's token in
        ``headers``) and an agent with its tools for that request.
        """
        return {name: {t.mcp_name: t for t in await self._server_tools(name)} for name in self._connections}

    async def list_tool_definitions(self) -> dict[str, dict[str, dict[str, Any]]]:
        """The servers' tool definitions as listed (no added ``additionalProperties``), by server and name."""
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for name in self._connections:
            definitions = await self._definitions(name)
            client = await self._connection(name).client()
            server = {
                "name": name,
                "version": client.server_info.version if client.server_info is not None else None,
                "instructions": client.instructions,
            }
            out[name] = {d.name: {**_definition(d), "server": server} for d in definitions}
        return out

    async def get_server_instructions(self) -> dict[str, str | None]:
        """Each server's ``instructions``, by server name."""
        return {name: (await c.client()).instructions for name, c in self._connections.items()}

    async def get_server_protocol_versions(self) -> dict[str, str]:
        """The protocol revision negotiated with each server (``2025-11-25``, ``2026-07-28``, ...)."""
        return {name: (await c.client()).protocol_version for name, c in self._connections.items()}

    def transports(self) -> dict[str, str]:
        """The transport each server is (or was last) spoken to over: ``stdio``, ``streamable-http``, ``sse``."""
        return {name: c.transport for name, c in self._connections.items()}

    async def disconnect(self) -> None:
        """Close every session; stdio servers are stopped (stdin closed, then SIGTERM/SIGKILL)."""
        await asyncio.gather(*(c.close() for c in self._connections.values()))
