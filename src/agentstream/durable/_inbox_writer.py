"""`InboxWriter`: a server's side of the inbox, on psycopg connections of its event loop."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import psycopg

from ._inbox import PUT, TAKE_BACK

__all__ = ["InboxWriter"]


class InboxWriter:
    """`put` and `take_back` on at most ``pool_size`` psycopg connections of the running event loop:
    a job costs one statement, one round trip and no thread hop (SQLAlchemy in a thread cost a
    server more than the rest of its hand-over). A request waits for a free connection and opens
    one when none is idle; the caller bounds the whole (``QueuedRunner._bounded``). A connection
    found broken (PostgreSQL restarted since it was used) is dropped and the statement sent on
    another: it never reached a server, so it runs once; checking each connection before use
    instead would cost every job a round trip. Nothing reconnects in the background: after an
    outage the next request connects, at once."""

    def __init__(self, database_url: str, *, pool_size: int, timeout_sec: float) -> None:
        self._url = database_url
        self._size = pool_size
        self._connect_timeout = max(1, int(timeout_sec))
        self._idle: list[psycopg.AsyncConnection[Any]] = []
        self._slots: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _slots_here(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._slots is None or self._loop is not loop:  # connections belong to one event loop
            self._idle, self._slots, self._loop = [], asyncio.Semaphore(self._size), loop
        return self._slots

    async def _execute(self, query: str, params: tuple[Any, ...]) -> int:
        """``query``'s row count; sent again on another connection while the one it went on is broken."""
        async with self._slots_here():
            while True:
                reused = bool(self._idle)
                conn = self._idle.pop() if reused else await self._connect()
                try:
                    count = (await conn.execute(query, params)).rowcount
                except psycopg.OperationalError:
                    await conn.close()
                    if reused and conn.broken:
                        continue  # stale: another (idle, or new) connection
                    raise
                except BaseException:
                    await conn.close()
                    raise
                self._idle.append(conn)
                return count

    async def _connect(self) -> psycopg.AsyncConnection[Any]:
        return await psycopg.AsyncConnection.connect(
            self._url,
            autocommit=True,
            connect_timeout=self._connect_timeout,
            application_name="agentstream_server",
            prepare_threshold=0,  # two statements, prepared once per connection
        )

    async def put(self, kind: str, job: Mapping[str, Any]) -> None:
        """Hand ``job`` over (one statement); a job already waiting is not added twice."""
        await self._execute(PUT, (job["stream_id"], kind, json.dumps(job)))

    async def take_back(self, stream_id: str) -> bool:
        """Remove a job no worker has claimed yet (`take_back`); whether it was still waiting."""
        return await self._execute(TAKE_BACK, (stream_id,)) > 0

    def close(self) -> None:
        """Close the idle connections (on their event loop; gone with it if it is closed)."""
        idle, loop, self._idle, self._slots = self._idle, self._loop, [], None
        if not idle or loop is None or loop.is_closed():
            return

        async def close_all() -> None:
            for conn in idle:
                await conn.close()

        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            _closing.add(task := loop.create_task(close_all()))
            task.add_done_callback(_closing.discard)
        elif loop.is_running():
            asyncio.run_coroutine_threadsafe(close_all(), loop)


_closing: set[asyncio.Task[None]] = set()
