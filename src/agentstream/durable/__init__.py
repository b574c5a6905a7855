"""Durable background tasks on worker processes, on DBOS (PostgreSQL, or SQLite for one machine).

Server (dispatches; the manager keeps records, leases and streams; chunks come back via DBOS):

    from agentstream.background import BackgroundTaskManager
    from agentstream.durable import DurableBackground

    remote = DurableBackground("postgresql://postgres@127.0.0.1:54329/postgres")
    manager = BackgroundTaskManager(store, {"global_concurrency": 50}, remote=remote)
    # or Mastra(..., background_tasks={"remote": remote}): every task, agent-dispatched or not

Worker (``agentstream worker app:tools --database-url ...``, or in code):

    from agentstream.durable import DurableWorker, step

    async def research(args, context):
        pages = await step(fetch_pages, args["topic"])  # checkpointed: never run twice
        context.writer.write({"pages": len(pages)})
        return await step(summarize, pages)

    DurableWorker(url, {"research": research}, global_concurrency=8, per_agent_concurrency=2).launch()

Requires the ``durable`` extra (``pip install 'agentstream[durable]'``).
"""

from __future__ import annotations

from ._protocol import QUEUE_NAME, WORKFLOW_NAME, Outcome, TaskSpec
from ._remote import DurableBackground, RemoteTaskError, attempt_id
from ._worker import DurableWorker, step

__all__ = [
    "QUEUE_NAME",
    "WORKFLOW_NAME",
    "DurableBackground",
    "DurableWorker",
    "Outcome",
    "RemoteTaskError",
    "TaskSpec",
    "attempt_id",
    "step",
]
