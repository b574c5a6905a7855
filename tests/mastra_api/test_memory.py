"""The Mastra API's memory routes over real HTTP: status and config, threads created, listed
(by resource, paged, ordered), read, renamed and deleted; messages saved, listed and deleted;
working memory read and written; and the owner rule (another user's threads do not exist for
them, another resourceId is 403), refusals naming the field, hostile ids, oversize bodies."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from agentstream._mastra import Mastra
from agentstream.agent import Agent
from agentstream.memory import Memory
from agentstream.server import RequestGuard
from agentstream.storage import SQLiteStore
from tests.mastra_api._flows_server import ALICE, BOB, auth, serve

Q = {"agentId": "helper"}


def _mastra(tmp_path: object) -> Mastra:
    memory = Memory(working_memory={"enabled": True, "scope": "resource"}, last_messages=12)
    agent = Agent(id="helper", name="Helper", instructions="Help.", model="demo", memory=memory)
    return Mastra(agents={"helper": agent}, storage=SQLiteStore(f"{tmp_path}/memory.db"))


@pytest.fixture
def base(tmp_path: object) -> Iterator[str]:
    with serve(_mastra(tmp_path), guard=RequestGuard(auth=auth)) as url:
        yield url


@pytest.fixture
def alice(base: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"{base}/api", headers=ALICE, timeout=20) as c:
        yield c


@pytest.fixture
def bob(base: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"{base}/api", headers=BOB, timeout=20) as c:
        yield c


def _message(i: int, thread: str = "t1", resource: str = "alice", role: str = "user") -> dict[str, object]:
    return {
        "id": f"m{i}",
        "threadId": thread,
        "resourceId": resource,
        "role": role,
        "type": "text",
        "createdAt": f"2026-12-02T01:00:0{i}.000Z",
        "content": {"format": 2, "parts": [{"type": "text", "text": f"message {i}"}]},
    }


def test_status_and_config(alice: httpx.Client) -> None:
    assert alice.get("/memory/status", params=Q).json() == {"result": True, "memoryType": "local"}
    config = alice.get("/memory/config", params=Q).json()["config"]
    assert config["lastMessages"] == 12 and config["workingMemory"]["enabled"] is True
    assert config["workingMemory"]["scope"] == "resource" and config["observationalMemory"] == {
        "enabled": False
    }
    missing = alice.get("/memory/status")
    assert missing.status_code == 400 and missing.json()["issues"][0]["field"] == "agentId"


def test_threads_and_messages_round_trip(alice: httpx.Client) -> None:
    made = alice.post(
        "/memory/threads", params=Q, json={"threadId": "t1", "title": "Hello", "metadata": {"topic": "tides"}}
    ).json()
    assert made["id"] == "t1" and made["resourceId"] == "alice" and made["title"] == "Hello"
    assert made["metadata"] == {"topic": "tides"}
    second = alice.post("/memory/threads", params=Q, json={"title": "Other"}).json()
    assert second["resourceId"] == "alice" and "metadata" not in second
    listed = alice.get("/memory/threads", params={**Q, "resourceId": "alice"}).json()
    assert listed["total"] == 2 and listed["perPage"] == 100 and listed["hasMore"] is False
    assert [t["id"] for t in listed["threads"]] == [second["id"], "t1"]  # newest first
    oldest = alice.get(
        "/memory/threads", params={**Q, "orderBy[direction]": "ASC", "perPage": 1, "page": 0}
    ).json()
    assert [t["id"] for t in oldest["threads"]] == ["t1"] and oldest["hasMore"] is True
    by_meta = alice.get("/memory/threads", params={**Q, "metadata": '{"topic": "tides"}'}).json()
    assert [t["id"] for t in by_meta["threads"]] == ["t1"]

    saved = alice.post(
        "/memory/save-messages", params=Q, json={"messages": [_message(1), _message(2, role="assistant")]}
    )
    assert [m["id"] for m in saved.json()["messages"]] == ["m1", "m2"], saved.text
    page = alice.get("/memory/threads/t1/messages", params={**Q, "page": 0, "perPage": 1}).json()
    assert (
        page["total"] == 2 and page["perPage"] == 1 and page["hasMore"] is True and page["uiMessages"] is None
    )
    first = page["messages"][0]
    assert (
        first["id"] == "m1"
        and first["role"] == "user"
        and first["threadId"] == "t1"
        and first["resourceId"] == "alice"
    )
    assert first["content"]["parts"][0]["text"] == "message 1"
    simple = alice.post(
        "/memory/save-messages",
        params=Q,
        json={
            "messages": [
                {"threadId": "t-new", "resourceId": "alice", "role": "user", "content": "plain text"}
            ]
        },
    ).json()["messages"][0]
    assert simple["content"]["parts"] == [{"type": "text", "text": "plain text"}]
    assert alice.get("/memory/threads/t-new", params=Q).json()["resourceId"] == "alice"

    renamed = alice.patch(
        "/memory/threads/t1", params=Q, json={"title": "Renamed", "metadata": {"b": 2}}
    ).json()
    assert renamed["title"] == "Renamed" and renamed["metadata"] == {"b": 2}
    assert alice.get("/memory/threads/t1", params=Q).json()["title"] == "Renamed"
    deleted = alice.post("/memory/messages/delete", params=Q, json={"messageIds": ["m1"]}).json()
    assert deleted == {"success": True, "message": "1 message deleted successfully"}
    assert [m["id"] for m in alice.get("/memory/threads/t1/messages", params=Q).json()["messages"]] == ["m2"]
    assert alice.delete("/memory/threads/t1", params=Q).json() == {"result": "Thread deleted"}
    gone = alice.get("/memory/threads/t1", params=Q)
    assert gone.status_code == 404 and gone.json() == {"error": "Thread not found"}


def test_working_memory_read_and_written(alice: httpx.Client) -> None:
    alice.post("/memory/threads", params=Q, json={"threadId": "wm"})
    empty = alice.get("/memory/threads/wm/working-memory", params={**Q, "resourceId": "undefined"}).json()
    assert empty["workingMemory"] is None and empty["threadExists"] is True and empty["source"] == "resource"
    assert empty["workingMemoryTemplate"]["format"] == "markdown"
    wrote = alice.post("/memory/threads/wm/working-memory", params=Q, json={"workingMemory": "# Name: Ann"})
    assert wrote.json() == {"success": True}, wrote.text
    read = alice.get("/memory/threads/wm/working-memory", params=Q).json()
    assert read["workingMemory"] == "# Name: Ann"
    bad = alice.post("/memory/threads/wm/working-memory", params=Q, json={"workingMemory": 3})
    assert bad.status_code == 400 and bad.json()["issues"][0]["field"] == "workingMemory"


def test_another_users_threads_do_not_exist_for_them(alice: httpx.Client, bob: httpx.Client) -> None:
    alice.post("/memory/threads", params=Q, json={"threadId": "private"})
    alice.post("/memory/save-messages", params=Q, json={"messages": [_message(1, thread="private")]})
    alice.post("/memory/threads/private/working-memory", params=Q, json={"workingMemory": "secret"})
    for method, path, body in [
        ("GET", "/memory/threads/private", None),
        ("PATCH", "/memory/threads/private", {"title": "mine now"}),
        ("DELETE", "/memory/threads/private", None),
        ("GET", "/memory/threads/private/messages", None),
        ("GET", "/memory/threads/private/working-memory", None),
        ("POST", "/memory/threads/private/working-memory", {"workingMemory": "overwritten"}),
    ]:
        answer = bob.request(method, path, params=Q, json=body)
        assert answer.status_code == 404, (method, path, answer.text)
    assert bob.get("/memory/threads", params=Q).json()["threads"] == []
    assert bob.get("/memory/threads", params={**Q, "resourceId": "alice"}).status_code == 403
    spoofed = bob.post("/memory/save-messages", params=Q, json={"messages": [_message(5, thread="private")]})
    assert spoofed.status_code == 403 and spoofed.json()["issues"][0]["field"] == "messages[0].resourceId"
    into = bob.post(
        "/memory/save-messages", params=Q, json={"messages": [_message(6, thread="private", resource="bob")]}
    )
    assert into.status_code == 404
    assert bob.post("/memory/threads", params=Q, json={"resourceId": "alice"}).status_code == 403
    taken = bob.post("/memory/messages/delete", params=Q, json={"messageIds": ["m1"]}).json()
    assert taken["message"] == "0 messages deleted successfully"
    assert [m["id"] for m in alice.get("/memory/threads/private/messages", params=Q).json()["messages"]] == [
        "m1"
    ]
    assert alice.get("/memory/threads/private/working-memory", params=Q).json()["workingMemory"] == "secret"
    assert httpx.get(str(alice.base_url).rstrip("/") + "/memory/threads").status_code == 401


def test_refusals_name_the_field_and_hostile_input_is_refused(alice: httpx.Client) -> None:
    no_role = alice.post(
        "/memory/save-messages", params=Q, json={"messages": [{**_message(1), "role": "boss"}]}
    )
    assert no_role.status_code == 400 and no_role.json()["issues"][0]["field"] == "messages[0].role"
    not_list = alice.post("/memory/save-messages", params=Q, json={"messages": "hi"})
    assert not_list.status_code == 400 and not_list.json()["issues"][0]["field"] == "messages"
    bad_content = alice.post(
        "/memory/save-messages", params=Q, json={"messages": [{**_message(1), "content": {"x": 1}}]}
    )
    assert bad_content.json()["issues"][0]["field"] == "messages[0].content"
    nul = alice.post("/memory/threads", params=Q, json={"threadId": "a\x00b"})
    assert nul.status_code == 400
    assert alice.get("/memory/threads/" + "x" * 300, params=Q).status_code == 400
    assert alice.get("/memory/threads/a%01b", params=Q).status_code == 400
    big = alice.post(
        "/memory/save-messages",
        params=Q,
        content=b'{"messages": [{"content": "' + b"x" * 2_000_000 + b'"}]}',
        headers={"content-type": "application/json"},
    )
    assert big.status_code == 413
    order = alice.get("/memory/threads", params={**Q, "orderBy[field]": "title"})
    assert order.status_code == 400 and order.json()["issues"][0]["field"] == "orderBy.field"
