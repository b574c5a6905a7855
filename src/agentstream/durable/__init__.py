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

Chat turns on workers (the server streams them from a shared stream store):

    runner = DurableChat(url)  # server: create_app(mastra, stream_store=redis_store, runner=runner)
    DurableWorker(url, mastra=mastra, stream_store=redis_store).launch()  # worker

Workflow runs on workers (the same worker; each workflow step is a DBOS step):

    workflow_route(mastra, stream_store=redis_store, runner=DurableWorkflows(url))  # server

Agent runs started inside DBOS workflow code (a worker's tool running an agent) are checkpointed:
each model call and each tool call is a step, replayed from its record after a crash. A
`DurableWorker` turns that on when it launches; a process running DBOS workflows of its own calls
`install_checkpoints()`. Importing this package changes nothing by itself: no DBOS workflow is
registered and no seam installed until a worker launches; a worker's workflows run with the
tools, agents, workflows and store handed to that `DurableWorker`, not with module registries.

Requires the ``durable`` extra (``pip install 'agentstream[durable]'``).
"""

from __future__ import annotations

from ._checkpoint import install_checkpoints
from ._jobs import (
    CHAT_QUEUE_NAME,
    CHAT_WORKFLOW_NAME,
    WORKFLOW_QUEUE_NAME,
    WORKFLOW_RUN_NAME,
    DurableChat,
    DurableWorkflows,
)
from ._protocol import QUEUE_NAME, WORKFLOW_NAME, Outcome, TaskSpec
from ._remote import DurableBackground, RemoteTaskError, attempt_id
from ._step_checkpoint import DBOSCheckpoint
from ._worker import DurableWorker, step

__all__ = [
    "CHAT_QUEUE_NAME",
    "CHAT_WORKFLOW_NAME",
    "QUEUE_NAME",
    "WORKFLOW_NAME",
    "WORKFLOW_QUEUE_NAME",
    "WORKFLOW_RUN_NAME",
    "DBOSCheckpoint",
    "DurableBackground",
    "DurableChat",
    "DurableWorker",
    "DurableWorkflows",
    "Outcome",
    "RemoteTaskError",
    "TaskSpec",
    "attempt_id",
    "install_checkpoints",
    "step",
]
