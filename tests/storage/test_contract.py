"""One behavioural contract, run against every storage backend (see conftest.BACKENDS)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import msgspec
import pytest

from agentstream.storage import (
    TASK_STATUSES,
    BackgroundTask,
    BaseStore,
    ConflictError,
    MessageRecord,
    NotFoundError,
    SQLiteStore,
    Storage,
    TaskError,
    TaskUpdate,
    ThreadRecord,
)

from .conftest import StoreFactory

T0 = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
PLUS2 = timezone(timedelta(hours=2))

# Two stores sharing one database: only the SQLite file and PostgreSQL backends can (this overrides
# the `backend` fixture's params rather than skipping the other two).
SHARED_DATABASE = pytest.mark.parametrize(
    "backend", ["sqlite-file", pytest.param("postgres", marks=pytest.mark.services("postgres"))]
)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def content(text: str, **extra: Any) -> dict[str, Any]:
    return {"format": 2, "parts": [{"type": "text", "text": text}], **extra}


def thread(tid: str = "th1", resource: str = "res1", **kw: Any) -> ThreadRecord:
    return ThreadRecord(
        id=tid, resource_id=resource, created_at=kw.pop("created_at", T0), updated_at=T0, **kw
    )


def message(mid: str, text: str, *, tid: str = "th1", created_at: datetime = T0, **kw: Any) -> MessageRecord:
    return MessageRecord(
        id=mid,
        thread_id=tid,
        resource_id="res1",
        role="user",
        content=content(text),
        created_at=created_at,
        **kw,
    )


def task(tid: str = "task1", **kw: Any) -> BackgroundTask:
    base: dict[str, Any] = {
        "tool_name": "search",
        "tool_call_id": f"call-{tid}",
        "agent_id": "agent1",
        "run_id": "run1",
        "args": {"q": "rainbows", "n": 3},
        "created_at": T0,
    }
    base.update(kw)
    return BackgroundTask(id=tid, **base)


def texts(messages: list[MessageRecord]) -> list[str]:
    return [m.content["parts"][0]["text"] for m in messages]


# --------------------------------------------------------------------------------------- protocol


async def test_implements_protocol(store: BaseStore) -> None:
    assert isinstance(store, Storage)


# -------------------------------------------------------------------------------------- threads


async def test_thread_roundtrip_and_upsert(store: BaseStore) -> None:
    saved = await store.save_thread(thread(title="hello", metadata={"k": [1, {"x": None}]}))
    got = await store.get_thread("th1")
    assert got == saved
    assert got.metadata == {"k": [1, {"x": None}]}
    assert got.created_at.tzinfo is not None and got.created_at.utcoffset() == timedelta(0)
    await store.save_thread(thread(title="renamed"))
    assert (await store.get_thread("th1")).title == "renamed"
    assert await store.find_thread("nope") is None


async def test_thread_not_found_names_the_id(store: BaseStore) -> None:
    with pytest.raises(NotFoundError, match="thread not found: 'missing-thread'"):
        await store.get_thread("missing-thread")
    with pytest.raises(NotFoundError, match="missing-thread"):
        await store.list_messages("missing-thread")


async def test_list_threads_by_resource(store: BaseStore) -> None:
    await store.save_thread(thread("b", "r1", created_at=at(2)))
    await store.save_thread(thread("a", "r1", created_at=at(1)))
    await store.save_thread(thread("c", "r2", created_at=at(0)))
    assert [t.id for t in await store.list_threads(resource_id="r1")] == ["a", "b"]
    assert [t.id for t in await store.list_threads()] == ["c", "a", "b"]


async def test_datetimes_normalised_to_utc(store: BaseStore) -> None:
    local = datetime(2026, 5, 1, 12, 0, tzinfo=PLUS2)
    await store.save_thread(ThreadRecord(id="t", resource_id="r", created_at=local, updated_at=local))
    got = await store.get_thread("t")
    assert got.created_at == local
    assert got.created_at.utcoffset() == timedelta(0)
    assert got.created_at.hour == 10


# ------------------------------------------------------------------------------------- messages


async def test_messages_ordered_by_created_at_then_insertion(store: BaseStore) -> None:
    await store.save_thread(thread())
    await store.save_messages(
        [message("m3", "third", created_at=at(2)), message("m1", "first", created_at=at(0))]
    )
    # same timestamp: insertion order breaks the tie
    await store.save_messages(
        [message("m2a", "second-a", created_at=at(1)), message("m2b", "second-b", created_at=at(1))]
    )
    page = await store.list_messages("th1")
    assert texts(page.messages) == ["first", "second-a", "second-b", "third"]
    assert page.total == 4 and not page.has_more


async def test_message_content_roundtrip(store: BaseStore) -> None:
    await store.save_thread(thread())
    rich = {
        "format": 2,
        "parts": [
            {"type": "text", "text": "héllo ✓"},
            {
                "type": "tool-invocation",
                "toolInvocation": {
                    "state": "result",
                    "toolCallId": "c1",
                    "args": {"a": 1},
                    "result": [1.5, None, True],
                },
            },
            {"type": "data-weather", "data": {"temp": 21}},
        ],
        "metadata": {"backgroundTasks": {"c1": {"taskId": "t1"}}},
    }
    m = MessageRecord(
        id="m1", thread_id="th1", resource_id="res1", role="assistant", content=rich, type="v2", created_at=T0
    )
    await store.save_messages([m])
    [got] = (await store.list_messages("th1")).messages
    assert got == m
    assert got.content == rich


async def test_message_upsert_keeps_position_and_bumps_thread(store: BaseStore) -> None:
    await store.save_thread(thread())
    await store.save_messages(
        [message("m1", "one", created_at=at(0)), message("m2", "two", created_at=at(1))]
    )
    await store.save_messages([message("m1", "one-edited", created_at=at(0))])
    assert texts((await store.list_messages("th1")).messages) == ["one-edited", "two"]
    assert (await store.get_thread("th1")).updated_at > T0


async def test_messages_last_and_pagination(store: BaseStore) -> None:
    await store.save_thread(thread())
    await store.save_messages([message(f"m{i}", f"t{i}", created_at=at(i)) for i in range(7)])
    last = await store.list_messages("th1", last=3)
    assert texts(last.messages) == ["t4", "t5", "t6"]
    assert last.total == 7 and last.has_more
    assert (await store.list_messages("th1", last=0)).messages == []
    p0 = await store.list_messages("th1", page=0, per_page=3)
    p2 = await store.list_messages("th1", page=2, per_page=3)
    assert texts(p0.messages) == ["t0", "t1", "t2"] and p0.has_more and p0.total == 7
    assert texts(p2.messages) == ["t6"] and not p2.has_more
    assert texts((await store.list_messages("th1", per_page=2)).messages) == ["t0", "t1"]
    with pytest.raises(ValueError, match="last cannot be combined"):
        await store.list_messages("th1", last=2, page=0, per_page=2)
    with pytest.raises(ValueError, match="per_page"):
        await store.list_messages("th1", page=1)
    with pytest.raises(ValueError, match="page must be"):
        await store.list_messages("th1", page=-1, per_page=2)


async def test_save_messages_unknown_thread_is_atomic(store: BaseStore) -> None:
    await store.save_thread(thread())
    with pytest.raises(NotFoundError, match="'ghost'"):
        await store.save_messages([message("m1", "ok"), message("m2", "lost", tid="ghost")])
    assert (await store.list_messages("th1")).messages == []


async def test_delete_thread_cascades(store: BaseStore) -> None:
    await store.save_thread(thread())
    await store.save_thread(thread("other"))
    await store.save_messages([message("m1", "a"), message("m2", "b", tid="other")])
    await store.set_thread_state("th1", "goal", {"objective": "x"})
    assert await store.delete_thread("th1") is True
    assert await store.find_thread("th1") is None
    assert await store.get_thread_state("th1", "goal") is None
    assert await store.delete_thread("th1") is False
    assert texts((await store.list_messages("other")).messages) == ["b"]
    # the message id is free again
    await store.save_thread(thread())
    assert (await store.list_messages("th1")).total == 0


async def test_delete_messages(store: BaseStore) -> None:
    await store.save_thread(thread())
    await store.save_messages([message("m1", "a"), message("m2", "b", created_at=at(1))])
    assert await store.delete_messages(["m1", "nope", "m1"]) == 1
    assert texts((await store.list_messages("th1")).messages) == ["b"]


def test_message_validation() -> None:
    with pytest.raises(ValueError, match="format-2"):
        MessageRecord(id="m", thread_id="t", role="user", content={"parts": []})
    with pytest.raises(ValueError, match="parts must be a list"):
        MessageRecord(id="m", thread_id="t", role="user", content={"format": 2})
    with pytest.raises(
        ValueError, match="invalid role 'robot': expected one of user, assistant, system, tool"
    ):
        MessageRecord(id="m", thread_id="t", role="robot", content=content("x"))  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ background tasks


async def test_task_roundtrip_all_fields(store: BaseStore) -> None:
    full = task(
        status="failed",
        thread_id="th1",
        resource_id="res1",
        result={"answer": [1, 2, {"deep": "x"}]},
        error=TaskError(message="boom", stack="Traceback ..."),
        suspend_payload={"ask": "approve?"},
        retry_count=2,
        max_retries=3,
        timeout_ms=1234,
        created_at=datetime(2026, 1, 2, 5, 4, 5, 123456, tzinfo=PLUS2),
        started_at=at(1),
        suspended_at=at(2),
        completed_at=at(3),
        owner_id="host:1:abc",
        lease_expires_at=datetime(2026, 1, 2, 7, 0, 0, 250000, tzinfo=PLUS2),
        abandoned_thread=True,
    )
    created = await store.create_task(full)
    got = await store.get_task("task1")
    assert got == created == full
    assert msgspec.structs.asdict(got) == msgspec.structs.asdict(full)
    assert got.created_at.utcoffset() == timedelta(0)
    assert got.error == TaskError(message="boom", stack="Traceback ...")

    minimal = await store.create_task(
        BackgroundTask(id="t2", tool_name="x", tool_call_id="c", agent_id="a", run_id="r")
    )
    got2 = await store.get_task("t2")
    assert got2 == minimal
    assert (got2.status, got2.result, got2.error, got2.thread_id, got2.timeout_ms) == (
        "pending",
        None,
        None,
        None,
        300_000,
    )
    assert (got2.owner_id, got2.lease_expires_at, got2.abandoned_thread) == (None, None, False)
    assert got.lease_expires_at is not None and got.lease_expires_at.utcoffset() == timedelta(0)


async def test_task_duplicate_and_missing(store: BaseStore) -> None:
    await store.create_task(task())
    with pytest.raises(ConflictError, match="'task1'"):
        await store.create_task(task())
    with pytest.raises(NotFoundError, match="background task not found: 'nope'"):
        await store.get_task("nope")
    with pytest.raises(NotFoundError, match="'nope'"):
        await store.update_task("nope", TaskUpdate(status="running"))
    with pytest.raises(NotFoundError, match="'nope'"):
        await store.update_task("nope", TaskUpdate(status="running"), expected_status="pending")
    assert await store.find_task("nope") is None
    assert await store.delete_task("nope") is False


async def test_update_compare_and_set(store: BaseStore) -> None:
    await store.create_task(task())
    assert (
        await store.update_task("task1", TaskUpdate(status="completed"), expected_status="running") is False
    )
    assert (await store.get_task("task1")).status == "pending"

    assert await store.update_task(
        "task1", TaskUpdate(status="running", started_at=at(1)), expected_status="pending"
    )
    assert await store.update_task("task1", TaskUpdate(status="running"), expected_status="pending") is False

    assert await store.update_task(
        "task1", TaskUpdate(status="suspended", suspend_payload={"q": "ok?"}, suspended_at=at(2))
    )
    # resume clears suspend fields (None clears; UNSET leaves alone)
    assert await store.update_task(
        "task1",
        TaskUpdate(status="running", suspend_payload=None, suspended_at=None, started_at=at(3)),
        expected_status="suspended",
    )
    got = await store.get_task("task1")
    assert (got.status, got.suspend_payload, got.suspended_at, got.started_at) == (
        "running",
        None,
        None,
        at(3),
    )
    assert got.args == {"q": "rainbows", "n": 3}

    assert await store.update_task(
        "task1",
        TaskUpdate(status="completed", result={"r": 1}, completed_at=at(4), retry_count=1, args={"q": "x"}),
    )
    got = await store.get_task("task1")
    assert (got.status, got.result, got.completed_at, got.retry_count, got.args) == (
        "completed",
        {"r": 1},
        at(4),
        1,
        {"q": "x"},
    )
    assert await store.update_task("task1", TaskUpdate(error=TaskError(message="late")))
    assert (await store.get_task("task1")).error == TaskError(message="late")
    assert await store.update_task("task1", TaskUpdate(), expected_status="completed") is True
    assert await store.update_task("task1", TaskUpdate(), expected_status="failed") is False


async def test_update_conditioned_on_owner_and_lease(store: BaseStore) -> None:
    """The lease primitives: claim (no owner), renew (same owner), reclaim (lease expired), release."""
    await store.create_task(task())
    claim = TaskUpdate(status="running", owner_id="p1", lease_expires_at=at(10))
    assert await store.update_task("task1", claim, expected_status="pending", expected_owner="p2") is False
    assert await store.update_task("task1", claim, expected_status="pending", expected_owner=None)
    assert await store.update_task("task1", claim, expected_status="pending", expected_owner=None) is False
    got = await store.get_task("task1")
    assert (got.status, got.owner_id, got.lease_expires_at) == ("running", "p1", at(10))

    # another owner may not renew; the owner may
    assert await store.update_task("task1", TaskUpdate(lease_expires_at=at(20)), expected_owner="p2") is False
    assert await store.update_task("task1", TaskUpdate(lease_expires_at=at(20)), expected_owner="p1")

    # reclaim only once the lease expired (at or before the given instant), and only from that owner
    reclaim = TaskUpdate(status="pending", owner_id=None, lease_expires_at=None)
    kw: dict[str, Any] = {"expected_status": "running", "expected_owner": "p1"}
    assert await store.update_task("task1", reclaim, lease_expired_by=at(19.999), **kw) is False
    assert await store.update_task("task1", reclaim, lease_expired_by=at(20).astimezone(PLUS2), **kw)
    got = await store.get_task("task1")
    assert (got.status, got.owner_id, got.lease_expires_at) == ("pending", None, None)

    # no lease at all counts as expired
    assert await store.update_task("task1", TaskUpdate(owner_id="p3"), lease_expired_by=at(0))
    assert await store.update_task("task1", TaskUpdate(abandoned_thread=True), expected_owner="p3")
    assert (await store.get_task("task1")).abandoned_thread is True

    with pytest.raises(ValueError, match="lease_expired_by must be a timezone-aware datetime"):
        await store.update_task("task1", TaskUpdate(), lease_expired_by=datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="expected_owner must be a str or None, got 5"):
        await store.update_task("task1", TaskUpdate(), expected_owner=5)  # type: ignore[arg-type]
    with pytest.raises(NotFoundError, match="'nope'"):
        await store.update_task("nope", TaskUpdate(), expected_owner="p1")


async def test_renew_leases_and_list_expired(store: BaseStore) -> None:
    await store.create_task(task("mine1", status="running", owner_id="me", lease_expires_at=at(5)))
    await store.create_task(task("mine2", status="pending", owner_id="me", lease_expires_at=at(5)))
    await store.create_task(task("theirs", status="running", owner_id="them", lease_expires_at=at(5)))
    await store.create_task(task("free", status="pending"))
    await store.create_task(task("done", status="completed"))
    assert await store.renew_task_leases("me", at(50).astimezone(PLUS2)) == ["mine1", "mine2"]
    assert (await store.get_task("mine1")).lease_expires_at == at(50)
    assert (await store.get_task("theirs")).lease_expires_at == at(5)
    assert await store.renew_task_leases("nobody", at(50)) == []

    active = ("pending", "running")
    expired = await store.list_tasks(status=active, lease_expired_by=at(5))
    assert sorted(t.id for t in expired.tasks) == ["free", "theirs"]  # at or before: 5 <= 5
    assert [t.id for t in (await store.list_tasks(status=active, lease_expired_by=at(4.9))).tasks] == ["free"]
    assert (await store.list_tasks(status=active, lease_expired_by=at(50))).total == 4
    with pytest.raises(ValueError, match="owner_id must be a non-empty str"):
        await store.renew_task_leases("", at(1))
    with pytest.raises(ValueError, match="lease_expires_at must be a timezone-aware"):
        await store.renew_task_leases("me", datetime(2026, 1, 1))


async def test_returned_records_are_independent(store: BaseStore) -> None:
    original = task()
    await store.create_task(original)
    original.args["q"] = "mutated after save"
    got = await store.get_task("task1")
    assert got.args["q"] == "rainbows"
    got.args["q"] = "mutated after get"
    assert (await store.get_task("task1")).args["q"] == "rainbows"


async def test_concurrent_cas_exactly_one_wins(store: BaseStore) -> None:
    for n in range(3):
        await store.create_task(task(f"t{n}"))
        results = await asyncio.gather(
            *(
                store.update_task(
                    f"t{n}", TaskUpdate(status="running", started_at=at(i)), expected_status="pending"
                )
                for i in range(50)
            )
        )
        assert results.count(True) == 1, results
        assert (await store.get_task(f"t{n}")).status == "running"


@SHARED_DATABASE
async def test_concurrent_cas_across_two_stores(backend: str, store_factory: StoreFactory) -> None:
    a, b = store_factory(), store_factory()
    await a.init()
    await b.init()
    for n in range(5):
        await a.create_task(task(f"t{n}"))
        attempts = [
            s.update_task(f"t{n}", TaskUpdate(status="running", retry_count=i), expected_status="pending")
            for i in range(25)
            for s in (a, b)
        ]
        results = await asyncio.gather(*attempts)
        assert results.count(True) == 1, results
        seen_by_b = await b.get_task(f"t{n}")
        assert seen_by_b.status == "running"


@SHARED_DATABASE
async def test_concurrent_reclaim_across_two_stores(backend: str, store_factory: StoreFactory) -> None:
    """Two managers sweeping one expired lease at once: exactly one takes it over."""
    a, b = store_factory(), store_factory()
    await a.init()
    await b.init()
    for n in range(5):
        await a.create_task(task(f"t{n}", status="running", owner_id="dead", lease_expires_at=at(1)))
        attempts = [
            s.update_task(
                f"t{n}",
                TaskUpdate(owner_id=f"{name}{i}", lease_expires_at=at(100)),
                expected_status="running",
                expected_owner="dead",
                lease_expired_by=at(2),
            )
            for i in range(20)
            for name, s in (("a", a), ("b", b))
        ]
        results = await asyncio.gather(*attempts)
        assert results.count(True) == 1, results
        winner = (await b.get_task(f"t{n}")).owner_id
        assert winner is not None and winner != "dead"


async def test_sqlite_write_lock_held_elsewhere_raises_storage_busy_error(tmp_path: Any) -> None:
    import sqlite3

    from agentstream.storage import StorageBusyError, StorageError

    path = tmp_path / "locked.db"
    async with SQLiteStore(path, busy_timeout_ms=0) as store:
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(StorageBusyError) as caught:
                await store.create_task(task())
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert await store.create_task(task()) == task()  # the lock is gone: the same call works
    assert isinstance(caught.value, StorageError)
    assert str(caught.value).startswith(f"SQLiteStore.create_task on SQLite database {str(path)!r}: ")
    assert "busy_timeout_ms=0" in str(caught.value) and "PostgresStore" in str(caught.value)
    assert caught.value.operation == "SQLiteStore.create_task"


def test_status_validation_names_field_and_values() -> None:
    allowed = ", ".join(TASK_STATUSES)
    assert allowed == "pending, running, suspended, completed, failed, cancelled, timed_out"
    with pytest.raises(ValueError, match=f"invalid status 'done': expected one of {allowed}"):
        task(status="done")
    with pytest.raises(ValueError, match="invalid status 'done'"):
        TaskUpdate(status="done")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="created_at must be a timezone-aware"):
        task(created_at=datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="retry_count must be a non-negative int"):
        task(retry_count=-1)


async def test_status_validation_in_store_calls(store: BaseStore) -> None:
    await store.create_task(task())
    with pytest.raises(ValueError, match="invalid expected_status 'done': expected one of pending"):
        await store.update_task("task1", TaskUpdate(), expected_status="done")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="invalid status 'bogus'"):
        await store.list_tasks(status=["running", "bogus"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="invalid date_field 'updated_at'"):
        await store.list_tasks(date_field="updated_at")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="invalid order_direction"):
        await store.list_tasks(order_direction="up")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="from_date must be a timezone-aware"):
        await store.list_tasks(from_date=datetime(2026, 1, 1))


async def _seed_tasks(store: BaseStore) -> None:
    specs = [
        ("a", "pending", "ag1", "th1", "r1", "run1", "search", 0),
        ("b", "running", "ag1", "th1", "r1", "run1", "fetch", 1),
        ("c", "running", "ag2", "th2", "r2", "run2", "search", 2),
        ("d", "completed", "ag2", None, None, "run2", "search", 3),
        ("e", "failed", "ag1", "th1", "r1", "run3", "fetch", 4),
        ("f", "suspended", "ag1", "th2", "r1", "run3", "search", 5),
    ]
    for tid, status, agent, th, res, run, tool, sec in specs:
        await store.create_task(
            task(
                tid,
                status=status,
                agent_id=agent,
                thread_id=th,
                resource_id=res,
                run_id=run,
                tool_name=tool,
                created_at=at(sec),
                completed_at=at(sec + 10) if status in ("completed", "failed") else None,
            )
        )


async def test_list_tasks_filters(store: BaseStore) -> None:
    await _seed_tasks(store)

    async def ids(**kw: Any) -> list[str]:
        return [t.id for t in (await store.list_tasks(**kw)).tasks]

    assert await ids() == ["a", "b", "c", "d", "e", "f"]
    assert await ids(status="running") == ["b", "c"]
    assert await ids(status=["running", "suspended"]) == ["b", "c", "f"]
    assert await ids(status=[]) == []
    assert await ids(agent_id="ag1") == ["a", "b", "e", "f"]
    assert await ids(agent_id="ag1", status="running") == ["b"]
    assert await ids(thread_id="th2") == ["c", "f"]
    assert await ids(resource_id="r1") == ["a", "b", "e", "f"]
    assert await ids(run_id="run2") == ["c", "d"]
    assert await ids(tool_call_id="call-e") == ["e"]
    assert await ids(tool_name="fetch") == ["b", "e"]
    assert await ids(agent_id="nobody") == []
    assert await ids(order_direction="desc") == ["f", "e", "d", "c", "b", "a"]
    assert await ids(from_date=at(1), to_date=at(3)) == ["b", "c"]
    assert await ids(date_field="completed_at", from_date=at(0)) == ["d", "e"]
    assert await store.count_tasks(status="running") == 2
    assert await store.count_tasks(status="running", agent_id="ag2") == 1
    assert await store.count_tasks() == 6


async def test_list_tasks_pagination(store: BaseStore) -> None:
    await _seed_tasks(store)
    p0 = await store.list_tasks(page=0, per_page=4)
    p1 = await store.list_tasks(page=1, per_page=4)
    assert [t.id for t in p0.tasks] == ["a", "b", "c", "d"] and p0.total == 6 and p0.has_more
    assert [t.id for t in p1.tasks] == ["e", "f"] and p1.total == 6 and not p1.has_more
    first = await store.list_tasks(
        per_page=2, status=["running", "failed", "suspended"], order_direction="desc"
    )
    assert [t.id for t in first.tasks] == ["f", "e"] and first.total == 4 and first.page == 0
    beyond = await store.list_tasks(page=9, per_page=4)
    assert beyond.tasks == [] and beyond.total == 6
    with pytest.raises(ValueError, match="per_page must be a positive int"):
        await store.list_tasks(page=0, per_page=0)


async def test_delete_task_and_cleanup_ttl(store: BaseStore) -> None:
    await _seed_tasks(store)
    assert await store.delete_task("a") is True
    assert await store.find_task("a") is None
    # completed d has completed_at = at(13); failed e at(14)
    assert await store.delete_tasks_older_than(at(13), status="completed") == 0
    assert await store.delete_tasks_older_than(at(13.5), status="completed") == 1
    assert await store.delete_tasks_older_than(at(100), status=["failed", "cancelled", "timed_out"]) == 1
    # tasks without completed_at are never "older than" anything by completed_at
    assert await store.delete_tasks_older_than(at(100), status=["running", "suspended"]) == 0
    assert await store.delete_tasks_older_than(at(100), status="running", date_field="created_at") == 2
    assert [t.id for t in (await store.list_tasks()).tasks] == ["f"]


# ---------------------------------------------------------------------------- workflow snapshots


async def test_workflow_snapshots(store: BaseStore) -> None:
    snap = {"status": "suspended", "context": {"step": {"output": [1, 2]}}, "__streamState": {"k": "v"}}
    await store.persist_workflow_snapshot("agentic-loop", "run1", snap, resource_id="res1")
    await store.persist_workflow_snapshot("executionWorkflow", "run1", {"status": "paused"})
    assert await store.load_workflow_snapshot("agentic-loop", "run1") == snap
    await store.persist_workflow_snapshot("agentic-loop", "run1", {"status": "pending"})
    assert await store.load_workflow_snapshot("agentic-loop", "run1") == {"status": "pending"}
    assert await store.load_workflow_snapshot("agentic-loop", "run2") is None
    assert await store.delete_workflow_snapshot("agentic-loop", "run1") is True
    assert await store.delete_workflow_snapshot("agentic-loop", "run1") is False
    assert await store.load_workflow_snapshot("executionWorkflow", "run1") == {"status": "paused"}


async def test_workflow_snapshot_compare_and_set(store: BaseStore) -> None:
    w = "agentstream:agent-run"
    assert (
        await store.compare_and_set_workflow_snapshot(w, "r1", {"status": "x"}, expected_status="a") is False
    )
    assert await store.load_workflow_snapshot(w, "r1") is None  # no insert when missing
    snap = {"status": "suspended", "loop": {"messages": [{"role": "user", "content": "hi"}]}, "n": 1.5}
    await store.persist_workflow_snapshot(w, "r1", snap, resource_id="res")
    # wrong expectation: nothing changes
    assert (
        await store.compare_and_set_workflow_snapshot(w, "r1", {"status": "x"}, expected_status="running")
        is False
    )
    assert await store.load_workflow_snapshot(w, "r1") == snap
    claimed = {**snap, "status": "running"}
    assert (
        await store.compare_and_set_workflow_snapshot(w, "r1", claimed, expected_status="suspended") is True
    )
    assert await store.load_workflow_snapshot(w, "r1") == claimed
    assert await store.compare_and_set_workflow_snapshot(w, "r1", snap, expected_status="suspended") is False
    # only the (workflow, run) key is touched; a snapshot that is not an object never matches
    await store.persist_workflow_snapshot("other", "r1", {"status": "suspended"})
    await store.persist_workflow_snapshot(w, "r2", ["suspended"])
    assert await store.compare_and_set_workflow_snapshot(w, "r2", {}, expected_status="suspended") is False
    assert await store.load_workflow_snapshot("other", "r1") == {"status": "suspended"}
    with pytest.raises(TypeError, match="expected_status must be a str"):
        await store.compare_and_set_workflow_snapshot(w, "r1", {}, expected_status=None)  # type: ignore[arg-type]


async def test_workflow_snapshot_claim_exactly_one_wins(store: BaseStore) -> None:
    for n in range(3):
        await store.persist_workflow_snapshot("w", f"r{n}", {"status": "suspended", "n": n})
        results = await asyncio.gather(
            *(
                store.compare_and_set_workflow_snapshot(
                    "w", f"r{n}", {"status": "running", "by": i}, expected_status="suspended"
                )
                for i in range(50)
            )
        )
        assert results.count(True) == 1, results
        winner = results.index(True)
        assert await store.load_workflow_snapshot("w", f"r{n}") == {"status": "running", "by": winner}


@SHARED_DATABASE
async def test_workflow_snapshot_claim_across_two_stores(backend: str, store_factory: StoreFactory) -> None:
    a, b = store_factory(), store_factory()
    await a.init()
    await b.init()
    for n in range(5):
        await a.persist_workflow_snapshot("w", f"r{n}", {"status": "suspended"})
        attempts = [
            s.compare_and_set_workflow_snapshot(
                "w", f"r{n}", {"status": "running", "i": i}, expected_status="suspended"
            )
            for i in range(25)
            for s in (a, b)
        ]
        results = await asyncio.gather(*attempts)
        assert results.count(True) == 1, results
        seen_by_b = await b.load_workflow_snapshot("w", f"r{n}")
        assert isinstance(seen_by_b, dict) and seen_by_b["status"] == "running"


# ---------------------------------------------------------------------------------- thread state


async def test_thread_state(store: BaseStore) -> None:
    assert await store.get_thread_state("th1", "goal") is None
    await store.set_thread_state("th1", "goal", {"objective": "ship", "runs": 1})
    await store.set_thread_state("th1", "tasks", [1, "two"])
    await store.set_thread_state("th2", "goal", "other thread")
    await store.set_thread_state("th1", "goal", {"objective": "ship v2"})
    assert await store.get_thread_state("th1", "goal") == {"objective": "ship v2"}
    assert await store.list_thread_state("th1") == {"goal": {"objective": "ship v2"}, "tasks": [1, "two"]}
    assert await store.delete_thread_state("th1", "goal") is True
    assert await store.delete_thread_state("th1", "goal") is False
    assert await store.list_thread_state("th1") == {"tasks": [1, "two"]}
    assert await store.get_thread_state("th2", "goal") == "other thread"


async def test_dangerously_clear_all(store: BaseStore) -> None:
    await store.save_thread(thread())
    await store.save_messages([message("m1", "a")])
    await store.create_task(task())
    await store.persist_workflow_snapshot("w", "r", {})
    await store.set_thread_state("th1", "k", 1)
    await store.dangerously_clear_all()
    assert await store.list_threads() == []
    assert (await store.list_tasks()).total == 0
    assert await store.load_workflow_snapshot("w", "r") is None
    assert await store.list_thread_state("th1") == {}


def test_unencodable_json_is_rejected_before_storage() -> None:
    with pytest.raises(TypeError):
        msgspec.json.encode(task(args={"x": object()}))


async def test_unencodable_json_raises(store: BaseStore) -> None:
    with pytest.raises(TypeError):
        await store.create_task(task(args={"x": object()}))
    assert await store.find_task("task1") is None


# ------------------------------------------------------------------------------------- lifecycle


async def test_lazy_init_and_context_manager(backend: str, store_factory: StoreFactory) -> None:
    s = store_factory()
    await s.create_task(task())  # opens on first use
    assert (await s.get_task("task1")).id == "task1"
    await s.close()
    with pytest.raises(RuntimeError, match="closed"):
        await s.get_task("task1")


def test_sqlite_store_is_a_storage() -> None:
    assert issubclass(SQLiteStore, BaseStore)


# ------------------------------------------------------------------------------- backend specifics


def test_postgres_is_an_optional_import() -> None:
    import subprocess
    import sys

    code = "import sys, agentstream.storage as s; assert 'psycopg' not in sys.modules; print(s.PostgresStore.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "PostgresStore"


async def test_postgres_with_caller_owned_pool(pg_dsn: str) -> None:
    import uuid

    import psycopg
    from psycopg_pool import AsyncConnectionPool

    from agentstream.storage import PostgresStore

    schema = f"t_{uuid.uuid4().hex[:16]}"
    async with AsyncConnectionPool(pg_dsn, min_size=1, max_size=4, open=False) as pool:
        async with PostgresStore(pool=pool, schema=schema) as s:
            await s.create_task(task())
            assert await s.update_task("task1", TaskUpdate(status="running"), expected_status="pending")
            assert (await s.get_task("task1")).status == "running"
        assert not pool.closed  # the store leaves a pool it does not own open
        async with pool.connection() as conn:
            await conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
    with pytest.raises(ValueError, match="exactly one of dsn= or pool="):
        PostgresStore()
    with pytest.raises(ValueError, match="invalid schema"):
        PostgresStore(pg_dsn, schema='x"; DROP TABLE y; --')
    assert psycopg is not None
