"""`mastra_api_routes`: every route group of the Mastra API, in one list."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _agents, _discovery, _memory, _observability, _tools, _workflows
from ._context import ApiContext
from ._http import not_found_route

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from .._mastra import Mastra
    from ..resumable import ChatRunner, StreamStore, WorkflowRunner
    from ..server import RequestGuard

__all__ = ["mastra_api_not_found", "mastra_api_routes"]


def mastra_api_routes(
    mastra: Mastra,
    *,
    guard: RequestGuard | None = None,
    stream_store: StreamStore | None = None,
    runner: ChatRunner | None = None,
    workflow_runner: WorkflowRunner | None = None,
    prefix: str = "/api",
    not_found: bool = True,
) -> list[BaseRoute]:
    """Starlette routes answering Mastra's server API for ``mastra`` under ``prefix``.

    ``not_found``: end with a route answering every other path under ``prefix`` with Mastra's 404
    (CORS headers included); ``False`` when the app mounts more routes under ``prefix`` after
    these (then mount `mastra_api_not_found` last)."""
    from ..server import RequestGuard as Guard

    context = ApiContext(
        mastra=mastra,
        guard=guard or Guard(),
        stream_store=stream_store,
        runner=runner,
        workflow_runner=workflow_runner,
        prefix=prefix.rstrip("/"),
    )
    groups = (_discovery, _agents, _tools, _workflows, _memory, _observability)
    out = [route for group in groups for route in group.routes(context)]
    if not_found:
        out.append(not_found_route(context))
    return out


def mastra_api_not_found(guard: RequestGuard | None = None, *, prefix: str = "/api") -> BaseRoute:
    """The route `mastra_api_routes(not_found=True)` ends with, to mount after other routes."""
    from .._mastra import Mastra
    from ..server import RequestGuard as Guard

    context = ApiContext(mastra=Mastra(), guard=guard or Guard(), prefix=prefix.rstrip("/"))
    return not_found_route(context)
