"""The ASGI app behind ``agentstream serve``: the chat page and ``useChat`` endpoints for a ``Mastra``."""

from __future__ import annotations

import importlib
from importlib import resources
from typing import Any

from ._mastra import Mastra

__all__ = ["create_app", "demo_mastra", "load_mastra"]


def demo_mastra() -> Mastra:
    """A ``Mastra`` holding the demo agent (offline ``demo`` model unless ``AGENTSTREAM_MODEL`` is set).

    Background tasks are on and every chat request is an until-idle stream, so the ``research``
    tool's ``data-background-task-*`` parts and the continuation answer reach the page. Storage is
    in memory unless ``AGENTSTREAM_DB`` names a SQLite file.
    """
    import os

    from ._demo import demo_mastra as build
    from .storage import SQLiteStore

    db = os.environ.get("AGENTSTREAM_DB")
    return build(
        os.environ.get("AGENTSTREAM_MODEL", "demo"),
        storage=SQLiteStore(db) if db else None,
        until_idle={"max_idle_ms": 120_000},
    )


def load_mastra(spec: str) -> Mastra:
    """``module:attr`` → the ``Mastra`` there (an instance, or a zero-argument factory returning one)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"--app must look like 'module:attr', got {spec!r}")
    value: Any = getattr(importlib.import_module(module_name), attr)
    if callable(value) and not isinstance(value, (Mastra, type)):
        value = value()
    if not isinstance(value, Mastra):
        raise TypeError(f"{spec} is {type(value).__name__}, expected a Mastra instance")
    return value


def create_app(
    mastra: Mastra | None = None,
    *,
    default_agent: str | None = None,
    smooth: bool = True,
    delay_in_ms: float | None = 10,
    heartbeat_ms: float = 15_000,
    send_reasoning: bool = True,
    send_sources: bool = True,
) -> Any:
    """A Starlette app: ``GET /`` (chat page), ``GET /api/agents``, ``POST /api/chat[/{agent_id}]``.

    Smoothing is on by default (word chunking, ``delay_in_ms``), as in the seed's route example.
    """
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse
    from starlette.routing import Route

    from .ai_sdk import smooth_stream
    from .server import chat_route

    mastra = mastra or demo_mastra()
    agents = mastra.get_agents()
    if not agents:
        raise ValueError("the Mastra instance has no agents to serve")
    default = default_agent or next(iter(agents))
    page = resources.files("agentstream._web").joinpath("chat.html").read_text(encoding="utf-8")
    options: dict[str, Any] = {
        "heartbeat_ms": heartbeat_ms,
        "send_reasoning": send_reasoning,
        "send_sources": send_sources,
        "experimental_transform": smooth_stream(delay_in_ms=delay_in_ms) if smooth else None,
    }

    async def index(_: Request) -> HTMLResponse:
        return HTMLResponse(page)

    async def list_agents(_: Request) -> JSONResponse:
        listed = [{"id": key, "name": agent.name} for key, agent in agents.items()]
        listed.sort(key=lambda a: a["id"] != default)
        return JSONResponse({"agents": listed})

    return Starlette(
        routes=[
            Route("/", index),
            Route("/api/agents", list_agents),
            chat_route(mastra, "/api/chat", agent=default, **options),
            chat_route(mastra, "/api/chat/{agent_id}", **options),
        ]
    )
