"""Re-enqueueing a dead worker's unfinished workflows, and the takeover queues that exist only while
they carry something.

A chat turn or workflow leg started from the inbox belongs to no DBOS queue; a takeover puts it
on its kind's queue (``agentstream-chat``, ``agentstream-workflows``) so that only a worker running
that kind dequeues it. DBOS 3.4 polls every registered queue it listens to (two transactions a
poll: the queue's settings, then the dequeue), so a takeover queue registered for good costs an
idle worker a poll every few seconds for a takeover that may never come. Instead the sweeper that
takes a worker over registers the queue it needs (DBOS's queue manager, which lists the queues
every second anyway, starts polling it within a second) and deletes it once nothing waits on it
(the queue's threads then stop). A queue a worker limits across all workers (``--chat-concurrency``)
carries every turn and is registered at launch, never deleted here
(docs/decisions/issue-28-idle-worker.md).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Set

from dbos import DBOS

__all__ = ["TAKEOVER_POLL_SEC", "TakeoverQueues"]

_log = logging.getLogger("agentstream.durable")

TAKEOVER_POLL_SEC = 1.0
"""A takeover queue's polling interval while it exists (it exists only while it carries work)."""


class TakeoverQueues:
    """`recover` re-enqueues a dead executor's PENDING workflows, each on its kind's queue
    (``queue_of``: workflow name → queue; a workflow enqueued on a queue keeps it); `tidy`, called
    after each lease round, deletes the on-demand queues (``on_demand``) that carry nothing."""

    def __init__(self, queue_of: Mapping[str, str], on_demand: Set[str]) -> None:
        self._queue_of = dict(queue_of)
        self._on_demand = frozenset(on_demand)
        # Looked at again after each round until empty: the ones registered here, and at start
        # the ones a previous worker (or a version that registered them for good) left behind.
        self._watched: set[str] = set(on_demand)
        self._lock = threading.Lock()

    def recover(self, executor_id: str) -> int:
        """Re-enqueue the unfinished workflows of the dead ``executor_id`` through DBOS's public
        workflow management (``list_workflows`` / ``resume_workflow``): the queue's limits hold,
        only a worker that runs that kind takes it, and it resumes after its last recorded step."""
        count = 0
        for status in DBOS.list_workflows(
            status="PENDING", executor_id=executor_id, load_input=False, load_output=False
        ):
            # Asked again just before resuming: a workflow that finished or moved on since is left alone.
            if DBOS.list_workflows(
                workflow_ids=[status.workflow_id],
                status="PENDING",
                executor_id=executor_id,
                load_input=False,
                load_output=False,
            ):
                queue = status.queue_name or self._queue_of.get(status.name or "")
                if queue in self._on_demand:
                    self._open(queue)
                DBOS.resume_workflow(status.workflow_id, queue_name=queue)
                count += 1
        return count

    def _open(self, queue: str) -> None:
        # ``never_update``: a queue some worker limits (registered at its launch) keeps its limits.
        DBOS.register_queue(queue, polling_interval_sec=TAKEOVER_POLL_SEC, on_conflict="never_update")
        with self._lock:
            self._watched.add(queue)

    def tidy(self) -> None:
        """Delete each watched on-demand queue that has nothing enqueued (its workflows were all
        dequeued); register again one that lost its row with work on it (another sweeper deleted it
        between our look and our resume)."""
        with self._lock:
            watched = sorted(self._watched)
        for queue in watched:
            waiting = DBOS.list_workflows(
                queue_name=queue, status="ENQUEUED", load_input=False, load_output=False, limit=1
            )
            found = DBOS.retrieve_queue(queue)
            if waiting:
                if found is None:
                    self._open(queue)
                continue
            # A queue with a limit across workers is some worker's own (it carries every job of
            # its kind), not a takeover queue: left as it is.
            if found is not None and found.global_concurrency is None:
                DBOS.delete_queue(queue)
                _log.info("takeover queue %s carries nothing any more; deleted", queue)
            with self._lock:
                self._watched.discard(queue)
