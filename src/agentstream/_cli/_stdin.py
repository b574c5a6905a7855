"""Lines of standard input, read by the event loop itself: no reader thread to outlive the process.

A daemon thread blocked in ``sys.stdin.buffer.readline()`` holds the buffer's lock at interpreter
exit, which aborts the process (``Fatal Python error: _enter_buffered_busy``) when the filter stops
early (a bad line) while its input is still open. Here the loop waits until the descriptor is
readable and then reads what is there with one ``os.read``, which does not block; a regular file
or ``/dev/null`` (which the selector cannot watch) never makes a read wait, so it is read directly.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator

__all__ = ["read_lines"]

_SIZE = 1 << 16


async def read_lines(fd: int) -> AsyncIterator[bytes]:
    """The lines of file descriptor ``fd`` (each with its ``\\n``; the last may lack one) as they arrive."""
    pending = bytearray()
    async for data in _reads(fd):
        pending += data
        start = 0
        while (end := pending.find(b"\n", start)) >= 0:
            yield bytes(pending[start : end + 1])
            start = end + 1
        del pending[:start]
    if pending:
        yield bytes(pending)


def _settle(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)


async def _reads(fd: int) -> AsyncIterator[bytes]:
    loop = asyncio.get_running_loop()
    while True:
        ready: asyncio.Future[None] = loop.create_future()
        try:
            loop.add_reader(fd, _settle, ready)
        except NotImplementedError:  # pragma: no cover - an event loop without add_reader (Windows)
            data = await asyncio.to_thread(os.read, fd, _SIZE)  # joined by asyncio.run at exit
        except OSError:  # a regular file or /dev/null: reading never waits
            data = os.read(fd, _SIZE)
        else:
            # Watch only while waiting: level-triggered readiness would otherwise wake the loop
            # on every turn while the consumer (e.g. a smoothing delay) is busy elsewhere.
            try:
                await ready
            finally:
                loop.remove_reader(fd)
            try:
                data = os.read(fd, _SIZE)
            except BlockingIOError:  # pragma: no cover - readiness was spurious
                continue
        if not data:
            return
        yield data
