"""``full_stream`` delivery with 1 and 10 consumers vs a bare async generator passing the same chunks.

Run: ``make bench`` or ``.venv/bin/python bench/bench_output.py [--cold] [--compare SRC]`` (see
``bench/_compare.py``). Figures are µs per chunk of CPU time, ratios are the bare generator's time
over ours (1.0 = as fast as the bare generator). Two sources: one that never waits (every chunk is
in the log before a consumer runs: replay) and a live one that hands the event loop over every 16
chunks, as a provider's network reads do (consumers follow, woken once per batch).

The floor for ten consumers is ten bare generators, one per consumer: every delivery is one step
of an async iterator, and none is cheaper than a bare generator's (``asyncio`` offers nothing
below it), so ten consumers cannot beat ~0.09x of one bare generator per chunk; the figure to
watch is how close ours is to that floor.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _compare import Figures, cpu_time, main

from agentstream.chunks import Chunk, ChunkFrom, TextDelta, TextDeltaPayload
from agentstream.stream import ModelOutput

N = 200_000
BATCH = 16


def make_chunks(n: int) -> list[Chunk]:
    return [
        TextDelta(run_id="r", from_=ChunkFrom.AGENT, payload=TextDeltaPayload(id="t", text="tok "))
        for _ in range(n)
    ]


async def source(chunks: list[Chunk]) -> AsyncIterator[Chunk]:
    for chunk in chunks:
        yield chunk


async def live_source(chunks: list[Chunk]) -> AsyncIterator[Chunk]:
    for i, chunk in enumerate(chunks):
        if i % BATCH == 0:
            await asyncio.sleep(0)
        yield chunk


async def bare(chunks: list[Chunk]) -> float:
    start = cpu_time()
    count = 0
    async for _ in source(chunks):
        count += 1
    assert count == len(chunks)
    return cpu_time() - start


async def bare_readers(chunks: list[Chunk], readers: int) -> float:
    """The floor: each reader iterates a bare generator of its own."""
    start = cpu_time()

    async def consume() -> int:
        return sum([1 async for _ in source(chunks)])

    await asyncio.gather(*(consume() for _ in range(readers)))
    return cpu_time() - start


async def through_output(chunks: list[Chunk], consumers: int, *, live: bool = False) -> float:
    start = cpu_time()
    output = ModelOutput((live_source if live else source)(chunks), run_id="r")

    async def consume() -> int:
        return sum([1 async for _ in output.full_stream])

    counts = await asyncio.gather(*(consume() for _ in range(consumers)))
    assert counts == [len(chunks)] * consumers
    return cpu_time() - start


async def producer_only(chunks: list[Chunk]) -> float:
    output = ModelOutput(source(chunks), run_id="r")
    start = cpu_time()
    await output.consume_stream()
    return cpu_time() - start


async def replay_only(chunks: list[Chunk]) -> float:
    output = ModelOutput(source(chunks), run_id="r")
    await output.consume_stream()
    start = cpu_time()
    assert sum([1 async for _ in output.full_stream]) == len(chunks)
    return cpu_time() - start


async def _measure(cold: bool) -> Figures:
    chunks = make_chunks(N)
    reps = 1 if cold else 3
    f: Figures = {}

    async def best(name: str, make: object) -> None:
        assert callable(make)
        f[name] = min([await make() for _ in range(reps)]) / N * 1e6

    await best("bare async generator [reference]", lambda: bare(chunks))
    await best("ten bare generators, one per reader [floor]", lambda: bare_readers(chunks, 10))
    await best("full_stream, 1 consumer", lambda: through_output(chunks, 1))
    await best("full_stream, 10 consumers", lambda: through_output(chunks, 10))
    await best("full_stream, 1 consumer, live source", lambda: through_output(chunks, 1, live=True))
    await best("full_stream, 10 consumers, live source", lambda: through_output(chunks, 10, live=True))
    await best("  of which: producer + accounting alone", lambda: producer_only(chunks))
    await best("  of which: one consumer replaying the log", lambda: replay_only(chunks))
    return f


def measure(cold: bool) -> Figures:
    return asyncio.run(_measure(cold))


def report(f: Figures) -> list[str]:
    ref = f["bare async generator [reference]"]
    lines = [f"full_stream delivery of {N:,} text-delta chunks; µs per chunk (CPU); ratio = reference / ours"]
    lines += [f"{k:<48} {v:8.3f} µs  {ref / v:6.2f}x reference" for k, v in f.items()]
    ten = f["full_stream, 10 consumers"]
    lines.append(
        f"goal: 10 consumers ≥ 0.2x reference: {'met' if ref / ten >= 0.2 else 'NOT met'} ({ref / ten:.2f}x)"
    )
    return lines


if __name__ == "__main__":
    main(__file__, measure, report)
