"""A server connection's standing interest in change notifications, in both protocol revisions.

- 2025-11-25: ``resources/subscribe`` per URI; ``notifications/*/list_changed`` arrive unasked,
  through the session's message handler.
- 2026-07-28: ``resources/subscribe`` is gone and nothing arrives unasked. One
  ``subscriptions/listen`` stream per server carries the whole interest: the subscribed URIs and
  the list kinds a handler was registered for. Changing the interest opens the replacement stream
  first, then closes the old one, so no update falls between the two filters; a URI the server
  does not acknowledge is an error and the interest is rolled back (Mastra's
  ``replaceSubscriptionStream``).

The interest outlives a session: a new session (after a killed server, a dropped stream or a
forced reconnect) subscribes to it again (`Subscriptions.restore`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import warnings
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from mcp.client.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    Subscription,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp import Client

from ._errors import MCPError

__all__ = ["ListKind", "MCPSubscriptionError", "Subscriptions", "is_modern"]

log = logging.getLogger("agentstream.mcp")

ListKind = Literal["tools", "prompts", "resources"]
UpdatedHandler = Callable[[dict[str, Any]], Any]
ListHandler = Callable[[], Any]

_LIST_EVENTS: dict[type, ListKind] = {
    ToolsListChanged: "tools",
    PromptsListChanged: "prompts",
    ResourcesListChanged: "resources",
}


class MCPSubscriptionError(MCPError):
    """The server did not honour a subscription (a URI missing from its acknowledgement)."""


def is_modern(client: Client) -> bool:
    """Whether the session speaks a revision where change notifications ride ``subscriptions/listen``."""
    return client.protocol_version in MODERN_PROTOCOL_VERSIONS


async def _call(handler: Callable[..., Any], *args: Any, server_name: str) -> None:
    try:
        outcome = handler(*args)
        if isinstance(outcome, Awaitable):
            await outcome
    except Exception:  # one handler's bug must not stop the stream, the session or the others
        log.exception("MCP server %r: a change-notification handler failed", server_name)


class _ListenStream:
    """One open ``subscriptions/listen`` stream, held by a task of its own.

    The task enters the SDK's ``Client.listen`` and drains its events into the handlers while
    the stream is the current one; `close` cancels it (the SDK then cancels the request).
    """

    def __init__(self, owner: Subscriptions, uris: frozenset[str], lists: frozenset[str]) -> None:
        self.owner, self.uris, self.lists = owner, uris, lists
        self.honored_uris: frozenset[str] = frozenset()
        self.task: asyncio.Task[None] | None = None
        self.closing = False

    async def open(self, client: Client) -> None:
        ready: asyncio.Future[Subscription] = asyncio.get_running_loop().create_future()

        async def hold() -> None:
            try:
                async with client.listen(
                    tools_list_changed="tools" in self.lists,
                    prompts_list_changed="prompts" in self.lists,
                    resources_list_changed="resources" in self.lists,
                    resource_subscriptions=sorted(self.uris),
                ) as subscription:
                    ready.set_result(subscription)
                    async for event in subscription:
                        if self.owner.current is self:  # during a replacement only one stream speaks
                            await self.owner.dispatch(event)
                ended: BaseException | None = None  # the server ended it (e.g. shutting down)
            except asyncio.CancelledError:
                if not ready.done():
                    ready.cancel()
                raise
            except BaseException as exc:
                if not ready.done():
                    ready.set_exception(exc)
                    return
                ended = exc
            if not self.closing:
                self.owner.stream_ended(self, ended)

        self.task = asyncio.create_task(hold(), name=f"mcp-listen-{self.owner.server_name}")
        try:
            subscription = await asyncio.shield(ready)
        except BaseException:
            await self.close()
            raise
        self.honored_uris = frozenset(subscription.honored.resource_subscriptions or ())

    @property
    def alive(self) -> bool:
        return self.task is not None and not self.task.done()

    async def close(self) -> None:
        self.closing = True
        task, self.task = self.task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


class Subscriptions:
    """What a connection subscribed to and who is told; ``on_lost`` is called when a current
    listen stream ends while there is still interest (the connection listens again)."""

    def __init__(self, server_name: str, on_lost: Callable[[], None]) -> None:
        self.server_name = server_name
        self.uris: set[str] = set()
        self.lists: set[ListKind] = set()
        self.on_updated: list[UpdatedHandler] = []
        self.on_list_changed: dict[ListKind, list[ListHandler]] = {
            "tools": [],
            "prompts": [],
            "resources": [],
        }
        self.current: _ListenStream | None = None
        self._on_lost = on_lost
        # Changes apply one at a time, in order (Mastra's enqueueSubscriptionUpdate).
        self._lock = asyncio.Lock()

    @property
    def wanted(self) -> bool:
        return bool(self.uris or self.lists)

    # ------------------------------------------------------------------ changing the interest

    async def subscribe(self, client: Client, uri: str) -> None:
        async with self._lock:
            if is_modern(client):
                if uri in self.uris and self.current is not None and self.current.alive:
                    return
                await self._replace(client, self.uris | {uri}, self.lists)
            else:
                with warnings.catch_warnings():  # a 2025-era session, where subscribe is the way
                    warnings.simplefilter("ignore", MCPDeprecationWarning)
                    await client.subscribe_resource(uri)
            self.uris.add(uri)

    async def unsubscribe(self, client: Client, uri: str) -> None:
        async with self._lock:
            if uri not in self.uris:
                return
            if is_modern(client):
                await self._replace(client, self.uris - {uri}, self.lists)
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", MCPDeprecationWarning)
                    await client.unsubscribe_resource(uri)
            self.uris.discard(uri)

    async def want_list(self, client: Client, kind: ListKind) -> None:
        """Receive ``notifications/<kind>/list_changed`` (a 2025-era server sends them unasked)."""
        async with self._lock:
            if kind in self.lists and (not is_modern(client) or self._current_alive()):
                return
            if is_modern(client):
                await self._replace(client, self.uris, self.lists | {kind})
            self.lists.add(kind)

    async def restore(self, client: Client) -> None:
        """Subscribe a new session to the whole interest (the previous session's stream is gone)."""
        async with self._lock:
            stale, self.current = self.current, None
            if stale is not None:
                await stale.close()
            if not self.wanted:
                return
            if is_modern(client):
                await self._replace(client, self.uris, self.lists)
                return
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                for uri in sorted(self.uris):
                    await client.subscribe_resource(uri)

    async def ensure(self, client: Client) -> None:
        """Listen again if the current stream ended while the session lives on (2026-07-28)."""
        async with self._lock:
            if is_modern(client) and self.wanted and not self._current_alive():
                await self._replace(client, self.uris, self.lists)

    async def close(self) -> None:
        """Close the stream; the interest stays (a later session restores it)."""
        current, self.current = self.current, None
        if current is not None:
            await current.close()

    def _current_alive(self) -> bool:
        return self.current is not None and self.current.alive

    async def _replace(self, client: Client, uris: set[str], lists: set[ListKind]) -> None:
        previous = self.current
        replacement: _ListenStream | None = None
        if uris or lists:
            replacement = _ListenStream(self, frozenset(uris), frozenset(lists))
            await replacement.open(client)
            declined = sorted(uris - replacement.honored_uris)
            if declined:
                await replacement.close()
                raise MCPSubscriptionError(
                    f"Server declined resource subscriptions for: {', '.join(declined)}",
                    server_name=self.server_name,
                )
        self.current = replacement
        if previous is not None:
            await previous.close()

    # ------------------------------------------------------------------ delivering

    def stream_ended(self, stream: _ListenStream, error: BaseException | None) -> None:
        if stream is not self.current:
            return
        self.current = None
        how = "ended by the server" if error is None else f"lost ({type(error).__name__}: {error})"
        log.info("MCP server %r: subscriptions/listen stream %s", self.server_name, how)
        if self.wanted:
            self._on_lost()

    async def dispatch(self, event: ServerEvent) -> None:
        if isinstance(event, ResourceUpdated):
            await self.updated({"uri": event.uri})
        else:
            await self.list_changed(_LIST_EVENTS[type(event)])

    async def updated(self, params: dict[str, Any]) -> None:
        for handler in list(self.on_updated):
            await _call(handler, params, server_name=self.server_name)

    async def list_changed(self, kind: ListKind) -> None:
        for handler in list(self.on_list_changed[kind]):
            await _call(handler, server_name=self.server_name)
