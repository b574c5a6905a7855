"""One owner rule for every route `create_app` mounts (issue 22, item 1).

Every owner-bearing route is walked with three kinds of principal an auth hook may return: a
string, a token's claims (a mapping with ``id``) and an object with ``.id`` (a new one per
request, whose ``repr`` differs each time, as a real user record's does). For each kind the owner
reaches her chat answer, approval follow-up and workflow runs, and another principal of the same
kind is refused (204 / 403 / 404: nothing seen, nothing stopped, nothing cancelled). The walk
fails if `create_app` mounts an API route it did not exercise.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from starlette.requests import Request
from starlette.routing import Route

from agentstream._abort import AbortError, AbortSignal
from agentstream._app import create_app
from agentstream._mastra import Mastra
from agentstream.agent import Agent
from agentstream.resumable import MemoryStreamStore
from agentstream.server import AuthError, RequestGuard, owner_key
from agentstream.testing import ScriptedModel
from agentstream.tools import Tool, ToolContext
from agentstream.workflows import StepContext, create_step, create_workflow
from tests.security._owner_walk_flows import walk_flows

USAGE = {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}


class User:
    """A user record as an app's auth hook returns it: no ``__repr__`` of its own."""

    def __init__(self, ident: str) -> None:
        self.id = ident


def _string(request: Request) -> object:
    user = request.headers.get("x-user")
    if not user:
        raise AuthError("missing x-user")
    return user


def _token(request: Request) -> object:
    user = request.headers.get("x-user")
    if not user:
        raise AuthError("missing x-user")
    return {"id": user, "scopes": ["chat"], "issued": id(request)}  # a new mapping per request


def _object(request: Request) -> object:
    user = request.headers.get("x-user")
    if not user:
        raise AuthError("missing x-user")
    return User(user)


HOOKS: dict[str, Callable[[Request], object]] = {"string": _string, "token": _token, "object": _object}
ALICE, BOB = {"x-user": "alice"}, {"x-user": "bob"}


class Gate:
    """A model that streams a word, then waits for ``go`` or the abort signal."""

    specification_version = "v2"
    provider = "test"
    model_id = "gate"

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.go = asyncio.Event()

    def do_stream(self, options: Any) -> AsyncIterator[dict[str, Any]]:
        return self._play(options["abort_signal"])

    async def _play(self, signal: AbortSignal) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "text-start", "id": "t1"}
        yield {"type": "text-delta", "id": "t1", "delta": "Working "}
        self.started.set()
        signal.add_listener(lambda _reason: self.go.set())
        await self.go.wait()
        if signal.aborted:
            raise AbortError("aborted")
        yield {"type": "text-end", "id": "t1"}
        yield {"type": "finish", "finishReason": "stop", "usage": USAGE}


class ReaderStore(MemoryStreamStore):
    """A memory store that tells when a stream has got one more reader (so a test stops or
    cancels only once the follower it started is following)."""

    def __init__(self) -> None:
        super().__init__()
        self.readers = 0
        self.changed = asyncio.Event()

    def read(self, stream_id: str, *, after: int = 0) -> AsyncIterator[bytes]:
        self.readers += 1
        self.changed.set()
        return super().read(stream_id, after=after)

    def read_checked(self, stream_id: str, *, after: int = 0) -> AsyncIterator[bytes]:
        self.readers += 1  # what the routes' readers use
        self.changed.set()
        return super().read_checked(stream_id, after=after)

    async def one_more_reader(self, since: int) -> None:
        while self.readers <= since:
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), 10)


class Teller:
    """Calls ``transfer`` until the prompt ends with its result, then says ``Sent.`` (any number of
    runs, unlike a script)."""

    specification_version = "v2"
    provider = "test"
    model_id = "teller"

    def __init__(self) -> None:
        self.calls = 0

    def do_stream(self, options: Any) -> AsyncIterator[dict[str, Any]]:
        self.calls += 1
        answered = bool(options["prompt"]) and options["prompt"][-1]["role"] == "tool"
        return self._play(answered, f"call-t{self.calls}")

    async def _play(self, answered: bool, call_id: str) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "stream-start", "warnings": []}
        if answered:
            yield {"type": "text-start", "id": "t"}
            yield {"type": "text-delta", "id": "t", "delta": "Sent."}
            yield {"type": "text-end", "id": "t"}
            yield {"type": "finish", "finishReason": "stop", "usage": USAGE}
            return
        yield {"type": "tool-call", "toolCallId": call_id, "toolName": "transfer", "input": '{"amount":7}'}
        yield {"type": "finish", "finishReason": "tool-calls", "usage": USAGE}


class World:
    """The app under test and the handles a test needs into it."""

    def __init__(self, hook: Callable[[Request], object]) -> None:
        self.gate = Gate()
        self.leg_running = asyncio.Event()
        self.leg_go = asyncio.Event()
        self.transfers: list[Any] = []
        self.teller_transfers: list[Any] = []
        agents = {"slow": self._slow(), "bank": self._bank(), "teller": self._teller()}
        self.mastra = Mastra(agents=agents, workflows={"w": self._flow()})
        self.store = ReaderStore()
        self.app = create_app(
            self.mastra, smooth=False, heartbeat_ms=0, guard=RequestGuard(auth=hook), stream_store=self.store
        )
        self.walked: set[tuple[str, str]] = set()

    def _slow(self) -> Agent:
        return Agent(id="slow", instructions="x", model=self.gate)

    def _bank(self) -> Agent:
        async def transfer(args: dict[str, Any], ctx: ToolContext) -> Any:
            self.transfers.append(args)
            return {"sent": args["amount"]}

        call = {"type": "tool-call", "toolCallId": "call-1", "toolName": "transfer", "input": '{"amount":5}'}
        text = [{"type": "text-start", "id": "t"}, {"type": "text-delta", "id": "t", "delta": "Sent."}]
        steps = [
            [{"type": "stream-start", "warnings": []}, call, {"type": "finish", "finishReason": "tool-calls", "usage": USAGE}],
            [{"type": "stream-start", "warnings": []}, *text, {"type": "text-end", "id": "t"},
             {"type": "finish", "finishReason": "stop", "usage": USAGE}],
        ]  # fmt: skip
        schema = {"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]}
        tool = Tool(
            id="transfer", description="Send", input_schema=schema, execute=transfer, require_approval=True
        )
        return Agent(id="bank", instructions="x", model=ScriptedModel(steps), tools=[tool])

    def _teller(self) -> Agent:
        async def transfer(args: dict[str, Any], ctx: ToolContext) -> Any:
            self.teller_transfers.append(args)
            return {"sent": args["amount"]}

        schema = {"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]}
        tool = Tool(
            id="transfer", description="Send", input_schema=schema, execute=transfer, require_approval=True
        )
        return Agent(id="teller", instructions="x", model=Teller(), tools=[tool])

    def _flow(self) -> Any:
        async def ask(c: StepContext) -> Any:
            if c.resume_data is None:
                return await c.suspend({"question": "go?"})
            self.leg_running.set()
            await self.leg_go.wait()
            return c.resume_data

        return create_workflow(id="w").then(create_step(id="ask", execute=ask)).commit()

    def client(self) -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=self.app)
        return httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", timeout=30)

    def mark(self, method: str, path: str) -> None:
        self.walked.add((method, path))


def _events(text: str) -> list[dict[str, Any]]:
    frames = [f.removeprefix("data: ") for f in text.split("\n\n") if f.startswith("data: ")]
    return [json.loads(f) for f in frames if f != "[DONE]"]


def _user(text: str) -> dict[str, Any]:
    return {"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}


async def _chat_answer(world: World, c: httpx.AsyncClient, chat: str, resume: str, agent_path: str) -> None:
    """Alice's running answer: Bob neither resumes, stops nor replaces it; Alice resumes and stops it."""
    world.gate.started.clear()
    world.gate.go.clear()
    body = {"id": chat, "trigger": "submit-message", "messages": [_user("go")]}
    answer = asyncio.create_task(c.post(agent_path, json=body, headers=ALICE))
    await asyncio.wait_for(world.gate.started.wait(), 10)
    assert (await c.get(resume, headers=BOB)).status_code == 204
    assert (await c.delete(resume, headers=BOB)).status_code == 204
    taken = await c.post(agent_path, json=body, headers=BOB)
    assert taken.status_code == 403, taken.text
    assert not answer.done()  # nothing Bob did reached it
    readers = world.store.readers
    follower = asyncio.create_task(c.get(resume, headers=ALICE))
    await world.store.one_more_reader(readers)
    assert (await c.delete(resume, headers=ALICE)).status_code == 204
    done, resumed = await asyncio.wait_for(asyncio.gather(answer, follower), 10)
    assert done.status_code == resumed.status_code == 200
    assert [e["type"] for e in _events(done.text)][-2:] == ["abort", "finish"]
    assert [e["type"] for e in _events(resumed.text)][-2:] == ["abort", "finish"]
    for method in ("GET", "DELETE"):
        world.mark(method, resume)
    world.mark("POST", agent_path)


async def test_owner_key_is_one_rule_for_every_kind_of_principal() -> None:
    assert owner_key(None) is None
    assert owner_key("alice") == owner_key("alice") == "alice"
    assert owner_key(User("alice")) == owner_key(User("alice")) == "User:alice"
    assert owner_key({"id": "alice", "x": 1}) == owner_key({"id": "alice", "x": 2}) == "dict:alice"
    assert len({owner_key("alice"), owner_key(User("alice")), owner_key({"id": "alice"})}) == 3

    class Anonymous:
        pass

    with pytest.raises(TypeError, match="no 'id' and no repr of its own"):
        owner_key(Anonymous())


async def _approval(world: World, c: httpx.AsyncClient) -> None:
    first = {"id": "chat-bank", "trigger": "submit-message", "messages": [_user("send 5")]}
    events = _events((await c.post("/api/chat/bank", json=first, headers=ALICE)).text)
    run_id = next(e for e in events if e["type"] == "data-tool-call-approval")["data"]["runId"]
    follow_up = {"id": "chat-bank", "messages": [], "resumeData": {"approved": True}, "runId": run_id}
    refused = await c.post("/api/chat/bank", json=follow_up, headers=BOB)
    assert refused.status_code == 403, refused.text
    assert world.transfers == []
    approved = await c.post("/api/chat/bank", json=follow_up, headers=ALICE)
    assert approved.status_code == 200
    assert {"type": "tool-output-available", "toolCallId": "call-1", "output": {"sent": 5}} in _events(
        approved.text
    )
    assert world.transfers == [{"amount": 5}]


async def _workflow(world: World, c: httpx.AsyncClient) -> None:
    start, resume = "/api/workflow/w/stream", "/api/workflow/w/resume"
    watch, cancel = "/api/workflow/w/runs/r1/stream", "/api/workflow/w/runs/r1/cancel"
    suspended = await c.post(start, json={"runId": "r1", "inputData": {}}, headers=ALICE)
    assert suspended.status_code == 200
    assert [e["data"]["status"] for e in _events(suspended.text) if e["type"] == "data-workflow"][
        -1
    ] == "suspended"
    again = {"runId": "r1", "resumeData": {"ok": True}, "step": "ask"}
    for path in (start, resume):
        foreign = await c.post(path, json=again, headers=BOB)
        assert foreign.status_code == 404, foreign.text
    assert (await c.post(cancel, headers=BOB)).status_code == 404
    leg = asyncio.create_task(c.post(resume, json=again, headers=ALICE))
    await asyncio.wait_for(world.leg_running.wait(), 10)
    assert (await c.get(watch, headers=BOB)).status_code == 204
    assert (await c.post(cancel, headers=BOB)).status_code == 404
    readers = world.store.readers
    watcher = asyncio.create_task(c.get(watch, headers=ALICE))
    await world.store.one_more_reader(readers)
    world.leg_go.set()
    finished, watched = await asyncio.wait_for(asyncio.gather(leg, watcher), 10)
    assert finished.status_code == watched.status_code == 200
    for answer in (finished, watched):
        assert [e["data"]["status"] for e in _events(answer.text) if e["type"] == "data-workflow"][
            -1
        ] == "success"
    # A second run, suspended: only its owner cancels it.
    r2 = await c.post(start, json={"runId": "r2", "inputData": {}}, headers=ALICE)
    assert r2.status_code == 200
    assert (await c.post("/api/workflow/w/runs/r2/cancel", headers=BOB)).status_code == 404
    cancelled = await c.post("/api/workflow/w/runs/r2/cancel", headers=ALICE)
    assert cancelled.status_code == 200, cancelled.text
    snapshot = await world.mastra.storage.load_workflow_snapshot("w", "r2")
    assert snapshot["status"] == "canceled"
    world.walked |= {("POST", start), ("POST", resume), ("GET", watch), ("POST", cancel)}


def _api_routes(app: Any) -> set[tuple[str, str]]:
    mounted = set()
    for route in app.routes:
        if isinstance(route, Route) and route.path.startswith("/api/"):
            mounted |= {(m, route.path) for m in (route.methods or ()) if m not in ("HEAD", "OPTIONS")}
    return mounted


def _template(method: str, path: str) -> tuple[str, str]:
    templates = {
        "/api/chat/chat-a/stream": "/api/chat/{chat_id}/stream",
        "/api/chat/slow/chat-b/stream": "/api/chat/{agent_id}/{chat_id}/stream",
        "/api/chat/slow": "/api/chat/{agent_id}",
        "/api/chat/bank": "/api/chat/{agent_id}",
        "/api/workflow/w/stream": "/api/workflow/{workflow_id}/stream",
        "/api/workflow/w/resume": "/api/workflow/{workflow_id}/resume",
        "/api/workflow/w/runs/r1/stream": "/api/workflow/{workflow_id}/runs/{run_id}/stream",
        "/api/workflow/w/runs/r1/cancel": "/api/workflow/{workflow_id}/runs/{run_id}/cancel",
        "/api/memory/threads/t-alice": "/api/memory/threads/{thread_id}",
        "/api/memory/threads/t-alice/messages": "/api/memory/threads/{thread_id}/messages",
        "/api/agents/teller": "/api/agents/{agent_id}",
        "/api/tools/transfer": "/api/tools/{tool_id}",
        "/api/agents/teller/tools/transfer": "/api/agents/{agent_id}/tools/{tool_id}",
        "/api/tools/transfer/execute": "/api/tools/{tool_id}/execute",
        "/api/agents/teller/tools/transfer/execute": "/api/agents/{agent_id}/tools/{tool_id}/execute",
    }
    if path not in templates and path.startswith("/api/agents/teller/"):
        return method, "/api/agents/{agent_id}/" + path.removeprefix("/api/agents/teller/")
    return method, templates.get(path, path)


async def _memory(world: World, c: httpx.AsyncClient, hook: Callable[[Request], object]) -> None:
    """The memory API: Alice's thread is hers under her owner key, another principal never sees it."""
    from agentstream.memory import Memory
    from agentstream.server import owner_key

    alice = owner_key(hook(Request({"type": "http", "headers": [(b"x-user", b"alice")]})))
    assert alice is not None
    await Memory(world.mastra.storage).create_thread(resource_id=alice, thread_id="t-alice")
    threads, one = "/api/memory/threads", "/api/memory/threads/t-alice"
    mine = await c.get(threads, headers=ALICE)
    assert mine.status_code == 200 and [t["id"] for t in mine.json()["threads"]] == ["t-alice"]
    assert (await c.get(threads, headers=BOB)).json()["threads"] == []
    assert (await c.get(threads, params={"resourceId": alice}, headers=BOB)).status_code == 403
    for path in (one, one + "/messages"):
        assert (await c.get(path, headers=BOB)).status_code == 404
        assert (await c.get(path, headers=ALICE)).status_code == 200
        assert (await c.get(path)).status_code == 401
    assert (await c.delete(one, headers=BOB)).status_code == 404
    assert (await c.delete(one, headers=ALICE)).status_code == 200
    assert (await c.get(one, headers=ALICE)).status_code == 404
    world.walked |= {("GET", threads), ("GET", one), ("GET", one + "/messages"), ("DELETE", one)}


def _suspended_run(text: str) -> tuple[str, str]:
    approval = next(e for e in _events(text) if e["type"] == "tool-call-approval")
    return approval["runId"], approval["payload"]["toolCallId"]


async def _mastra_runs(world: World, c: httpx.AsyncClient, hook: Callable[[Request], object]) -> None:
    """Mastra's agent run routes: a run suspended for Alice is approved, declined or resumed by
    Alice only; Bob can neither act for her resource, write to her thread nor take her run's id."""
    alice = owner_key(hook(Request({"type": "http", "headers": [(b"x-user", b"alice")]})))
    base = "/api/agents/teller"
    first = {"messages": "send 7", "memory": {"thread": "t-teller", "resource": alice}}
    started = await c.post(f"{base}/stream", json=first, headers=ALICE)
    assert started.status_code == 200, started.text
    run_id, call_id = _suspended_run(started.text)
    decision = {"runId": run_id, "toolCallId": call_id}
    for route in (
        "approve-tool-call",
        "decline-tool-call",
        "approve-tool-call-generate",
        "decline-tool-call-generate",
    ):
        refused = await c.post(f"{base}/{route}", json=decision, headers=BOB)
        assert refused.status_code == 404, (route, refused.text)
        assert (await c.post(f"{base}/{route}", json=decision)).status_code == 401
    resume = {"runId": run_id, "resumeData": {"approved": True}}
    assert (await c.post(f"{base}/resume-stream", json=resume, headers=BOB)).status_code == 404
    # Naming Alice's resource, Bob acts for his own (the server's resource wins, as in Mastra).
    own = await c.post(
        f"{base}/stream",
        json={"messages": "hi", "memory": {"thread": "t-bob", "resource": alice}},
        headers=BOB,
    )
    assert own.status_code == 200, own.text
    thread = await world.mastra.storage.get_thread("t-bob")
    assert thread is not None and thread.resource_id == owner_key(
        hook(Request({"type": "http", "headers": [(b"x-user", b"bob")]}))
    )
    for body in (
        {"messages": "hi", "memory": {"thread": "t-teller"}},  # writing to Alice's thread
        {"messages": "hi", "runId": run_id},  # taking Alice's run
    ):
        for route in ("stream", "generate", "stream-until-idle"):
            taken = await c.post(f"{base}/{route}", json=body, headers=BOB)
            assert taken.status_code == 403, (route, body, taken.text)
    # Following Alice's thread: refused to Bob (the stream itself is read over HTTP in
    # tests/mastra_api/test_client_js.py; an in-process client would wait for its end).
    follow = {"threadId": "t-teller", "resourceId": alice}
    assert (await c.post(f"{base}/threads/subscribe", json=follow, headers=BOB)).status_code == 403
    assert (await c.post(f"{base}/threads/subscribe", json=follow)).status_code == 401
    world.mark("POST", f"{base}/threads/subscribe")
    assert world.teller_transfers == []
    approved = await c.post(f"{base}/approve-tool-call", json=decision, headers=ALICE)
    assert approved.status_code == 200 and "Sent." in approved.text
    assert world.teller_transfers == [{"amount": 7}]
    # generate suspends too; its decline answers JSON
    generated = (await c.post(f"{base}/generate", json={"messages": "send 7"}, headers=ALICE)).json()
    assert generated["finishReason"] == "suspended", generated
    call = {"runId": generated["runId"], "toolCallId": generated["suspendPayload"]["toolCallId"]}
    declined = await c.post(f"{base}/decline-tool-call-generate", json=call, headers=ALICE)
    assert declined.status_code == 200 and declined.json()["text"] == "Sent.", declined.text
    for route in ("approve-tool-call-generate", "decline-tool-call", "resume-stream"):
        leg = await c.post(f"{base}/stream-until-idle", json={"messages": "send 7"}, headers=ALICE)
        run, tool_call = _suspended_run(leg.text)
        body = {"runId": run, "toolCallId": tool_call, "resumeData": {"approved": True}}
        done = await c.post(f"{base}/{route}", json=body, headers=ALICE)
        assert done.status_code == 200 and "Sent." in done.text, (route, done.text)
    assert world.teller_transfers == [{"amount": 7}] * 3  # approved, declined, approved, declined, resumed
    routes = ["stream", "stream-until-idle", "generate", "approve-tool-call", "decline-tool-call"]
    routes += ["approve-tool-call-generate", "decline-tool-call-generate", "resume-stream"]
    world.walked |= {("POST", f"{base}/{route}") for route in routes}


async def _eventually(check: Callable[[], Any]) -> Any:
    for _ in range(500):
        if value := await check():
            return value
        await asyncio.sleep(0.01)
    raise AssertionError("the thread run did not get there")


async def _mastra_threads(world: World, c: httpx.AsyncClient, hook: Callable[[Request], object]) -> None:
    """Studio's thread routes: Bob neither posts to, approves in nor aborts Alice's thread; Alice's
    message runs on her thread and only she approves the call it waits for."""
    alice = owner_key(hook(Request({"type": "http", "headers": [(b"x-user", b"alice")]})))
    base, thread = "/api/agents/teller", {"threadId": "t-thread", "resourceId": alice}
    message = {"message": {"contents": "send 7"}, **thread}
    routes = {
        "send-message": message,
        "queue-message": message,
        "signals": {"signal": {"type": "user-message", "contents": "send 7"}, **thread},
        "send-tool-approval": {**thread, "toolCallId": "call-x", "approved": True},
        "threads/abort": thread,
    }
    sent = await c.post(f"{base}/send-message", json=message, headers=ALICE)
    assert sent.status_code == 200 and sent.json()["accepted"] is True, sent.text
    agent = world.mastra.get_agent("teller")
    pending = await _eventually(lambda: agent.suspended_run(thread_id="t-thread"))
    for route, body in routes.items():
        body = {**body, "toolCallId": pending["toolCallId"]} if route == "send-tool-approval" else body
        assert (await c.post(f"{base}/{route}", json=body, headers=BOB)).status_code == 403, route
        assert (await c.post(f"{base}/{route}", json=body)).status_code == 401, route
    # Bob's own thread has no run waiting for Alice's call
    bobs = {"threadId": "t-bob-thread", "toolCallId": pending["toolCallId"], "approved": True}
    assert (await c.post(f"{base}/send-tool-approval", json=bobs, headers=BOB)).status_code == 404
    before = len(world.teller_transfers)
    approval = {**thread, "toolCallId": pending["toolCallId"], "approved": True}
    approved = await c.post(f"{base}/send-tool-approval", json=approval, headers=ALICE)
    assert approved.status_code == 200 and approved.json()["runId"] == pending["runId"], approved.text

    async def transferred() -> bool:
        return len(world.teller_transfers) == before + 1

    await _eventually(transferred)
    for route in ("queue-message", "signals", "threads/abort"):
        assert (await c.post(f"{base}/{route}", json=routes[route], headers=ALICE)).status_code == 200, route
    world.walked |= {("POST", f"{base}/{route}") for route in routes}


async def _mastra_listings(world: World, c: httpx.AsyncClient) -> None:
    """Mastra's descriptions, tools and discovery routes: any authenticated caller, nobody else."""
    before = list(world.teller_transfers)
    gets = [
        path
        for method, path in _api_routes(world.app)
        if method == "GET"
        and "{" not in path
        and not path.startswith(("/api/chat", "/api/workflow", "/api/memory"))
    ]
    gets += ["/api/agents/teller", "/api/tools/transfer", "/api/agents/teller/tools/transfer"]
    gets += ["/api/agents/teller/voice/speakers"]
    for path in gets:
        assert (await c.get(path, headers=BOB)).status_code == 200, path
        # Mastra's one public route (Studio reads it to know whether to show a login)
        assert (await c.get(path)).status_code == (200 if path == "/api/auth/capabilities" else 401), path
        world.mark("GET", path)
    for path in ("/api/tools/transfer/execute", "/api/agents/teller/tools/transfer/execute"):
        assert (await c.post(path, json={"data": {"amount": "x"}})).status_code == 401
        invalid = await c.post(path, json={"data": {"amount": "x"}}, headers=BOB)
        assert invalid.status_code == 200 and invalid.json()["error"] is True  # Mastra's validation answer
        world.mark("POST", path)
    assert world.teller_transfers == before  # invalid arguments: the tool did not run


@pytest.mark.parametrize("kind", sorted(HOOKS))
async def test_every_route_serves_the_owner_and_refuses_another_principal(kind: str) -> None:
    world = World(HOOKS[kind])
    async with world.client() as c:
        await _chat_answer(world, c, "chat-a", "/api/chat/chat-a/stream", "/api/chat")
        await _chat_answer(world, c, "chat-b", "/api/chat/slow/chat-b/stream", "/api/chat/slow")
        await _approval(world, c)
        await _workflow(world, c)
        await _memory(world, c, HOOKS[kind])
        await _mastra_runs(world, c, HOOKS[kind])
        await _mastra_threads(world, c, HOOKS[kind])
        await _mastra_listings(world, c)
        await walk_flows(world, c, HOOKS[kind])  # the workflows, memory and observability routes
        for listing in ("/api/chat/info", "/api/workflow"):
            assert (await c.get(listing, headers=BOB)).status_code == 200
            assert (await c.get(listing)).status_code == 401
            world.mark("GET", listing)
    walked = {_template(m, p) for m, p in world.walked}
    assert _api_routes(world.app) <= walked, f"not walked: {_api_routes(world.app) - walked}"


async def test_a_workflow_run_is_stored_under_the_owner_key_of_an_object_principal() -> None:
    world = World(_object)
    async with world.client() as c:
        r = await c.post("/api/workflow/w/stream", json={"runId": "r1", "inputData": {}}, headers=ALICE)
        assert r.status_code == 200
    snapshot = await world.mastra.storage.load_workflow_snapshot("w", "r1")
    assert snapshot["resourceId"] == "User:alice"  # not "<...User object at 0x...>"


async def test_a_chat_named_after_a_run_s_stream_key_does_not_take_the_run_s_stream() -> None:
    """Issue 22, item 2: Bob's chat whose id is Alice's run's stream key (this round's or the
    first round's spelling) runs, and Alice still resumes, watches and cancels her run."""
    from agentstream.resumable import workflow_stream_key

    world = World(_string)
    async with world.client() as c:
        suspended = await c.post(
            "/api/workflow/w/stream", json={"runId": "r1", "inputData": {}}, headers=ALICE
        )
        assert suspended.status_code == 200
        answers = []
        for chat_id in (workflow_stream_key("w", "r1"), "workflow-run\x1fw\x1fr1"):
            world.gate.started.clear()
            body = {"id": chat_id, "trigger": "submit-message", "messages": [_user("go")]}
            answers.append(asyncio.create_task(c.post("/api/chat/slow", json=body, headers=BOB)))
            await asyncio.wait_for(world.gate.started.wait(), 10)
        resume = {"runId": "r1", "resumeData": {"ok": True}, "step": "ask"}
        leg = asyncio.create_task(c.post("/api/workflow/w/resume", json=resume, headers=ALICE))
        await asyncio.wait_for(world.leg_running.wait(), 10)
        readers = world.store.readers
        watched = asyncio.create_task(c.get("/api/workflow/w/runs/r1/stream", headers=ALICE))
        await world.store.one_more_reader(readers)
        cancelled = await c.post("/api/workflow/w/runs/r1/cancel", headers=ALICE)
        finished, seen = await asyncio.wait_for(asyncio.gather(leg, watched), 10)
        assert not any(a.done() for a in answers)  # Bob's chats ran on, untouched
        world.gate.go.set()
        chats = await asyncio.wait_for(asyncio.gather(*answers), 10)
    assert cancelled.status_code == 200, cancelled.text
    assert finished.status_code == seen.status_code == 200
    for answer in (finished, seen):
        assert [e["data"]["status"] for e in _events(answer.text) if e["type"] == "data-workflow"][
            -1
        ] == "canceled"
    assert all(chat.status_code == 200 for chat in chats)
