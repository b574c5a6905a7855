"""Chat ids that need escaping (``/``, dots, ``%``, spaces, non-ASCII) resume through the default
URL, ``<api>/<encodeURIComponent(id)>/stream``, with no ambiguity against the agent route
``<api>/<agent>/<id>/stream``; attacks on that URL learn nothing. On `create_app` served by uvicorn
(which passes the raw path the route needs), and on scopes built by hand for mounts and proxies."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Match, Mount

from agentstream._app import create_app
from agentstream.agent import Agent
from agentstream.ai_sdk import MAX_ID_LENGTH
from agentstream.server import RequestGuard, resume_route
from agentstream.server._resume import segment_path
from tests.server.test_chat_route import _free_port
from tests.server.test_resume_route import ANSWER, USERS, GatedModel, OpeningStore, auth, events, text_of

try:
    from agentstream import Mastra  # type: ignore[attr-defined]
except ImportError:
    from agentstream._mastra import Mastra


@contextlib.contextmanager
def serve_app(model: GatedModel, store: OpeningStore, guard: RequestGuard | None = None) -> Iterator[str]:
    import uvicorn

    mastra = Mastra(agents={"weather": Agent(id="weather", instructions="Be brief.", model=model)})
    app = create_app(mastra, smooth=False, heartbeat_ms=0, stream_store=store, guard=guard)
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 10
    while not server.started and time.time() < deadline:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/api/chat"
    finally:
        model.gate.set()
        server.should_exit = True
        thread.join(5)


def start(client: httpx.Client, url: str, chat_id: str, headers: dict[str, str] | None = None) -> None:
    """POST a chat and hang up after the first words (a reload)."""
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Weather in Berlin?"}]}
    body = {"id": chat_id, "messages": [user], "trigger": "submit-message"}
    with client.stream("POST", url, json=body, headers=headers) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if "text-delta" in line:
                return
    raise AssertionError("the answer never started")


def encoded(chat_id: str) -> str:
    """What the AI SDK's ``DefaultChatTransport.reconnectToStream`` puts in the URL (ai 5, 6, 7)."""
    return quote(chat_id, safe="!'()*-._~")  # encodeURIComponent


def resume(client: httpx.Client, url: str, raw: str, headers: dict[str, str] | None = None) -> httpx.Response:
    # httpx would re-normalise a URL string; the raw target is sent exactly as given.
    return client.get(url + raw, headers=headers, extensions={"target": f"/api/chat{raw}".encode()})


@pytest.mark.parametrize(
    "chat_id",
    [
        "team/alpha/42",
        "../../etc/passwd",
        "..",
        "a%2Fb",  # a literal percent sign: the client sends %252F
        "weather/chat-1",  # begins with an agent's id
        "naïve chat ✓ ?#&=+",
        "/",
    ],
)
def test_an_id_that_needs_escaping_resumes_through_the_default_url(chat_id: str) -> None:
    model = GatedModel()
    store = OpeningStore(model.gate)
    with serve_app(model, store) as url, httpx.Client(timeout=30) as client:
        start(client, url, chat_id)
        answer = resume(client, url, f"/{encoded(chat_id)}/stream")
        assert answer.status_code == 200
        assert text_of(events(answer.text)) == ANSWER
        assert store.reads == 2  # the POST's reader, then this one


def test_the_agent_route_takes_the_same_escaped_ids() -> None:
    model = GatedModel()
    store = OpeningStore(model.gate)
    with serve_app(model, store) as url, httpx.Client(timeout=30) as client:
        start(client, f"{url}/weather", "team/alpha/42")
        answer = resume(client, url, f"/weather/{encoded('team/alpha/42')}/stream")
        assert answer.status_code == 200 and text_of(events(answer.text)) == ANSWER


def test_slashes_are_never_read_as_another_route() -> None:
    model = GatedModel()
    store = OpeningStore(model.gate, open_on=3)  # two POSTs, then the one resume that finds a chat
    with serve_app(model, store) as url, httpx.Client(timeout=30) as client:
        start(client, url, "weather/chat-1")
        start(client, url, "chat-1/x")
        # Unescaped, "weather/chat-1" would be agent "weather", chat "chat-1": a different chat.
        assert resume(client, url, "/weather/chat-1/stream").status_code == 204
        # agent "chat-1", chat "x" (not chat "chat-1/x")
        assert resume(client, url, "/chat-1/x/stream").status_code == 204
        # Too many segments for either route: not found, not a guess.
        assert resume(client, url, "/a/b/c/stream").status_code == 404
        assert resume(client, url, "//stream").status_code == 404
        # A percent-encoded literal part of the path is still that part.
        assert store.reads == 2
        found = resume(client, url, "/%77eather%2Fchat-1/stream")
        assert found.status_code == 200 and text_of(events(found.text)) == ANSWER


def test_another_principal_gets_204_for_an_escaped_id() -> None:
    model = GatedModel()
    store = OpeningStore(model.gate)
    guard = RequestGuard(auth=auth)
    alice = {"authorization": "Bearer alice-token"}
    bob = {"authorization": "Bearer bob-token"}
    assert set(USERS.values()) == {"alice", "bob"}
    with serve_app(model, store, guard) as url, httpx.Client(timeout=30) as client:
        start(client, url, "alice/../bob", alice)
        for raw in (f"/{encoded('alice/../bob')}/stream", f"/weather/{encoded('alice/../bob')}/stream"):
            stolen = resume(client, url, raw, bob)
            assert (stolen.status_code, stolen.content) == (204, b"")
        assert resume(client, url, f"/{encoded('alice/../bob')}/stream").status_code == 401
        assert store.reads == 1
        mine = resume(client, url, f"/{encoded('alice/../bob')}/stream", alice)
        assert mine.status_code == 200 and text_of(events(mine.text)) == ANSWER


def test_an_id_longer_than_the_limit_is_refused_naming_it() -> None:
    model = GatedModel()
    with serve_app(model, OpeningStore(model.gate)) as url, httpx.Client(timeout=30) as client:
        longest = resume(client, url, f"/{'x' * MAX_ID_LENGTH}/stream")
        assert longest.status_code == 204
        too_long = resume(client, url, f"/{'x%2F' * MAX_ID_LENGTH}/stream")
        assert too_long.status_code == 400
        error: dict[str, Any] = too_long.json()["error"]
        assert error["path"] == "chat_id"
        assert error["message"] == (
            f"chat id: expected an id of at most {MAX_ID_LENGTH} characters, got {2 * MAX_ID_LENGTH}"
        )


def scope(path: str, raw: bytes | None, root_path: str = "") -> dict[str, Any]:
    made: dict[str, Any] = {"type": "http", "method": "GET", "path": path, "root_path": root_path}
    if raw is not None:
        made["raw_path"] = raw
    return made


def test_segment_path_under_a_mount_a_proxy_root_and_without_a_raw_path() -> None:
    # Mounted at /v1: Starlette's root path is /v1, the raw path is the whole path.
    mounted = scope("/v1/api/chat/a/b/stream", b"/v1/api/chat/a%2Fb/stream", "/v1")
    assert segment_path(mounted) == "/api/chat/a%2Fb/stream"
    # Behind a proxy (uvicorn --root-path /p): the path has the root, the raw path does not.
    proxied = scope("/p/api/chat/a/b/stream", b"/api/chat/a%2Fb/stream", "/p")
    assert segment_path(proxied) == "/api/chat/a%2Fb/stream"
    # A raw path with its query (httpx's ASGI transport sends one).
    assert segment_path(scope("/api/chat/a/b/stream", b"/api/chat/a%2Fb/stream?after=2")) == (
        "/api/chat/a%2Fb/stream"
    )
    # No raw path from the server: the decoded path, where an id is one segment.
    assert segment_path(scope("/api/chat/a/b/stream", None)) == "/api/chat/a/b/stream"
    # A raw path that does not spell the path (a server bug): the decoded path, never a guess.
    assert segment_path(scope("/api/chat/a/stream", b"/api/chat/zzz/stream")) == "/api/chat/a/stream"


def test_a_mounted_app_matches_escaped_ids() -> None:
    store = OpeningStore(GatedModel().gate)
    route = resume_route(store, "/api/chat/{chat_id}/stream")
    app = Starlette(routes=[Mount("/v1", routes=[route])])
    mounted = scope("/v1/api/chat/a/b/stream", b"/v1/api/chat/a%2Fb/stream")
    inner = app.router.routes[0]
    assert isinstance(inner, Mount)
    match, child = inner.matches(mounted)
    assert match is Match.FULL and child["root_path"] == "/v1"
    found, params = route.matches({**mounted, **child})
    assert found is Match.FULL and params["path_params"]["chat_id"] == "a/b"
