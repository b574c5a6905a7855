"""`Jobs`, the one job service: claim → produce → write → finish, cancel and follow, the same for
every kind of job; the jobs running here belong to the `Jobs` instance, not to the process."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agentstream.ai_sdk import (
    STORE_FAILED,
    TURN_CANCELLED,
    Jobs,
    StoredUIChunk,
    leg_cancelled,
    run_workflow_job,
    write_chunks,
    write_job,
)
from agentstream.resumable import IN_PROCESS_LEASE_S, MemoryStreamStore, StreamStore, WorkflowJob


async def _chunks(store: StreamStore, stream_id: str) -> list[dict[str, Any]]:
    return [json.loads(raw) async for raw in store.read(stream_id)]


async def _followed(chunks: AsyncIterator[Any]) -> list[dict[str, Any]]:
    return [json.loads(c.data) if isinstance(c, StoredUIChunk) else c async for c in chunks]


class Gate:
    """A producer that yields ``start``, waits to be let go (or aborted), then ``finish``."""

    def __init__(self) -> None:
        self.go = asyncio.Event()
        self.aborted = False

    def abort(self) -> None:
        self.aborted = True
        self.go.set()

    async def chunks(self) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "start"}
        await self.go.wait()
        yield {"type": "abort"} if self.aborted else {"type": "text-delta", "id": "0", "delta": "hi"}
        yield {"type": "finish"}


async def test_a_job_run_here_is_claimed_written_finished_and_followed() -> None:
    jobs = Jobs(MemoryStreamStore())
    stream_id = await jobs.claim("chat:c1", None)
    gate = Gate()
    answer = jobs.run_here("chat:c1", stream_id, gate.chunks(), gate.abort)
    assert jobs.local("chat:c1") is not None and jobs.local("chat:c1").stream_id == stream_id  # type: ignore[union-attr]
    gate.go.set()
    assert [c["type"] for c in await _followed(answer)] == ["start", "text-delta", "finish"]
    for _ in range(100):  # the writer's task ends a few steps after the stream's end
        if jobs.local("chat:c1") is None:
            break
        await asyncio.sleep(0)
    assert jobs.local("chat:c1") is None
    assert await jobs.require_store().active("chat:c1") is None


async def test_the_jobs_running_here_belong_to_their_service_not_to_the_process() -> None:
    # Two apps over one store: each reaches its own jobs only (the registry was a module global
    # keyed by id(store) before).
    store = MemoryStreamStore()
    mine, theirs = Jobs(store), Jobs(store)
    stream_id = await mine.claim("chat:c1", None)
    gate = Gate()
    answer = mine.run_here("chat:c1", stream_id, gate.chunks(), gate.abort)
    assert theirs.local("chat:c1") is None
    assert not await theirs.cancel(
        "chat:c1", stream_id, None, ending=TURN_CANCELLED
    )  # unreachable from there
    assert not gate.aborted
    assert await mine.cancel("chat:c1", stream_id, None, ending=TURN_CANCELLED)
    assert gate.aborted
    assert [c["type"] for c in await _followed(answer)] == ["start", "abort", "finish"]


async def test_a_job_that_never_started_is_ended_with_its_kinds_ending() -> None:
    class NeverStarted:
        async def cancel(self, stream_id: str) -> bool:
            return False

    jobs = Jobs(MemoryStreamStore())
    turn = await jobs.claim("chat:c1", None)
    leg = await jobs.claim("workflow:w:r1", None)
    await jobs.cancel("chat:c1", turn, NeverStarted(), ending=TURN_CANCELLED)
    ended: list[str] = []

    async def mark() -> None:
        ended.append("snapshot")

    await jobs.cancel(
        "workflow:w:r1", leg, NeverStarted(), ending=leg_cancelled("w", "r1"), before_ending=mark
    )
    assert [c["type"] for c in await _chunks(jobs.require_store(), turn)] == ["start", "abort", "finish"]
    leg_chunks = await _chunks(jobs.require_store(), leg)
    assert [c["type"] for c in leg_chunks] == ["start", "data-workflow", "finish"]
    assert leg_chunks[1]["data"]["status"] == "canceled" and ended == ["snapshot"]


async def test_a_failed_dispatch_releases_the_claim() -> None:
    jobs = Jobs(MemoryStreamStore())
    stream_id = await jobs.claim("chat:c1", None)

    async def refused() -> None:
        raise RuntimeError("the queue is away")

    with pytest.raises(RuntimeError, match="the queue is away"):
        await jobs.hand_off(stream_id, refused())
    assert await jobs.require_store().active("chat:c1") is None
    await jobs.claim("chat:c1", "someone else")  # the chat is free again


class FailingStore(MemoryStreamStore):
    """Refuses the writes of a job's answer after its first chunk (not the error ending)."""

    async def append(self, stream_id: str, *chunks: bytes, at: int | None = None) -> None:
        if (at or 0) >= 1 and b'"error"' not in chunks[0]:
            raise ConnectionError("the store went away")
        await super().append(stream_id, *chunks, at=at)


async def _slow(chunks: list[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    for chunk in chunks:
        yield chunk
        await asyncio.sleep(0)  # one write per chunk


@pytest.mark.parametrize("on_worker", [True, False])
async def test_a_store_failure_ends_any_kind_of_job_with_the_error_that_says_so(on_worker: bool) -> None:
    store = FailingStore()
    stream_id = await store.start("chat:c1", owner=None)
    stopped: list[bool] = []
    produced = [{"type": "start"}, {"type": "text-delta", "id": "0", "delta": "a"}, {"type": "finish"}]
    kept = await write_job(
        store,
        stream_id,
        _slow(produced),
        lease_s=IN_PROCESS_LEASE_S,
        on_worker=on_worker,
        stop=lambda: stopped.append(True),
    )
    assert kept and stopped == [True]
    assert await _chunks(store, stream_id) == [
        {"type": "start"},
        {"type": "error", "errorText": STORE_FAILED},
    ]


async def test_a_workflow_leg_whose_store_fails_ends_as_a_chat_turn_does() -> None:
    # One writer for both kinds: a leg's failed recording now ends with the error chunk too (its
    # own copy of the writer let the failure escape and left the stream to its lease).
    from agentstream import Mastra
    from agentstream.workflows import create_step, create_workflow

    async def hello(context: Any) -> Any:
        return {"greeting": "hello"}

    workflow = create_workflow(id="w").then(create_step(id="hello", execute=hello)).commit()
    mastra = Mastra(workflows={"w": workflow})
    store = FailingStore()
    stream_id = await store.start("workflow:w:r1", owner=None)
    spec: Any = {
        "workflow_id": "w",
        "run_id": "r1",
        "resource_id": None,
        "resume": False,
        "input_data": {},
        "initial_state": None,
        "resume_data": None,
        "step": None,
        "options": {
            "version": "v5",
            "include_text_stream_parts": True,
            "send_reasoning": False,
            "send_sources": False,
        },
    }
    await run_workflow_job(mastra, store, WorkflowJob(spec=spec, stream_id=stream_id))
    written = await _chunks(store, stream_id)
    assert written[-1] == {"type": "error", "errorText": STORE_FAILED}


async def test_a_worker_cancelled_mid_job_leaves_the_stream_for_a_takeover() -> None:
    store = MemoryStreamStore()
    worker_stream = await store.start("chat:c1", owner=None)
    here_stream = await store.start("chat:c2", owner=None)
    gates = Gate(), Gate()
    on_worker = asyncio.create_task(
        write_job(store, worker_stream, gates[0].chunks(), lease_s=IN_PROCESS_LEASE_S, on_worker=True)
    )
    here = asyncio.create_task(
        write_job(store, here_stream, gates[1].chunks(), lease_s=IN_PROCESS_LEASE_S, on_worker=False)
    )
    while await store.length(worker_stream) == 0 or await store.length(here_stream) == 0:
        await asyncio.sleep(0)
    on_worker.cancel()
    here.cancel()
    for task in (on_worker, here):
        with pytest.raises(asyncio.CancelledError):
            await task
    assert await store.active("chat:c1") is not None  # another worker runs it again
    assert await store.active("chat:c2") is None  # its readers see the end


def test_a_jobs_without_a_store_names_where_one_was_needed() -> None:
    with pytest.raises(ValueError, match=r"resume_route needs a Jobs with a stream store"):
        Jobs().require_store("resume_route")


async def test_an_in_process_store_holds_each_chunk_before_the_next_is_produced() -> None:
    # Readers of a stream in this process see a chunk as soon as it is produced: no batch waits
    # for a second task to write it.
    store = MemoryStreamStore()
    stream_id = await store.start("chat-a", owner=None)
    lengths: list[int] = []

    async def chunks() -> AsyncIterator[Any]:
        for i in range(3):
            lengths.append(await store.length(stream_id))
            yield {"type": "text-delta", "id": "t1", "delta": f"w{i} "}

    assert await write_chunks(store, stream_id, chunks()) == 3
    assert lengths == [0, 1, 2]
    await store.finish(stream_id)
    stored = [json.loads(c) async for c in store.read(stream_id)]
    assert [c["delta"] for c in stored] == ["w0 ", "w1 ", "w2 "]


async def test_positions_follow_at_in_an_in_process_store() -> None:
    # A re-run from chunk 1 skips what is there (the chunk already written is not written twice).
    store = MemoryStreamStore()
    stream_id = await store.start("chat-a", owner=None)
    await store.append(stream_id, b'{"type":"start"}', b'{"type":"start-step"}')

    async def chunks() -> AsyncIterator[Any]:
        yield {"type": "start-step"}
        yield {"type": "finish-step"}

    assert await write_chunks(store, stream_id, chunks(), at=1) == 2
    assert await store.length(stream_id) == 3
