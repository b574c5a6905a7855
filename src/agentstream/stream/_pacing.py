"""``pace``: `smooth_stream`'s default pause, one timer for every stream of a loop pausing as long.

``await pace(seconds)`` returns after at least ``seconds`` on the running loop's clock, as
``asyncio.sleep`` does (Mastra's ``delay(delayInMs)``, a ``setTimeout``). Every pause of a loop with
the same length waits in one FIFO lane: deadlines are ``loop.time() + seconds`` taken in call
order, so they come out of the lane sorted, and one loop timer (for the lane's first deadline)
serves them all. ``asyncio.sleep`` costs a ``TimerHandle``, a push and a pop on the loop's heap
(Python-level comparisons, log n of them with n streams pausing) and a cancel per pause; with 300
chats paced a word at a time that was several microseconds per word. Node groups its timers by
duration in the same way.

A pause of 0 or less is ``asyncio.sleep``'s (a bare scheduler yield); a cancelled pause's waiter
is skipped when its deadline comes.
"""

from __future__ import annotations

import asyncio
import collections
import time
import weakref
from collections.abc import Awaitable
from typing import Any

__all__ = ["pace"]

# asyncio runs a timer when it is due within the clock's resolution; a lane does the same, so a
# deadline the loop's timer fired for is never found "not yet due" (which would spin).
_RESOLUTION = time.get_clock_info("monotonic").resolution
_LONGEST = 86_400.0  # longer pauses go to asyncio.sleep (no lane is kept for them)


class _Lane:
    """The pauses of one loop with one length, in deadline order, and the timer of the first."""

    __slots__ = ("__weakref__", "delay", "loop", "queue", "timer")

    def __init__(self, loop: asyncio.AbstractEventLoop, delay: float) -> None:
        self.loop = loop
        self.delay = delay
        self.queue: collections.deque[tuple[float, asyncio.Future[None]]] = collections.deque()
        self.timer: asyncio.TimerHandle | None = None

    def wait(self) -> asyncio.Future[None]:
        loop = self.loop
        waiter: asyncio.Future[None] = loop.create_future()
        deadline = loop.time() + self.delay
        self.queue.append((deadline, waiter))
        if self.timer is None:
            self.timer = loop.call_at(deadline, self._fire)
        return waiter

    def _fire(self) -> None:
        queue = self.queue
        due = self.loop.time() + _RESOLUTION
        while queue and queue[0][0] <= due:
            waiter = queue.popleft()[1]
            if not waiter.done():  # a cancelled pause
                waiter.set_result(None)
        self.timer = self.loop.call_at(queue[0][0], self._fire) if queue else None


# Weak: a lane lives while its timer is pending (the loop holds it) or a pause is being taken; a
# closed loop's lanes go with it. Keyed by the loop's id and checked against the lane's loop (a
# new loop may reuse a dead one's id).
_LANES: weakref.WeakValueDictionary[tuple[int, float], _Lane] = weakref.WeakValueDictionary()


def pace(seconds: float) -> Awaitable[Any]:
    """Wait ``seconds`` on the running loop's clock (see the module); the awaitable must be awaited
    in the loop that called this."""
    if not 0 < seconds <= _LONGEST:
        return asyncio.sleep(seconds)
    loop = asyncio.get_running_loop()
    key = (id(loop), seconds)
    lane = _LANES.get(key)
    if lane is None or lane.loop is not loop:
        lane = _LANES[key] = _Lane(loop, seconds)
    return lane.wait()  # the lane's pending timer keeps it alive until this waiter is due
