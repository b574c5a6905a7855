"""`mastra_api_routes`: every route group of the Mastra API, in one list."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _agents, _discovery, _memory, _observability, _tools, _workflows
from ._context import ApiContext

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from .._mastra import Mastra
    from ..resumable import ChatRunner, StreamStore, WorkflowRunner
    from ..server import RequestGuard

__all__ = ["mastra_api_routes"]


def mastra_api_routes(
    mastra: Mastra,
    *,
    guard: RequestGuard | None = None,
    stream_store: StreamStore | None = None,
    runner: ChatRunner | None = None,
    workflow_runner: WorkflowRunner | None = None,
    prefix: str = "/api",
) -> list[BaseRoute]:
    """Starlette routes answering Mastra's server API for ``mastra`` under ``prefix``."""
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
    return [route for group in groups for route in group.routes(context)]
