"""One live session with one MCP server, held open by a task of its own.

The SDK's ``Client`` is an anyio context manager: it must be entered and left in the same task. An
agent runs its tools in tasks of their own, so the session is owned by one long-lived task (opened
on first use, closed by `Connection.close`) and requests are sent from any task of the same loop.
When the transport dies (a killed stdio server, a dropped HTTP session) the owner task ends and
the next request opens a new session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx2
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY
from mcp_types import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    REQUEST_TIMEOUT,
    ElicitResult,
    ErrorData,
    Implementation,
    LoggingMessageNotificationParams,
    PromptListChangedNotification,
    ResourceListChangedNotification,
    ResourceUpdatedNotification,
    ToolListChangedNotification,
)

from mcp import Client, StdioServerParameters

from ._config import HttpServer, ServerSpec, StdioServer
from ._elicit_suspend import suspend_or_answer
from ._errors import MCPConnectionError
from ._subscriptions import ListKind, Subscriptions

__all__ = ["Connection", "ElicitationHandler", "LogHandler"]

log = logging.getLogger("agentstream.mcp")

LogHandler = Callable[[str, LoggingMessageNotificationParams], Any]
"""``on_log(server_name, params)``: a server's ``notifications/message``."""

ElicitationHandler = Callable[[str, dict[str, Any]], Any] | str
"""``on_elicitation(server_name, request)``: answer a server's ``elicitation/create`` (``request`` is
its params as JSON: ``{message, requestedSchema, ...}``) with ``{"action": "accept" | "decline" |
"cancel", "content"?: {...}}`` (sync or async); or ``"suspend"``: the question suspends the calling
agent run (see `agentstream.mcp._elicit_suspend`)."""

_T = TypeVar("_T")

# 2025-11-25 list-change notifications, by the kind a handler registers for.
_LIST_CHANGED: dict[type, ListKind] = {
    ToolListChangedNotification: "tools",
    PromptListChangedNotification: "prompts",
    ResourceListChangedNotification: "resources",
}
# Backoff (seconds) between attempts to listen again after a subscription stream was lost.
_REVIVE_FIRST, _REVIVE_MAX = 0.5, 30.0

_CLIENT_INFO = Implementation(name="agentstream", version="1.0.0")

# Status codes after which the MCP spec says a client may try the legacy HTTP+SSE transport.
_SSE_FALLBACK_STATUS = {400, 404, 405}

_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
}


def is_connection_failure(error: BaseException) -> bool:
    """Whether ``error`` means the session is gone (worth one reconnect), not that the server refused."""
    if isinstance(error, MCPConnectionError):
        return True
    if isinstance(error, MCPError):
        text = error.message.lower()
        return error.code == CONNECTION_CLOSED or "session" in text or "not connected" in text
    if isinstance(error, BaseExceptionGroup):
        return any(is_connection_failure(e) for e in error.exceptions)
    return isinstance(
        error, (ConnectionError, EOFError, OSError, httpx2.TransportError, httpx2.HTTPStatusError)
    ) or type(error).__name__ in ("ClosedResourceError", "BrokenResourceError", "EndOfStream")


def is_timeout(error: BaseException) -> bool:
    return isinstance(error, TimeoutError) or (isinstance(error, MCPError) and error.code == REQUEST_TIMEOUT)


class Connection:
    """The session with server ``name``; `client()` opens it on first use and after it died."""

    def __init__(
        self,
        name: str,
        spec: ServerSpec,
        on_log: LogHandler | None,
        on_elicitation: ElicitationHandler | None = None,
    ) -> None:
        self.name = name
        self.spec = spec
        self._on_log = on_log
        self._on_elicitation = on_elicitation
        self.subscriptions = Subscriptions(name, on_lost=self._revive_soon)
        """Subscribed URIs, list-change interest and their handlers; kept across sessions."""
        self._revive: asyncio.Task[None] | None = None
        self._closing_all = False
        self._lock = asyncio.Lock()
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._closing: asyncio.Event | None = None
        self.transport = "stdio" if isinstance(spec, StdioServer) else "streamable-http"

    @property
    def timeout(self) -> float:
        return self.spec.timeout

    async def client(self) -> Client:
        """The open session, connecting (once, however many callers wait) when there is none."""
        async with self._lock:
            if self._client is not None and self._owner is not None and not self._owner.done():
                return self._client
            return await self._renew()

    async def reconnect(self) -> Client:
        """Close the session (if any is left) and open a new one."""
        async with self._lock:
            return await self._renew()

    async def _renew(self) -> Client:
        await self._drop()
        client = self._client = await self._open()
        try:  # a new session subscribes again; a failure leaves the session usable (as in Mastra)
            await asyncio.wait_for(self.subscriptions.restore(client), self.timeout)
        except Exception as exc:
            log.warning("MCP server %r: could not restore subscriptions: %s", self.name, _describe(exc))
        return client

    async def close(self) -> None:
        # Stop listening before the session goes, so its end is not taken for a lost stream.
        self._closing_all = True
        try:
            revive, self._revive = self._revive, None
            if revive is not None:
                revive.cancel()
                with contextlib.suppress(BaseException):
                    await revive
            await self.subscriptions.close()
            async with self._lock:
                await self._drop()
        finally:
            self._closing_all = False

    def _revive_soon(self) -> None:
        """A stream or session carrying subscriptions ended by itself: get them back in the
        background (new session if needed), with backoff, until it works or the client closes."""
        if self._closing_all or (self._revive is not None and not self._revive.done()):
            return
        self._revive = asyncio.get_running_loop().create_task(
            self._revive_loop(), name=f"mcp-revive-{self.name}"
        )

    async def _revive_loop(self) -> None:
        delay = _REVIVE_FIRST
        while self.subscriptions.wanted:
            await asyncio.sleep(delay)
            try:
                client = await self.client()
                await asyncio.wait_for(self.subscriptions.ensure(client), self.timeout)
                return
            except Exception as exc:
                log.warning(
                    "MCP server %r: subscriptions not restored (%s); retrying in %gs",
                    self.name,
                    _describe(exc),
                    min(delay * 2, _REVIVE_MAX),
                )
                delay = min(delay * 2, _REVIVE_MAX)

    async def _drop(self) -> None:
        owner, closing = self._owner, self._closing
        self._client = self._owner = self._closing = None
        if owner is None or closing is None:
            return
        closing.set()
        try:
            # The SDK bounds its own shutdown (stdin close, SIGTERM, SIGKILL of the process group).
            await asyncio.wait_for(asyncio.shield(owner), timeout=10)
        except (TimeoutError, asyncio.CancelledError):
            owner.cancel()
            with contextlib.suppress(BaseException):
                await owner
        except BaseException as exc:  # the session had already failed: nothing left to close
            log.debug("MCP server %r: session ended with %r", self.name, exc)

    async def _open(self) -> Client:
        try:
            return await self._start(self._transport())
        except BaseException as exc:
            if isinstance(self.spec, HttpServer) and _fallback_status(exc):
                log.info("MCP server %r: streamable HTTP refused, trying legacy HTTP+SSE", self.name)
                self.transport = "sse"
                try:
                    return await self._start(self._sse_transport())
                except BaseException as sse_exc:
                    raise self._connect_error(sse_exc) from sse_exc
            raise self._connect_error(exc) from exc

    def _connect_error(self, exc: BaseException) -> MCPConnectionError:
        where = (
            f"command {self.spec.command!r}"
            if isinstance(self.spec, StdioServer)
            else f"URL {self.spec.url!r}"
        )
        return MCPConnectionError(
            f"could not connect to MCP server {self.name!r} ({where}): {_describe(exc)}",
            server_name=self.name,
        )

    def _transport(self) -> Any:
        spec = self.spec
        if isinstance(spec, StdioServer):
            return StdioServerParameters(
                command=spec.command, args=list(spec.args), env=dict(spec.env) or None, cwd=spec.cwd
            )
        self.transport = "streamable-http"
        return streamable_http_client(
            spec.url, http_client=create_mcp_http_client(headers=dict(spec.headers), auth=spec.auth)
        )

    def _sse_transport(self) -> Any:
        assert isinstance(self.spec, HttpServer)
        spec = self.spec
        return sse_client(spec.url, headers=dict(spec.headers), timeout=spec.timeout, auth=spec.auth)

    async def _start(self, server: Any) -> Client:
        pinned = self.spec.protocol_version
        client = Client(
            server,
            # pinned 2025-11-25: the initialize handshake; 2026-07-28: server/discover, checked below
            mode="legacy" if pinned == "2025-11-25" else "auto",
            read_timeout_seconds=self.spec.timeout,
            logging_callback=self._logged,
            message_handler=self._notified,
            # 2026-07-28 servers log only to requests that opt in: all levels for an app's handler,
            # warnings and worse for the agentstream.mcp logger alone
            log_level="debug" if self._on_log is not None else "warning",
            client_info=_CLIENT_INFO,
            # The capability is advertised only with a handler: servers offer elicitation tools then.
            elicitation_callback=None if self._on_elicitation is None else self._elicited,
            cache=None,  # tools/list is fetched when asked for; stale listings would hide new tools
        )
        ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        closing = asyncio.Event()

        async def own() -> None:
            try:
                async with client:
                    ready.set_result(client)
                    await closing.wait()
            except BaseException as exc:
                if not ready.done():
                    ready.set_exception(exc)
                elif not closing.is_set():
                    log.warning("MCP server %r: session lost: %s", self.name, _describe(exc))
                    if self.subscriptions.wanted:
                        self._revive_soon()
                if isinstance(exc, asyncio.CancelledError):
                    raise

        owner = asyncio.create_task(own(), name=f"mcp-session-{self.name}")
        try:
            opened = await asyncio.wait_for(asyncio.shield(ready), timeout=self.spec.timeout)
        except BaseException:
            closing.set()
            owner.cancel()
            with contextlib.suppress(BaseException):
                await owner
            raise
        self._owner, self._closing = owner, closing
        spoken = opened.protocol_version
        if pinned is not None and spoken != pinned:
            await self._drop()
            raise MCPConnectionError(
                f"MCP server {self.name!r} speaks {spoken}, not the "
                f"protocol_version {pinned} it is configured with",
                server_name=self.name,
            )
        return opened

    async def _elicited(self, context: Any, params: Any) -> ElicitResult | ErrorData:
        assert self._on_elicitation is not None
        request = params.model_dump(mode="json", by_alias=True, exclude_none=True)
        if isinstance(self._on_elicitation, str):  # SUSPEND, checked by MCPClient
            return suspend_or_answer(self.name, request)  # may raise ToolSuspended into the call
        try:
            answer = self._on_elicitation(self.name, request)
            if isinstance(answer, Awaitable):
                answer = await answer
            return ElicitResult.model_validate(answer)
        except Exception as exc:  # the handler's failure is the server's error, not our crash
            log.exception("MCP server %r: on_elicitation failed", self.name)
            return ErrorData(code=INTERNAL_ERROR, message=f"elicitation handler failed: {exc}")

    async def _notified(self, message: Any) -> None:
        """2025-11-25 change notifications (requests are answered by the SDK). Frames of a
        ``subscriptions/listen`` stream are teed here too: their stream delivers those."""
        params = getattr(message, "params", None)
        meta = getattr(params, "meta", None)
        if isinstance(meta, dict) and SUBSCRIPTION_ID_META_KEY in meta:
            return
        if isinstance(message, ResourceUpdatedNotification):
            await self.subscriptions.updated({"uri": message.params.uri})
        elif type(message) in _LIST_CHANGED:
            await self.subscriptions.list_changed(_LIST_CHANGED[type(message)])

    async def _logged(self, params: LoggingMessageNotificationParams) -> None:
        level = _LOG_LEVELS.get(str(params.level), logging.ERROR)
        log.log(level, "[%s] [MCP SERVER LOG] %s", self.name, params.data)
        if self._on_log is not None:
            outcome = self._on_log(self.name, params)
            if isinstance(outcome, Awaitable):
                await outcome


def _fallback_status(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return any(_fallback_status(e) for e in exc.exceptions)
    if isinstance(exc, httpx2.HTTPStatusError):
        return exc.response.status_code in _SSE_FALLBACK_STATUS
    if isinstance(exc, MCPError):
        return any(f"{code}" in exc.message for code in _SSE_FALLBACK_STATUS)
    return False


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    if isinstance(exc, MCPError):
        return exc.message
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
