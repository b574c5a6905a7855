"""`pace`: ``asyncio.sleep``'s semantics on one timer per loop and pause length (virtual time)."""

from __future__ import annotations

import asyncio

import pytest

from agentstream.stream._pacing import pace

pytestmark = pytest.mark.looptime(noop_cycles=0)


async def test_each_pause_ends_its_own_length_after_it_began() -> None:
    loop = asyncio.get_running_loop()
    start = loop.time()
    ended: dict[str, float] = {}

    async def pauser(name: str, begin: float, seconds: float) -> None:
        await asyncio.sleep(begin)
        await pace(seconds)
        ended[name] = round(loop.time() - start, 6)

    await asyncio.gather(
        pauser("a", 0, 0.01),
        pauser("b", 0.003, 0.01),  # same lane, a later deadline
        pauser("c", 0.001, 0.02),  # another lane
        pauser("d", 0.004, 0.01),
    )
    assert ended == {"a": 0.01, "b": 0.013, "c": 0.021, "d": 0.014}


async def test_a_cancelled_pause_leaves_the_others_on_time() -> None:
    loop = asyncio.get_running_loop()
    start = loop.time()
    cancelled = asyncio.ensure_future(pace(0.01))
    kept = asyncio.ensure_future(pace(0.01))
    await asyncio.sleep(0)
    cancelled.cancel()
    await kept
    assert cancelled.cancelled() and round(loop.time() - start, 6) == 0.01


async def test_a_pause_of_zero_is_a_scheduler_yield() -> None:
    loop = asyncio.get_running_loop()
    ran: list[str] = []

    async def other() -> None:
        ran.append("other")

    start = loop.time()
    task = asyncio.ensure_future(other())
    await pace(0)
    assert ran == ["other"] and loop.time() == start
    await task
