"""AbortController / AbortSignal: the cancellation handle an agent run shares with models and tools.

Mirrors the web platform's pair (which Mastra passes everywhere as ``abortSignal``) so that one
``controller.abort()`` reaches the provider request, running tools and the stream consumer.
`AbortableQueue`, `abortable` and `until_aborted` are the ways the package waits on something while
an abort may end the wait (package-internal; not in ``agentstream.__all__``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import Any, Final, Generic, TypeVar

__all__ = [
    "AbortController",
    "AbortError",
    "AbortSignal",
    "AbortableQueue",
    "abortable",
    "reap",
    "until_aborted",
]

_T = TypeVar("_T")


class AbortError(Exception):
    """Raised by ``AbortSignal.throw_if_aborted`` once the signal has fired."""

    def __init__(self, reason: Any = None) -> None:
        super().__init__("This operation was aborted" if reason is None else str(reason))
        self.reason = reason


class AbortSignal:
    """Read side of an ``AbortController``. Safe to share between tasks of one event loop."""

    __slots__ = ("_aborted", "_event", "_listeners", "_reason")

    def __init__(self) -> None:
        self._aborted = False
        self._reason: Any = None
        self._event: asyncio.Event | None = None
        self._listeners: list[Callable[[Any], object]] = []

    @property
    def aborted(self) -> bool:
        """Whether the signal has fired."""
        return self._aborted

    @property
    def reason(self) -> Any:
        """Why the signal fired (`None` until it has)."""
        return self._reason

    def add_listener(self, callback: Callable[[Any], object]) -> Callable[[], None]:
        """Call ``callback(reason)`` once on abort (at once if already aborted). Returns a remover."""
        if self._aborted:
            callback(self._reason)
            return lambda: None
        self._listeners.append(callback)

        def remove() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)

        return remove

    async def wait(self) -> Any:
        """Wait until the signal fires; returns the reason."""
        if not self._aborted:
            if self._event is None:
                self._event = asyncio.Event()
            await self._event.wait()
        return self._reason

    def throw_if_aborted(self) -> None:
        """Raise `AbortError(reason)` if the signal has fired; otherwise do nothing."""
        if self._aborted:
            raise AbortError(self._reason)

    def _fire(self, reason: Any) -> None:
        if self._aborted:
            return
        self._aborted = True
        self._reason = reason
        if self._event is not None:
            self._event.set()
        listeners, self._listeners = self._listeners, []
        for callback in listeners:
            callback(reason)

    @classmethod
    def any(cls, signals: list[AbortSignal | None]) -> AbortSignal:
        """A signal that fires when the first of ``signals`` fires (``AbortSignal.any`` on the web)."""
        combined = cls()
        for signal in signals:
            if signal is not None:
                signal.add_listener(combined._fire)
        return combined


class AbortController:
    """Owns an ``AbortSignal`` and fires it with ``abort``."""

    __slots__ = ("signal",)

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: Any = None) -> None:
        """Fire the signal: every listener runs and waiters wake with `reason` (default: an `AbortError`)."""
        self.signal._fire(AbortError() if reason is None else reason)


_CLOSED: Final = object()
_ABORTED: Final = object()


class AbortableQueue(Generic[_T]):
    """Items put by producers (callbacks or tasks), read by one consumer until `close` or an abort.

    The reader gets every item put before the end, in order, then stops; `aborted` says whether
    ``signal`` ended it. The abort listener is registered at construction (so an abort while the
    consumer is busy elsewhere still counts) and removed by `close` or when the reader finishes.
    """

    __slots__ = ("_queue", "_remove", "aborted")

    def __init__(self, signal: AbortSignal | None = None) -> None:
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self.aborted = False
        self._remove = signal.add_listener(self._on_abort) if signal is not None else None

    def _on_abort(self, _reason: object) -> None:
        self._queue.put_nowait(_ABORTED)

    def put(self, item: _T) -> None:
        """Queue ``item`` for the reader (from a callback or another task; never blocks)."""
        self._queue.put_nowait(item)

    def close(self) -> None:
        """No more items: the reader ends once it has read what was put before (an abort after
        this no longer cuts it short)."""
        self._queue.put_nowait(_CLOSED)
        self._detach()

    def _detach(self) -> None:
        remove, self._remove = self._remove, None
        if remove is not None:
            remove()

    def qsize(self) -> int:
        """How many items (and end markers) wait for the reader."""
        return self._queue.qsize()

    def __aiter__(self) -> AbortableQueue[_T]:
        return self

    async def __anext__(self) -> _T:
        item = await self._queue.get()
        if item is _CLOSED or item is _ABORTED:
            self._queue.put_nowait(item)  # every later read ends too
            self.aborted = item is _ABORTED
            self._detach()
            raise StopAsyncIteration
        return item  # type: ignore[no-any-return]


async def abortable(source: AsyncIterable[_T], signal: AbortSignal) -> AsyncIterator[_T]:
    """``source``'s items, read in a task of their own so that ``signal`` ends the iteration at once,
    even while a read is blocked (the reader task is then cancelled and reaped).

    Check ``signal.aborted`` after the loop to tell an abort from the end of ``source``. An
    exception from ``source`` is raised here after the items before it. A task group cannot be held
    open across ``yield`` (the consumer may close this generator from another task), so the reader
    is one task that every exit path cancels and awaits.
    """
    queue: AbortableQueue[_T] = AbortableQueue(signal)
    failure: list[Exception] = []

    async def pump() -> None:
        try:
            async for item in source:
                queue.put(item)
        except Exception as exc:
            failure.append(exc)
        finally:
            queue.close()

    reader = asyncio.ensure_future(pump())
    stop = signal.add_listener(lambda _reason: reader.cancel())
    try:
        async for item in queue:
            yield item
        if failure and not queue.aborted:
            raise failure[0]
    finally:
        stop()
        queue.close()
        reader.cancel()
        await reap(reader)


async def until_aborted(aw: Awaitable[_T], signal: AbortSignal | None) -> _T:
    """Await ``aw``; if ``signal`` fires first, cancel it and raise `AbortError`."""
    if signal is None:
        return await aw
    signal.throw_if_aborted()
    task = asyncio.ensure_future(aw)
    waiter = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait((task, waiter), return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()  # it only waits on an Event: nothing to clean up, so it is not awaited
    if not task.done():
        task.cancel()
        await reap(task)
        raise AbortError(signal.reason)
    return task.result()


async def reap(task: asyncio.Future[Any]) -> None:
    """Wait for a cancelled helper task; never swallow a cancellation aimed at *our* task."""
    try:
        await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise
    except Exception:
        pass
