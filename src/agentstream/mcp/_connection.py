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
from mcp_types import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    REQUEST_TIMEOUT,
    ElicitResult,
    ErrorData,
    Implementation,
    LoggingMessageNotificationParams,
    ResourceUpdatedNotification,
)

from mcp import Client, StdioServerParameters

from ._config import HttpServer, ServerSpec, StdioServer
from ._elicit_suspend import suspend_or_answer
from ._errors import MCPConnectionError

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
        self.resource_listeners: list[Callable[[dict[str, Any]], Any]] = []
        """``resources.on_updated`` handlers: each gets ``{"uri": ...}`` per update notification."""
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
            await self._drop()
            self._client = await self._open()
            return self._client

    async def reconnect(self) -> Client:
        """Close the session (if any is left) and open a new one."""
        async with self._lock:
            await self._drop()
            self._client = await self._open()
            return self._client

    async def close(self) -> None:
        async with self._lock:
            await self._drop()

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
        client = Client(
            server,
            mode="auto",
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
        if not isinstance(message, ResourceUpdatedNotification):
            return  # requests are answered by the SDK; list changes are read when asked
        params = message.params.model_dump(mode="json", by_alias=True, exclude_none=True)
        for listener in list(self.resource_listeners):
            try:
                outcome = listener(params)
                if isinstance(outcome, Awaitable):
                    await outcome
            except Exception:  # one handler's bug must not stop the session or the others
                log.exception("MCP server %r: a resources.on_updated handler failed", self.name)

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
