"""The abort helpers every layer waits with: AbortableQueue, abortable, until_aborted."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from agentstream._abort import AbortableQueue, AbortController, AbortError, abortable, until_aborted


async def test_queue_drains_what_came_before_the_end() -> None:
    controller = AbortController()
    queue: AbortableQueue[int] = AbortableQueue(controller.signal)
    queue.put(1)
    queue.put(2)
    controller.abort()
    queue.put(3)  # after the abort: not read
    assert [i async for i in queue] == [1, 2] and queue.aborted
    assert controller.signal._listeners == []

    closed: AbortableQueue[str] = AbortableQueue(AbortController().signal)
    closed.put("a")
    closed.close()
    assert [i async for i in closed] == ["a"] and not closed.aborted


async def test_close_detaches_from_the_signal() -> None:
    controller = AbortController()
    queue: AbortableQueue[int] = AbortableQueue(controller.signal)
    queue.put(1)
    queue.close()
    assert controller.signal._listeners == []  # even if nobody reads
    controller.abort()
    assert [i async for i in queue] == [1] and not queue.aborted


async def test_abortable_interrupts_a_blocked_read_and_closes_the_source() -> None:
    controller = AbortController()
    closed = asyncio.Event()

    async def source() -> AsyncIterator[int]:
        try:
            yield 1
            await asyncio.Event().wait()  # a read that never returns
            yield 2
        finally:
            closed.set()

    got = []
    async for item in abortable(source(), controller.signal):
        got.append(item)
        asyncio.get_running_loop().call_soon(controller.abort)
    assert got == [1] and controller.signal.aborted and closed.is_set()
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_abortable_raises_the_source_error_after_its_items() -> None:
    async def source() -> AsyncIterator[int]:
        yield 1
        raise ValueError("upstream broke")

    got = []
    with pytest.raises(ValueError, match="upstream broke"):
        async for item in abortable(source(), AbortController().signal):
            got.append(item)
    assert got == [1]


async def test_abortable_closed_early_by_its_consumer_leaves_no_task() -> None:
    async def endless() -> AsyncIterator[int]:
        n = 0
        while True:
            n += 1
            yield n
            await asyncio.sleep(0)

    stream = abortable(endless(), AbortController().signal)
    assert await stream.__anext__() == 1
    await stream.aclose()  # type: ignore[attr-defined]
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_until_aborted() -> None:
    assert await until_aborted(asyncio.sleep(0, "done"), None) == "done"
    assert await until_aborted(asyncio.sleep(0, "done"), AbortController().signal) == "done"
    controller = AbortController()
    asyncio.get_running_loop().call_soon(controller.abort, "stop")
    with pytest.raises(AbortError, match="stop"):
        await until_aborted(asyncio.Event().wait(), controller.signal)
    assert asyncio.all_tasks() == {asyncio.current_task()}
    pending = asyncio.sleep(0)
    with pytest.raises(AbortError):
        await until_aborted(pending, controller.signal)  # already aborted: not even started
    pending.close()
