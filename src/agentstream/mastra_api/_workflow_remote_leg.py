"""A leg running elsewhere (a worker): its chunks followed in the stream store, its result read from
the snapshot it left."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from ._flows_http import not_found
from ._workflow_runs import leg_result

if TYPE_CHECKING:
    from ..workflows import Workflow
    from ._workflow_store import StoreLegs

__all__ = ["RemoteLeg"]


class RemoteLeg:
    """A dispatched leg, by its stream."""

    def __init__(self, legs: StoreLegs, stream_id: str, workflow: Workflow, run_id: str) -> None:
        self.legs = legs
        self.stream_id = stream_id
        self.workflow = workflow
        self.run_id = run_id

    def chunks(self) -> AsyncIterator[dict[str, Any]]:
        return self.legs.follow(self.stream_id, self.run_id)

    async def result(self) -> dict[str, Any]:
        """Mastra's ``WorkflowResult`` JSON, once the worker ended the leg's stream."""
        async for _ in self.chunks():
            pass
        record = await self.workflow.storage.find_workflow_run(self.workflow.id, self.run_id)
        if record is None:
            raise not_found("Workflow run")
        return leg_result(record)
