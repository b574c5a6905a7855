"""Lone UTF-16 surrogates in stored values, on every backend (``agentstream._wellformed``, which
``chunks`` shares; PostgreSQL's own escape in ``postgres.pg_json_text``): a message, a thread's
title and metadata, a workflow snapshot come back holding the same halves."""

from __future__ import annotations

from agentstream.storage import BaseStore, MessageRecord, ThreadRecord

HALVES = "cut \ud83d here, \ude00 there, a pair 😀, \\ud800 spelled, é"


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
