"""`ThreadHub`: a thread's chunks reach its subscribers only, a slow subscriber loses the oldest
chunks instead of holding the run, runs of one thread go one after the other, and abort stops the
active one (and only the expected one)."""

from __future__ import annotations

import asyncio
from typing import Any

from agentstream._abort import AbortController
from agentstream.mastra_api._threads import MAX_PENDING, ThreadHub


async def _take(follower: Any, n: int) -> list[Any]:
    return [await asyncio.wait_for(anext(follower), 5) for _ in range(n)]


async def test_chunks_reach_the_thread_s_subscribers_only() -> None:
    hub = ThreadHub()
    mine, other = hub.follow("a", "t1"), hub.follow("a", "t2")
    first = asyncio.ensure_future(anext(mine))
    elsewhere = asyncio.ensure_future(anext(other))
    await asyncio.sleep(0)  # both subscribed
    hub.publish("a", "t1", {"n": 1})
    hub.publish("b", "t1", {"n": "another agent's thread of the same id"})
    assert await asyncio.wait_for(first, 5) == {"n": 1}
    assert not elsewhere.done()
    elsewhere.cancel()
    await asyncio.gather(elsewhere, return_exceptions=True)
    await mine.aclose()
    await other.aclose()
    hub.publish("a", "t1", {"n": 2})  # nobody follows any more: dropped, no queue kept
    assert hub._subscribers == {}


async def test_a_full_subscriber_loses_the_oldest_chunks() -> None:
    hub = ThreadHub()
    follower = hub.follow("a", "t")
    started = asyncio.ensure_future(anext(follower))
    await asyncio.sleep(0)
    for n in range(MAX_PENDING + 10):
        hub.publish("a", "t", n)
    # the 10 oldest were dropped to make room: the reader starts at 10, in order, nothing lost after
    assert [await asyncio.wait_for(started, 5), *await _take(follower, 2)] == [10, 11, 12]
    await follower.aclose()


async def test_a_thread_runs_one_run_at_a_time_and_abort_stops_the_active_one() -> None:
    hub = ThreadHub()
    order: list[str] = []
    release = asyncio.Event()

    async def slow(controller: AbortController) -> None:
        order.append("first started")
        aborted = asyncio.Event()
        controller.signal.add_listener(lambda _reason: aborted.set())
        await asyncio.wait(
            [asyncio.ensure_future(aborted.wait()), asyncio.ensure_future(release.wait())],
            return_when=asyncio.FIRST_COMPLETED,
        )
        order.append("first aborted" if controller.signal.aborted else "first done")

    async def second(controller: AbortController) -> None:
        order.append("second started")

    hub.start(("a", "t"), "r1", slow)
    hub.start(("a", "t"), "r2", second)
    await asyncio.sleep(0.05)
    assert order == ["first started"]  # the second waits for the first
    assert hub.abort(("a", "t"), expected_run_id="r2") is False  # not the active run
    assert hub.abort(("a", "t")) is True
    for _ in range(100):
        if "second started" in order:
            break
        await asyncio.sleep(0.01)
    assert order == ["first started", "first aborted", "second started"]
    assert hub.abort(("a", "t")) is False  # nothing runs any more
