"""The run's time: timestamps, the pause after a rate-limited step and the three timeout timers.

Everything the loop reads or waits on goes through one `LoopClock` (``now_ms`` and
``sleep``), so a test passes a fake clock's methods and runs on virtual time. The timers are tasks
sleeping on that clock (not ``loop.call_later``) for the same reason.

``model_settings.timeout`` (``total_ms``, ``step_ms``, ``first_chunk_ms``; Mastra's camelCase names
accepted): the total timer spans the run, the step timer one model call, the first-chunk timer the
wait for that call's first part. A fired step / first-chunk timer ends the step with an error and
the run goes on as after any step error; a fired total timer fails the run without ``step-finish`` /
``finish`` (spec §4.6).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._abort import AbortController, AbortError, AbortSignal, until_aborted
from ..chunks import UNSET

__all__ = ["Deadlines", "LoopClock", "StepDeadline", "StepTimeoutError", "pause"]


class StepTimeoutError(TimeoutError):
    name = "TimeoutError"


def _wall_ms() -> float:
    return time.time() * 1000.0


@dataclass(frozen=True)
class LoopClock:
    """Where a run reads the time (``now_ms``: timestamps) and waits (``sleep``: timers, pauses)."""

    now_ms: Callable[[], float] = _wall_ms
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


async def pause(sleep: Callable[[float], Awaitable[None]], seconds: float, signal: AbortSignal) -> None:
    """``await sleep(seconds)``, cut short (without raising) when ``signal`` fires."""
    if signal.aborted:
        return
    with contextlib.suppress(AbortError):
        await until_aborted(sleep(seconds), signal)


def _ms(timeout: Mapping[str, Any], snake: str, camel: str) -> Any:
    return timeout.get(snake, timeout.get(camel)) or None


class _Timer:
    """Aborts ``ctrl`` with ``reason`` after ``ms`` on ``sleep``'s clock, unless cancelled first."""

    __slots__ = ("_task",)

    def __init__(
        self, sleep: Callable[[float], Awaitable[None]], ms: Any, ctrl: AbortController, reason: BaseException
    ) -> None:
        async def fire() -> None:
            await sleep(ms / 1000)
            ctrl.abort(reason)

        self._task = asyncio.ensure_future(fire())

    def cancel(self) -> None:
        self._task.cancel()


class StepDeadline:
    """One model call's timers; ``signal`` fires on user abort, total, step or first-chunk timeout."""

    def __init__(self, deadlines: Deadlines, step_ms: Any, first_ms: Any) -> None:
        self._deadlines = deadlines
        self.ctrl = AbortController()
        sleep = deadlines.clock.sleep
        self.signal = AbortSignal.any([deadlines.user_signal, deadlines.total.signal, self.ctrl.signal])
        self._step = (
            _Timer(sleep, step_ms, self.ctrl, StepTimeoutError(f"step timeout of {step_ms} ms exceeded"))
            if step_ms
            else None
        )
        self._first = (
            _Timer(sleep, first_ms, self.ctrl, StepTimeoutError(f"no first chunk within {first_ms} ms"))
            if first_ms
            else None
        )

    def first_chunk_arrived(self) -> None:
        if self._first is not None:
            self._first.cancel()
            self._first = None

    def close(self) -> None:
        self.first_chunk_arrived()
        if self._step is not None:
            self._step.cancel()
            self._step = None

    def classify(self, exc: BaseException) -> tuple[bool, BaseException | None, Any]:
        """``(aborted, timed_out, error)`` for an exception out of the model stream.

        The user's abort wins; a fired step / first-chunk / total timeout makes it a timeout (the
        exception itself if it is a ``TimeoutError``, else the timer's reason); anything else is a
        step error (``UNSET`` when there is none).
        """
        if self._deadlines.user_signal.aborted:
            return True, None, UNSET
        total = self._deadlines.total
        if self.ctrl.signal.aborted or total.signal.aborted:
            return False, exc if isinstance(exc, TimeoutError) else _timeout_reason(self.ctrl, total), UNSET
        return False, None, exc


class Deadlines:
    """The run's timers (``model_settings.timeout``) on ``clock``; `close` cancels them."""

    def __init__(self, timeout: Mapping[str, Any] | None, clock: LoopClock, user_signal: AbortSignal) -> None:
        timeout = timeout or {}
        self.clock = clock
        self.user_signal = user_signal
        self.total = AbortController()
        total_ms = _ms(timeout, "total_ms", "totalMs")
        self._step_ms = _ms(timeout, "step_ms", "stepMs")
        self._first_ms = _ms(timeout, "first_chunk_ms", "firstChunkMs")
        self._total = (
            _Timer(
                clock.sleep,
                total_ms,
                self.total,
                StepTimeoutError(f"total timeout of {total_ms} ms exceeded"),
            )
            if total_ms
            else None
        )

    @property
    def total_expired(self) -> bool:
        return self.total.signal.aborted

    def step(self) -> StepDeadline:
        """Start one model call's timers."""
        return StepDeadline(self, self._step_ms, self._first_ms)

    def close(self) -> None:
        if self._total is not None:
            self._total.cancel()
            self._total = None


def _timeout_reason(*controllers: AbortController) -> BaseException:
    for ctrl in controllers:
        if ctrl.signal.aborted and isinstance(ctrl.signal.reason, BaseException):
            return ctrl.signal.reason
    return StepTimeoutError("timed out")
