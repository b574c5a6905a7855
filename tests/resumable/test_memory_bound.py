"""`MemoryStreamStore(max_bytes=...)`: a total size bound, the longest finished answers evicted
first, running answers never (issue 22, item 8)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from agentstream.resumable import DEFAULT_MAX_BYTES, MemoryStreamStore

KB = b"x" * 1000


async def _answer(store: MemoryStreamStore, chat: str, kilobytes: int, *, finish: bool = True) -> str:
    stream_id = await store.start(chat, owner=None)
    await store.append(stream_id, *([KB] * kilobytes))
    if finish:
        await store.finish(stream_id)
    return stream_id


async def _kept(store: MemoryStreamStore, stream_id: str) -> bool:
    try:
        await store.length(stream_id)
    except LookupError:
        return False
    return True


async def test_the_longest_finished_answers_go_first_and_the_total_fits() -> None:
    store = MemoryStreamStore(max_bytes=10_000)
    first = await _answer(store, "a", 4)
    second = await _answer(store, "b", 4)
    assert store.size == 8_000
    third = await _answer(store, "c", 4)  # 12,000 > 10,000: the first finished goes
    assert [await _kept(store, s) for s in (first, second, third)] == [False, True, True]
    assert store.size == 8_000 <= store.max_bytes
    assert [chunk async for chunk in store.read(second)] == [KB] * 4  # what is kept is whole


async def test_a_running_answer_is_never_evicted_finished_ones_are() -> None:
    store = MemoryStreamStore(max_bytes=10_000)
    done = await _answer(store, "a", 3)
    running = await _answer(store, "b", 5, finish=False)
    await store.append(running, *([KB] * 4))  # 12,000: the finished one goes, not the running one
    assert not await _kept(store, done)
    assert await store.length(running) == 9
    assert (await store.active("b")) is not None


async def test_running_answers_alone_past_the_bound_are_kept_whole_and_evicted_as_they_finish(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = MemoryStreamStore(max_bytes=5_000)
    with caplog.at_level(logging.WARNING, logger="agentstream.resumable"):
        one = await _answer(store, "a", 4, finish=False)
        two = await _answer(store, "b", 4, finish=False)  # 8,000 > 5,000, nothing finished to evict
    assert store.size == 8_000
    assert await store.length(one) == await store.length(two) == 4
    assert "kept whole until they finish" in caplog.text
    await store.finish(one)  # still 8,000: the finished one goes at once
    assert not await _kept(store, one) and await _kept(store, two)
    assert store.size == 4_000
    await store.finish(two)
    assert await _kept(store, two) and store.size == 4_000  # fits now: kept for resumes


async def test_a_reader_following_an_answer_evicted_at_its_finish_reads_it_to_the_end() -> None:
    store = MemoryStreamStore(max_bytes=5_000)
    stream_id = await _answer(store, "a", 3, finish=False)
    got: list[bytes] = []

    async def follow() -> None:
        async for chunk in store.read(stream_id):
            got.append(chunk)
            await asyncio.sleep(0)

    reader = asyncio.create_task(follow())
    await asyncio.sleep(0)
    await store.append(stream_id, *([KB] * 4))  # 7,000 while running: kept
    await store.finish(stream_id)  # evicted at once: 7,000 > 5,000
    await asyncio.wait_for(reader, 2)
    assert got == [KB] * 7
    assert not await _kept(store, stream_id) and store.size == 0


def test_max_bytes_defaults_to_128_mib_and_refuses_nonsense() -> None:
    assert MemoryStreamStore().max_bytes == DEFAULT_MAX_BYTES == 128 * 1024 * 1024
    for bad in (0, -1, 1.5, True, "1"):
        with pytest.raises(ValueError, match="max_bytes"):
            MemoryStreamStore(max_bytes=bad)  # type: ignore[arg-type]


async def test_three_20_mb_answers_are_not_all_kept() -> None:
    """The probe's case: three 20 MB answers used to be held 600 s (198 MiB)."""
    store = MemoryStreamStore(max_bytes=32 * 1024 * 1024)
    big = b"y" * (1024 * 1024)
    for chat in ("a", "b", "c"):
        stream_id = await store.start(chat, owner=None)
        await store.append(stream_id, *([big] * 20))
        await store.finish(stream_id)
    assert store.size <= store.max_bytes
