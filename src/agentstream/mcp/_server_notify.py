"""Change notifications an `MCPServer` sends when the app says something changed.

Mastra's ``server.resources.notifyUpdated({uri})`` / ``notifyListChanged()``,
``server.prompts.notifyListChanged()`` and ``server.toolActions.notifyListChanged()``, in
snake_case. Each goes to both kinds of client:

- 2025-11-25 sessions: ``notifications/resources/updated`` to the sessions that called
  ``resources/subscribe`` for the URI; list changes to every initialized session.
- 2026-07-28 clients: the event is published on the SDK's `SubscriptionBus`; the
  ``subscriptions/listen`` handler sends it, stamped with the stream's subscription id, on the
  streams whose filter asked for it (and on no other).

A session that is gone is dropped on the first failed send; one slow or broken session never
holds up the others or the app (each send is bounded).
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    SubscriptionBus,
    ToolsListChanged,
)

__all__ = ["Notifier", "PromptNotifications", "ResourceNotifications", "ToolNotifications"]

log = logging.getLogger("agentstream.mcp")

_SEND_TIMEOUT = 5.0
"""Seconds one session may take to accept a notification before it is given up on."""


def _connection(ctx: Any) -> Any:
    """The object that lives as long as the client's session. The SDK builds a ``ServerSession``
    per request around the session's connection (which has the same ``send_*`` methods, on the
    session's standalone channel); held weakly, a closed session leaves the sets by itself."""
    return getattr(ctx.session, "_connection", ctx.session)


class Notifier:
    """The sessions and listen streams to notify; the lowlevel handlers that keep track of them."""

    def __init__(self, bus: SubscriptionBus | None = None) -> None:
        self.bus: SubscriptionBus = bus if bus is not None else InMemorySubscriptionBus()
        self.listen = ListenHandler(self.bus)
        """The ``subscriptions/listen`` handler (2026-07-28)."""
        self._sessions: weakref.WeakSet[Any] = weakref.WeakSet()
        self._subscribed: dict[str, weakref.WeakSet[Any]] = {}

    # ------------------------------------------------------------------ 2025-11-25 bookkeeping

    async def on_initialized(self, ctx: Any, params: Any) -> None:
        self._sessions.add(_connection(ctx))

    async def on_subscribe(self, ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        connection = _connection(ctx)
        self._sessions.add(connection)
        self._subscribed.setdefault(str(params.uri), weakref.WeakSet()).add(connection)
        return types.EmptyResult()

    async def on_unsubscribe(self, ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        sessions = self._subscribed.get(str(params.uri))
        if sessions is not None:
            sessions.discard(_connection(ctx))
            if not sessions:
                del self._subscribed[str(params.uri)]
        return types.EmptyResult()

    def subscribers(self, uri: str) -> int:
        """How many 2025-11-25 sessions are subscribed to ``uri`` (listen streams not counted)."""
        return len(self._subscribed.get(uri, ()))

    # ------------------------------------------------------------------ sending

    async def resource_updated(self, uri: str) -> None:
        await self.bus.publish(ResourceUpdated(uri=uri))
        sessions = list(self._subscribed.get(uri, ()))
        await self._send(sessions, lambda s: s.send_resource_updated(uri), f"resources/updated {uri}")

    async def list_changed(self, kind: str) -> None:
        event: dict[str, ServerEvent] = {
            "tools": ToolsListChanged(),
            "prompts": PromptsListChanged(),
            "resources": ResourcesListChanged(),
        }
        await self.bus.publish(event[kind])
        method = f"send_{kind.rstrip('s')}_list_changed"
        await self._send(list(self._sessions), lambda s: getattr(s, method)(), f"{kind}/list_changed")

    async def _send(self, sessions: list[Any], send: Callable[[Any], Awaitable[None]], what: str) -> None:
        async def one(session: Any) -> None:
            try:
                await asyncio.wait_for(send(session), _SEND_TIMEOUT)
            except Exception as exc:  # the session is gone (closed stream) or stuck: stop telling it
                log.info("MCP server: dropping a session that could not take %s: %r", what, exc)
                self._forget(session)

        await asyncio.gather(*(one(s) for s in sessions))

    def _forget(self, session: Any) -> None:
        self._sessions.discard(session)
        for uri, sessions in list(self._subscribed.items()):
            sessions.discard(session)
            if not sessions:
                del self._subscribed[uri]

    def close(self) -> None:
        """End every open listen stream gracefully (each gets its final result)."""
        self.listen.close()


def _check_uri(uri: Any) -> str:
    if not isinstance(uri, str) or not uri:
        raise ValueError(f"resources.notify_updated(uri=...) must be a non-empty string, got {uri!r}")
    return uri


class ResourceNotifications:
    """``server.resources``: tell clients a resource, or the resource list, changed."""

    def __init__(self, notifier: Notifier) -> None:
        self._notifier = notifier

    async def notify_updated(self, *, uri: str) -> None:
        """Send ``notifications/resources/updated`` for ``uri`` to the clients subscribed to it."""
        await self._notifier.resource_updated(_check_uri(uri))

    async def notify_list_changed(self) -> None:
        """Send ``notifications/resources/list_changed`` (clients list the resources again)."""
        await self._notifier.list_changed("resources")


class PromptNotifications:
    """``server.prompts``: tell clients the prompt list changed."""

    def __init__(self, notifier: Notifier) -> None:
        self._notifier = notifier

    async def notify_list_changed(self) -> None:
        await self._notifier.list_changed("prompts")


class ToolNotifications:
    """``server.tool_actions``: tell clients the tool list changed (after changing ``server.tools``)."""

    def __init__(self, notifier: Notifier) -> None:
        self._notifier = notifier

    async def notify_list_changed(self) -> None:
        await self._notifier.list_changed("tools")
