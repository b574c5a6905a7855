"""AbortController / AbortSignal: the cancellation handle an agent run shares with models and tools.

Mirrors the web platform's pair (which Mastra passes everywhere as ``abortSignal``) so that one
``controller.abort()`` reaches the provider request, running tools and the stream consumer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

__all__ = ["AbortController", "AbortError", "AbortSignal"]


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
