"""What every route group of the Mastra API shares: the registry, the guard, the stores."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..ai_sdk import Jobs
from ._threads import ThreadHub

if TYPE_CHECKING:
    from .._mastra import Mastra
    from ..resumable import ChatRunner, StreamStore, WorkflowRunner
    from ..server import RequestGuard

__all__ = ["ApiContext"]


@dataclass(frozen=True, slots=True)
class ApiContext:
    """One app's Mastra API: built once by `mastra_api_routes`, read by each route group."""

    mastra: Mastra
    """The registry the routes answer for (agents, workflows, storage, memory)."""
    guard: RequestGuard
    """The same checks as the chat routes: host, origin, CORS, auth, size, owner rules."""
    jobs: Jobs = field(default_factory=Jobs)
    """The app's job service: its store is where workflow runs are recorded (``None``: not
    resumable), and it holds the legs running here."""
    runner: ChatRunner | None = None
    """Chat turns on worker processes, when the app has them."""
    workflow_runner: WorkflowRunner | None = None
    """Workflow runs on worker processes, when the app has them."""
    prefix: str = "/api"
    """Mastra's ``apiPrefix``: Studio and ``@mastra/client-js`` default to ``/api``."""
    threads: ThreadHub = field(default_factory=ThreadHub)
    """The agents' runs on memory threads, for ``threads/subscribe`` (`ThreadHub`)."""

    @property
    def stream_store(self) -> StreamStore | None:
        """The store of `jobs`."""
        return self.jobs.store
