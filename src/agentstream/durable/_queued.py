"""`QueuedRunner`: what `DurableChat` and `DurableWorkflows` share, a DBOS client that enqueues one
JSON job per stream (its workflow id is the stream id) and cancels it; and `QueueUnavailable`, the
503 a server answers when the database cannot take the job."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Mapping
from typing import Any, ClassVar, Generic, TypeVar

import anyio
import psycopg
import sqlalchemy as sa
from dbos import DBOS, DBOSClient, EnqueueOptions, WorkflowSerializationFormat

from ..ai_sdk import ChatRequestError
from ._cancel import cancel_workflow
from ._inbox import create_inbox
from ._inbox_writer import InboxWriter
from ._protocol import to_sqlalchemy_url

__all__ = ["QueueUnavailable", "QueuedRunner"]

_log = logging.getLogger("agentstream.durable")
T = TypeVar("T")
J = TypeVar("J", bound=Mapping[str, Any])


class QueueUnavailable(ChatRequestError):
    """The job could not be handed to the workers in time (their database is down or unreachable):
    answered 503 with ``Retry-After``; the chat's stream claim is released, so nothing waits on it."""

    name = "ServiceUnavailable"

    def __init__(self, what: str, retry_after_sec: int = 5) -> None:
        super().__init__(
            f"the workers' database cannot take {what} right now; try again in a few seconds",
            status_code=503,
            headers={"Retry-After": str(retry_after_sec)},
        )


class QueuedRunner(Generic[J]):
    """Enqueues jobs for `agentstream worker` processes sharing ``database_url``.

    Its connections are two bounded pools, ``pool_size`` each: the hand-overs' on PostgreSQL
    (`InboxWriter`) and DBOS's client's (no overflow; a request waits at most ``timeout_sec`` for
    a connection), and every enqueue or cancel is bounded too: within ``timeout_sec`` it
    is done or it fails with `QueueUnavailable` (DBOS's client is told not to wait for the database
    to come back, and a connection attempt gives up after ``timeout_sec``)."""

    kind: ClassVar[str]
    queue_name: ClassVar[str]
    workflow_name: ClassVar[str]
    what: ClassVar[str] = "this job"

    def __init__(self, database_url: str, *, pool_size: int = 5, timeout_sec: float = 3.0) -> None:
        if pool_size < 1:
            raise ValueError(f"pool_size: expected a positive number of connections, got {pool_size!r}")
        if not timeout_sec > 0:
            raise ValueError(f"timeout_sec: expected a positive number of seconds, got {timeout_sec!r}")
        # A server may start before any worker: create (or upgrade) DBOS's tables; idempotent.
        DBOS.migrate(database_url)
        self.timeout_sec = timeout_sec
        url = to_sqlalchemy_url(database_url)
        connect_args = {"connect_timeout": max(1, int(timeout_sec))} if url.startswith("postgresql") else {}
        self._engine = sa.create_engine(
            url,
            pool_size=pool_size,
            max_overflow=0,
            pool_timeout=timeout_sec,
            pool_pre_ping=True,
            connect_args={**connect_args, "application_name": "agentstream_server"},
        )
        self._client = DBOSClient(
            system_database_engine=self._engine, application_name="agentstream", retry_connection_errors=False
        )
        # On PostgreSQL jobs go through the inbox, which wakes a worker at once (LISTEN/NOTIFY);
        # SQLite (one machine) has no notifications: jobs go on the DBOS queue, which workers poll.
        self._inbox: InboxWriter | None = None
        if self._engine.dialect.name == "postgresql":
            create_inbox(self._engine)
            plain = url.replace("postgresql+psycopg://", "postgresql://", 1)
            self._inbox = InboxWriter(plain, pool_size=pool_size, timeout_sec=timeout_sec)

    async def _bounded(self, work: Awaitable[T]) -> T:
        try:
            with anyio.fail_after(self.timeout_sec):
                return await work
        except (TimeoutError, sa.exc.DBAPIError, sa.exc.TimeoutError, psycopg.Error) as exc:
            _log.warning("the workers' database did not take %s: %s: %s", self.what, type(exc).__name__, exc)
            raise QueueUnavailable(self.what) from exc

    async def dispatch(self, job: J) -> None:
        """Enqueue the job (one already enqueued is not enqueued again: its workflow id is its
        stream id) and return once it is durably handed over; the workers write its UI chunks to
        the stream store the route follows."""
        await self._enqueue(job)

    async def _enqueue(self, job: Mapping[str, Any]) -> None:
        if self._inbox is not None:
            await self._bounded(self._inbox.put(self.kind, job))
            return
        # The workflow id is the stream id, so enqueueing a job twice runs it once; JSON (DBOS's
        # portable serialization), not pickle, so the queue holds no code.
        options: EnqueueOptions = {
            "queue_name": self.queue_name,
            "workflow_name": self.workflow_name,
            "workflow_id": job["stream_id"],
            "serialization_type": WorkflowSerializationFormat.PORTABLE,
        }
        await self._bounded(self._client.enqueue_async(options, job))

    async def cancel(self, stream_id: str) -> bool:
        """Cancel the job writing ``stream_id`` (a finished one is left as it is); whether it had
        started. A started job's worker stops its run within about half a second and ends the
        stream; a job that had not never will start: the caller ends its stream."""
        if self._inbox is not None and await self._bounded(self._inbox.take_back(stream_id)):
            return False  # no worker had claimed it: it never runs
        return await self._bounded(cancel_workflow(self._client, stream_id))

    def close(self) -> None:
        """Close the engine client's connections (jobs keep running on the workers)."""
        if self._inbox is not None:
            self._inbox.close()
        self._client.destroy()
        self._engine.dispose()
