"""A result that settles once and is awaited any number of times (Mastra's ``DelayedPromise``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from typing import Any, Generic, TypeVar

__all__ = ["Delayed"]

T = TypeVar("T")

_PENDING, _RESOLVED, _REJECTED = 0, 1, 2


class Delayed(Generic[T]):
    """Settles once; awaiting it first calls ``on_await`` (which starts the run lazily).

    No asyncio future exists until somebody awaits, so a rejection nobody reads is never
    reported as "exception was never retrieved".
    """

    __slots__ = ("_event", "_on_await", "_state", "_value")

    def __init__(self, on_await: Callable[[], None]) -> None:
        self._on_await = on_await
        self._state = _PENDING
        self._value: Any = None
        self._event: asyncio.Event | None = None

    @property
    def settled(self) -> bool:
        """Resolved or rejected already."""
        return self._state != _PENDING

    def resolve(self, value: T) -> None:
        """Settle with ``value`` (ignored once settled)."""
        if self._state == _PENDING:
            self._state, self._value = _RESOLVED, value
            self._wake()

    def reject(self, error: BaseException) -> None:
        """Settle with ``error``: awaiting raises it (ignored once settled)."""
        if self._state == _PENDING:
            self._state, self._value = _REJECTED, error
            self._wake()

    def _wake(self) -> None:
        if self._event is not None:
            self._event.set()

    def peek(self, default: Any = None) -> Any:
        """The resolved value, or ``default`` while pending or rejected."""
        return self._value if self._state == _RESOLVED else default

    async def _wait(self) -> T:
        self._on_await()
        if self._state == _PENDING:
            if self._event is None:
                self._event = asyncio.Event()
            await self._event.wait()
        if self._state == _REJECTED:
            raise self._value
        value: T = self._value
        return value

    def __await__(self) -> Generator[Any, None, T]:
        return self._wait().__await__()
