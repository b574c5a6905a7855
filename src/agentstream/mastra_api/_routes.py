"""`mastra_api_routes`: every route group of the Mastra API, in one list."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from ..ai_sdk import Jobs
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
    jobs: Jobs | None = None,
) -> list[BaseRoute]:
    """Starlette routes answering Mastra's server API for ``mastra`` under ``prefix``. ``jobs``: the
    app's `Jobs` (its store records the workflow runs; the AI SDK routes get the same one); a bare
    ``stream_store`` is the deprecated spelling."""
    from ..server import RequestGuard as Guard

    if jobs is None:
        if stream_store is not None:
            warnings.warn(
                "mastra_api_routes(stream_store=...) is deprecated; pass jobs=Jobs(store), shared with the "
                "app's other routes",
                DeprecationWarning,
                stacklevel=2,
            )
        jobs = Jobs.shared(stream_store)
    elif stream_store is not None and stream_store is not jobs.store:
        raise ValueError(
            "mastra_api_routes: stream_store is not the store of the jobs given; give one of them"
        )
    context = ApiContext(
        mastra=mastra,
        guard=guard or Guard(),
        jobs=jobs,
        runner=runner,
        workflow_runner=workflow_runner,
        prefix=prefix.rstrip("/"),
    )
    groups = (_discovery, _agents, _tools, _workflows, _memory, _observability)
    return [route for group in groups for route in group.routes(context)]
