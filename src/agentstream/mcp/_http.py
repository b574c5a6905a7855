"""`MCPServer` over streamable HTTP: an ASGI app behind the chat routes' `RequestGuard`.

Every request passes the guard first (host, origin, CORS preflight, auth hook, body size), the
same checks as ``chat_route``; then the SDK's session manager answers it. The manager's task
group is owned by one task started on the first request (or at ASGI lifespan startup), so the
app works mounted inside another app whose lifespan never reaches it.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

from ..ai_sdk import ChatRequestError
from ..server import RequestGuard

if TYPE_CHECKING:
    from ._server import MCPServer

__all__ = ["MCPHttpApp"]


class MCPHttpApp:
    """ASGI app serving `MCPServer` at ``path`` (``None``: every path it is given)."""

    def __init__(
        self, server: MCPServer, *, path: str | None = "/mcp", guard: RequestGuard | None = None
    ) -> None:
        if guard is not None and not isinstance(guard, RequestGuard):
            raise TypeError(f"guard must be a RequestGuard, got {type(guard).__name__}")
        self.server = server
        self.path = None if path is None else "/" + path.strip("/")
        self.guard = guard if guard is not None else RequestGuard()
        self._lock = asyncio.Lock()
        self._manager: StreamableHTTPSessionManager | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None

    async def start(self) -> None:
        """Start the session manager (done on the first request otherwise)."""
        async with self._lock:
            if self._owner is not None and not self._owner.done():
                return
            manager = StreamableHTTPSessionManager(
                app=self.server.lowlevel,
                # The guard checks hosts and origins; the SDK's own check would refuse what it allows.
                security_settings=None,
                max_request_body_size=self.guard.max_body_bytes,
            )
            ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            stop = asyncio.Event()

            async def own() -> None:
                try:
                    async with manager.run():
                        ready.set_result(None)
                        await stop.wait()
                except BaseException as exc:
                    if not ready.done():
                        ready.set_exception(exc)
                    raise

            self._owner = asyncio.create_task(own(), name=f"mcp-http-{self.server.name}")
            await ready
            self._manager, self._stop = manager, stop

    async def aclose(self) -> None:
        """Close every MCP session and stop the manager."""
        async with self._lock:
            owner, stop = self._owner, self._stop
            self._owner = self._stop = self._manager = None
            if owner is None or stop is None:
                return
            self.server.notifier.close()  # listen streams end with their final result, not a cut
            stop.set()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(owner, timeout=10)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await self.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _route_path(self, scope: Scope) -> str:
        path, root = str(scope.get("path", "")), str(scope.get("root_path", ""))
        if root and path.startswith(root):
            path = path[len(root) :]
        return "/" + path.strip("/")

    async def _admit(self, request: Request) -> None:
        guard = self.guard
        guard.check_host(request)
        guard.check_origin(request)
        await guard.authenticate(request)
        declared = request.headers.get("content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > guard.max_body_bytes:
            raise ChatRequestError(
                f"the request body is larger than {guard.max_body_bytes} bytes (the server's max_body_bytes)",
                status_code=413,
            )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        try:
            if self.path is not None and self._route_path(scope) != self.path:
                raise ChatRequestError(
                    f"no MCP endpoint at {scope.get('path')!r} (it is {self.path!r})", status_code=404
                )
            if request.method == "OPTIONS":
                await self.guard.preflight(request, "GET, POST, DELETE, OPTIONS")(scope, receive, send)
                return
            await self._admit(request)
        except ChatRequestError as exc:
            response = JSONResponse(exc.to_dict(), status_code=exc.status_code, headers=exc.headers or None)
            await response(scope, receive, send)
            return
        await self.start()
        manager = self._manager
        assert manager is not None
        cors = self.guard.cors_headers(request)

        async def send_with_cors(message: Message) -> None:
            if cors and message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.extend((k.encode(), v.encode()) for k, v in cors.items())
                message = {**message, "headers": headers}
            await send(message)

        await manager.handle_request(scope, receive, send_with_cors)
