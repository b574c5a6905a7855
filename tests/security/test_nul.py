"""NUL and the characters PostgreSQL refuses (issue 22, item 4), against the real PostgreSQL.

Ids and bodies holding U+0000 are refused at the edge with a 400 naming the field (they used to
reach PostgreSQL and come back as a 500); a model's tool arguments holding NUL, a lone surrogate
or the escape character itself are stored and given back exactly; a database error's text never
reaches a client (one generic line; the details are in the server log).
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from agentstream._mastra import Mastra
from agentstream.agent import Agent
from agentstream.ai_sdk._errors import STORAGE_ERROR_TEXT
from agentstream.resumable import MemoryStreamStore
from agentstream.server import (
    RequestGuard,
    chat_route,
    resume_route,
    stop_route,
    workflow_cancel_route,
    workflow_route,
    workflow_stream_route,
)
from agentstream.testing import ScriptedModel
from agentstream.tools import Tool, ToolContext
from agentstream.workflows import StepContext, create_step, create_workflow

from ._support import x_user

psycopg = pytest.importorskip("psycopg")
from agentstream.storage import PostgresStore  # noqa: E402

DSN = os.environ.get("AGENTSTREAM_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:54329/postgres")
USAGE = {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}
ALICE = {"x-user": "alice"}
# What jsonb cannot hold (NUL), the store's escape character itself, and an escape's spelling.
HOSTILE = "a\x00b \ue000 \ue0000 \ue000\ue000 \\u0000 end"
# And what UTF-8 cannot hold: a lone surrogate (the store keeps it too; the stream's JSON cannot).
HOSTILE_STORED = HOSTILE + " \ud800 \udfff\ud800"


@pytest.fixture
async def storage() -> AsyncIterator[PostgresStore]:
    schema = f"nul_{uuid.uuid4().hex[:12]}"
    try:
        store = PostgresStore(DSN, schema=schema, max_size=4)
        await store.init()
    except Exception as exc:  # pragma: no cover - only without the service
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but PostgreSQL is unreachable at {DSN}: {exc}")
        pytest.skip(f"PostgreSQL unreachable at {DSN}")
    yield store
    await store.close()
    async with await psycopg.AsyncConnection.connect(DSN, autocommit=True) as conn:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _events(text: str) -> list[dict[str, Any]]:
    frames = [f.removeprefix("data: ") for f in text.split("\n\n") if f.startswith("data: ")]
    return [json.loads(f) for f in frames if f != "[DONE]"]


def _app(storage: PostgresStore, tool_input: str, received: list[Any]) -> Starlette:
    async def echo(args: dict[str, Any], ctx: ToolContext) -> Any:
        received.append(args)
        return {"got": args["q"]}

    async def query(args: dict[str, Any], ctx: ToolContext) -> Any:
        async with await psycopg.AsyncConnection.connect(DSN) as conn:
            await conn.execute("SELECT secret_column FROM no_such_table_for_agentstream")
        return None

    call = {"type": "tool-call", "toolCallId": "c1", "toolName": "echo", "input": tool_input}
    steps = [
        [{"type": "stream-start", "warnings": []}, call, {"type": "finish", "finishReason": "tool-calls", "usage": USAGE}],
        [{"type": "stream-start", "warnings": []}, {"type": "finish", "finishReason": "stop", "usage": USAGE}],
    ]  # fmt: skip
    q_call = {**call, "toolName": "query", "input": "{}"}
    q_steps = [[steps[0][0], q_call, steps[0][2]], steps[1]]
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    tools = [Tool(id="echo", description="d", input_schema=schema, execute=echo, require_approval=True)]
    q_tool = Tool(id="query", description="d", input_schema={"type": "object"}, execute=query)
    wf = create_workflow(id="w").then(create_step(id="s", execute=lambda c: c.input_data)).commit()

    async def ask(c: StepContext) -> Any:
        return await c.suspend({}) if c.resume_data is None else c.resume_data

    held = create_workflow(id="held").then(create_step(id="ask", execute=ask)).commit()
    mastra = Mastra(
        agents={
            "a": Agent(id="a", instructions="x", model=ScriptedModel(steps), tools=tools),
            "q": Agent(id="q", instructions="x", model=ScriptedModel(q_steps), tools=[q_tool]),
        },
        workflows={"w": wf, "held": held},
        storage=storage,
    )
    store = MemoryStreamStore()
    guard = RequestGuard(auth=x_user)
    return Starlette(
        routes=[
            chat_route(mastra, "/api/chat/{agent_id}", heartbeat_ms=0, guard=guard, stream_store=store),
            resume_route(store, "/api/chat/{chat_id}/stream", guard=guard),
            stop_route(store, "/api/chat/{chat_id}/stream", guard=guard),
            workflow_route(mastra, guard=guard, stream_store=store),
            workflow_stream_route(store, guard=guard),
            workflow_cancel_route(mastra, guard=guard, stream_store=store),
        ]
    )


def _client(app: Starlette) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1", timeout=30)


def _user(text: str) -> dict[str, Any]:
    return {"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}


@pytest.mark.parametrize(
    ("method", "url", "body", "path"),
    [
        (
            "POST",
            "/api/chat/a",
            {"id": "c", "messages": [], "runId": "a\x00b", "resumeData": {"approved": True}},
            "runId",
        ),
        ("POST", "/api/chat/a", {"id": "c\x00", "messages": [_user("hi")]}, "id"),
        ("POST", "/api/chat/a", {"id": "c", "messages": [_user("h\x00i")]}, "messages[0].parts[0].text"),
        ("POST", "/api/chat/a", {"id": "c", "messages": [_user("hi")], "x": {"k\x00": 1}}, "x"),
        ("POST", "/api/chat/a%00", {"id": "c", "messages": [_user("hi")]}, "agent_id"),
        ("GET", "/api/chat/a%00b/stream", None, "chat_id"),
        ("DELETE", "/api/chat/a%00b/stream", None, "chat_id"),
        ("POST", "/api/workflows/w/stream", {"runId": "r\x00", "inputData": {}}, "runId"),
        ("POST", "/api/workflows/w/stream", {"inputData": {"v": ["ok", "n\x00"]}}, "inputData.v[1]"),
        ("POST", "/api/workflows/w%00/stream", {"inputData": {}}, "workflow_id"),
        ("GET", "/api/workflows/w/runs/a%00b/stream", None, "run_id"),
        ("POST", "/api/workflows/w/runs/a%00b/cancel", None, "run_id"),
    ],
)
async def test_a_nul_in_an_id_or_a_body_is_a_400_naming_the_field(
    storage: PostgresStore, method: str, url: str, body: Any, path: str
) -> None:
    async with _client(_app(storage, "{}", [])) as c:
        r = await c.request(method, url, json=body, headers=ALICE)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["path"] == path
    assert "NUL character (U+0000)" in error["message"]


async def test_tool_arguments_postgresql_cannot_hold_are_stored_and_come_back_exactly(
    storage: PostgresStore,
) -> None:
    received: list[Any] = []
    tool_input = json.dumps({"q": HOSTILE})
    async with _client(_app(storage, tool_input, received)) as c:
        first = await c.post("/api/chat/a", json={"id": "c1", "messages": [_user("go")]}, headers=ALICE)
        events = _events(first.text)
        assert not [e for e in events if e["type"] == "error"], events
        run_id = next(e for e in events if e["type"] == "data-tool-call-approval")["data"]["runId"]
        follow_up = {"id": "c1", "messages": [], "resumeData": {"approved": True}, "runId": run_id}
        second = await c.post("/api/chat/a", json=follow_up, headers=ALICE)
    assert received == [{"q": HOSTILE}]  # read back from PostgreSQL's jsonb, character for character
    outputs = [e for e in _events(second.text) if e["type"] == "tool-output-available"]
    assert outputs == [{"type": "tool-output-available", "toolCallId": "c1", "output": {"got": HOSTILE}}]


async def test_json_values_round_trip_through_jsonb_exactly(storage: PostgresStore) -> None:
    snapshot = {
        "status": "suspended",
        HOSTILE_STORED: [HOSTILE_STORED, {"\x00": "\ue000u0041", "k": "\ue000"}],
        "plain": "no escape needed é 𝄞",
    }
    await storage.persist_workflow_snapshot("w", "r1", snapshot)  # type: ignore[arg-type]
    assert await storage.load_workflow_snapshot("w", "r1") == snapshot
    # Stored escaped: jsonb holds no NUL, and a plain value is stored as it is.
    async with await psycopg.AsyncConnection.connect(DSN) as conn:
        cur = await conn.execute(
            f'SELECT snapshot::text FROM "{storage.schema}".mastra_workflow_snapshot WHERE run_id = %s',
            ["r1"],
        )
        row = await cur.fetchone()
    assert row is not None and "no escape needed é 𝄞" in row[0]
    assert "\x00" not in json.dumps(json.loads(row[0]), ensure_ascii=False)


async def test_a_database_error_reaches_the_client_as_one_generic_line(
    storage: PostgresStore, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="agentstream"):
        async with _client(_app(storage, "{}", [])) as c:
            r = await c.post("/api/chat/q", json={"id": "c1", "messages": [_user("go")]}, headers=ALICE)
    errors = [e for e in _events(r.text) if e["type"] in ("error", "tool-output-error")]
    assert errors and all(e["errorText"] == STORAGE_ERROR_TEXT for e in errors), errors
    assert "no_such_table_for_agentstream" not in r.text and "secret_column" not in r.text
    assert "no_such_table_for_agentstream" in caplog.text  # the details are in the server log
