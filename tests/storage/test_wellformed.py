"""Lone UTF-16 surrogates in stored values, on every backend (``storage._wellformed``; PostgreSQL's
own escape in ``postgres.pg_json_text``): a message, a thread's title and metadata, a workflow
snapshot come back holding the same halves. And the storage copy of the helper writes the same
bytes as ``chunks.dumps_wellformed`` (the two exist because storage imports no other package)."""

from __future__ import annotations

import pytest

from agentstream.chunks import dumps_wellformed as chunks_dumps
from agentstream.chunks import loads_wellformed as chunks_loads
from agentstream.storage import BaseStore, MessageRecord, ThreadRecord
from agentstream.storage._wellformed import dumps_wellformed, loads_wellformed

HALVES = "cut \ud83d here, \ude00 there, a pair 😀, \\ud800 spelled, é"


@pytest.mark.parametrize(
    "value",
    [HALVES, {"t": HALVES, HALVES: [HALVES, 1.5, None]}, ["plain", {"x": "é 😀"}], "\ud800"],
)
def test_the_storage_copy_writes_the_chunks_bytes(value: object) -> None:
    assert dumps_wellformed(value) == chunks_dumps(value)
    assert loads_wellformed(dumps_wellformed(value)) == chunks_loads(chunks_dumps(value))


async def test_a_message_thread_and_snapshot_keep_their_halves(store: BaseStore) -> None:
    await store.save_thread(
        ThreadRecord(id="t-halves", resource_id="r", title="x", metadata={"note": HALVES})
    )
    content = {"format": 2, "parts": [{"type": "text", "text": HALVES}], "content": HALVES}
    await store.save_messages(
        [MessageRecord(id="m1", thread_id="t-halves", role="assistant", content=content)]
    )
    page = await store.list_messages("t-halves")
    assert [m.content for m in page.messages] == [content]
    thread = await store.get_thread("t-halves")
    assert thread.metadata == {"note": HALVES}
    await store.persist_workflow_snapshot("w", "run-1", {"status": "success", "result": {"text": HALVES}})
    snapshot = await store.load_workflow_snapshot("w", "run-1")
    assert snapshot is not None and snapshot["result"] == {"text": HALVES}
