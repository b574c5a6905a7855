"""docs/decisions/issue-30-mastra-api-paths.md: in the app, every Mastra API route answers at its
Mastra path (no route of ours is matched first), the chat page's own reads are at paths Mastra
does not have, and the page asks for nothing at a Mastra path but the memory API it shares."""

from __future__ import annotations

import re
from importlib import resources
from typing import Any

import httpx
from starlette.routing import Match, Route

from agentstream._app import create_app
from agentstream._mastra import Mastra
from agentstream.mastra_api import mastra_api_routes
from agentstream.server import RequestGuard


def _scope(method: str, path: str) -> dict[str, Any]:
    return {"type": "http", "method": method, "path": path, "root_path": "", "headers": []}


def _sample(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "x", path)


def test_every_mastra_route_is_the_first_match_of_its_path() -> None:
    app = create_app(delay_in_ms=None)
    mastra_routes = [r for r in mastra_api_routes(Mastra(), guard=RequestGuard()) if isinstance(r, Route)]
    assert len(mastra_routes) > 30
    for route in mastra_routes:
        for method in sorted((route.methods or set()) - {"HEAD", "OPTIONS"}):
            scope = _scope(method, _sample(route.path))
            first = next(r for r in app.routes if r.matches(scope)[0] == Match.FULL)
            assert isinstance(first, Route) and first.path == route.path, (method, route.path, first)
            assert first.name == route.name  # Mastra's handler, not one of ours at the same path


def test_the_chat_page_reads_its_own_paths_which_mastra_does_not_have() -> None:
    page = resources.files("agentstream._web").joinpath("chat.html").read_text(encoding="utf-8")
    asked = set(re.findall(r'"(api/[a-z/]*)', page))
    shared = {path for path in asked if path.startswith("api/memory/")}  # Mastra's memory API, on purpose
    assert shared <= {"api/memory/threads", "api/memory/threads/"}, shared
    assert asked - shared == {"api/chat/info", "api/workflow", "api/workflow/", "api/chat/", "api/chat"}, (
        asked
    )
    mastra_paths = [r.path for r in mastra_api_routes(Mastra(), guard=RequestGuard()) if isinstance(r, Route)]
    for path in ("/api/chat/info", "/api/workflow", "/api/workflow/x/stream", "/api/workflow/x/resume"):
        assert not any(re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", p), path) for p in mastra_paths), path


async def test_the_moved_routes_answer_and_mastra_s_shapes_win_at_mastra_s_paths() -> None:
    app = create_app(delay_in_ms=None, heartbeat_ms=0)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as c:
        info = (await c.get("/api/chat/info")).json()
        listed = (await c.get("/api/workflow")).json()
        agents = (await c.get("/api/agents")).json()
        started = await c.post("/api/workflow/publish-article/stream", json={"inputData": {"topic": "tides"}})
        off = create_app(delay_in_ms=None, heartbeat_ms=0, mastra_api=False)
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=off), base_url="http://127.0.0.1"
        ) as o:
            without = await o.get("/api/agents")
    assert info == {"agents": [{"id": "demo", "name": "Demo Agent"}], "resumable": True}
    assert [w["id"] for w in listed["workflows"]] == ["publish-article"]
    assert (
        list(agents) == ["demo-agent"] and agents["demo-agent"]["name"] == "Demo Agent"
    )  # Mastra's record by id
    assert started.status_code == 200 and started.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert '"type":"data-workflow"' in started.text
    assert without.status_code == 404
