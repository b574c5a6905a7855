"""Leases: a manager renews the lease of every task it holds and takes over, exactly once, the
tasks whose owner stopped renewing (Mastra's startup recovery, made safe for processes that share
a store).
"""

from __future__ import annotations

import logging
from collections import deque
from datetime import datetime
from typing import TYPE_CHECKING, Any

import msgspec

from ..storage import (
    BackgroundTask,
    TaskError,
    TaskUpdate,
)
from ._errors import (
    TaskReleased,
)

if TYPE_CHECKING:
    pass

from ._records import STALE_TASK_MESSAGE, WORKFLOW_NAME, _Resume
from ._workers import _TaskRunner

log = logging.getLogger("agentstream.background")


class _LeasedRunner(_TaskRunner):
    """Lease renewal and takeover of `BackgroundTaskManager`."""

    async def _lease_loop(self, interval_ms: int) -> None:
        while True:
            await self._sleep(interval_ms / 1000)
            try:
                await self.heartbeat()
            except Exception:  # pragma: no cover - logged, the loop keeps going (a store may be down)
                log.exception("background task lease renewal failed")

    async def heartbeat(self) -> None:
        """Renew this manager's leases, stop local work it no longer holds, reclaim expired tasks.

        Runs every ``heartbeat_interval_ms`` on its own; call it directly to drive leases on a fake
        clock (tests).
        """
        await self.renew_leases()
        if self._shared is not None:
            self._shared.keep_alive()
        if self.config.recover_stale_tasks_on_start:
            await self.reclaim_expired()

    async def renew_leases(self) -> None:
        """Extend every lease this manager holds, in one statement, and act on the ones it lost.

        A task it runs or queues whose lease it no longer holds was cancelled by another process
        (announced here as cancelled) or taken over after the lease lapsed (stopped here, the new
        owner runs it). A task it holds but no longer runs (a worker that crashed) is let go.
        """
        if not self._owned and not self._orphans:
            return  # holds nothing: no write (on SQLite even an UPDATE matching nothing takes the lock)
        expected = set(self._owned)
        held = set(await self.storage.renew_task_leases(self.owner_id, self._lease_until()))
        self._orphans = False
        for task_id in expected - held:
            if task_id in self._owned:
                await self._on_lease_lost(task_id)
        for task_id in held - self._owned:
            await self.storage.update_task(
                task_id, TaskUpdate(lease_expires_at=self._clock()), expected_owner=self.owner_id
            )

    async def _on_lease_lost(self, task_id: str) -> None:
        run = self._runs.get(task_id)
        if run is not None and (run.finishing or run.finished or run.cancelled):
            return
        task = await self.storage.find_task(task_id)
        if task_id not in self._owned or (run is not None and (run.finishing or run.finished)):
            return  # settled locally while we looked
        abandoned = run is not None and run.thread_running()
        cancelled = task is not None and task.status == "cancelled"
        if run is not None:
            self._stop_run(run, RuntimeError("Task cancelled") if cancelled else TaskReleased("Lease lost"))
        if self._shared is not None and not cancelled:
            self._shared.release(task_id)
        if task is not None and task.status == "cancelled":
            if abandoned:
                await self.storage.update_task(
                    task_id, TaskUpdate(abandoned_thread=True), expected_status="cancelled"
                )
                task = msgspec.structs.replace(task, abandoned_thread=True)
            await self._announce_cancelled(task, task.completed_at or self._clock())
            return
        self._owned.discard(task_id)
        self._pending = deque(item for item in self._pending if item[0] != task_id)
        log.warning(
            "background task %s: lease lost (now %s, owner %s); stopped in this process",
            task_id,
            None if task is None else task.status,
            None if task is None else task.owner_id,
        )

    async def reclaim_expired(self) -> None:
        """Take over ``pending``/``running`` tasks whose lease expired (Mastra's startup recovery, made
        safe for processes sharing a store).

        An expired ``running`` task goes back to ``pending`` with ``retry_count + 1`` when it has
        retries left, otherwise it fails with `STALE_TASK_MESSAGE`. Expired (or unowned)
        ``pending`` tasks are claimed into this process's queue, oldest first, while it has room.
        Every change is a compare-and-set on (status, owner, lease expired), so of several managers
        sweeping at once exactly one takes each task, and a renewed lease is never taken.
        """
        now = self._clock()
        page = await self.storage.list_tasks(status=("running", "pending"), lease_expired_by=now)
        for task in page.tasks:
            if task.id in self._owned:
                continue  # ours and alive here: the next renewal extends it
            claimable: BackgroundTask | None = task
            if task.status == "running" and self._runs_remotely(task):
                await self._attach(task, now)
                continue
            if task.status == "running":
                claimable = await self._reclaim_running(task, now)
            if claimable is not None:
                await self._claim_pending(claimable, now)
        self._drain()

    def _runs_remotely(self, task: BackgroundTask) -> bool:
        return self.remote is not None and self.remote.runs_remotely(task.tool_name, task.agent_id)

    async def _attach(self, task: BackgroundTask, now: datetime) -> None:
        """Take over an expired ``running`` task that executes remotely: its attempt may well be
        running on a worker still, so this manager follows it (same attempt) instead of retrying."""
        if not self._has_slot(task.agent_id):
            return  # a later sweep, here or in another manager
        self._owned.add(task.id)
        claim = TaskUpdate(owner_id=self.owner_id, lease_expires_at=self._lease_until())
        won = await self.storage.update_task(
            task.id, claim, expected_status="running", expected_owner=task.owner_id, lease_expired_by=now
        )
        if not won:
            self._owned.discard(task.id)
            return
        snapshot = await self.storage.load_workflow_snapshot(WORKFLOW_NAME, task.id)
        data = snapshot["resumeData"] if isinstance(snapshot, dict) and "resumeData" in snapshot else None
        log.warning(
            "background task %s: the lease of %s expired; attached to its remote attempt",
            task.id,
            task.owner_id,
        )
        self._reserve(task.agent_id)
        mine = msgspec.structs.replace(task, owner_id=self.owner_id)
        self._spawn(mine, _Resume(data, already_running=True, attach=True))

    async def _reclaim_running(self, task: BackgroundTask, now: datetime) -> BackgroundTask | None:
        """Expired ``running`` -> ``pending`` (unowned) or ``failed``; the pending one if we won it."""
        if_expired: dict[str, Any] = {
            "expected_status": "running",
            "expected_owner": task.owner_id,
            "lease_expired_by": now,
        }
        if task.max_retries > 0 and task.retry_count < task.max_retries:
            retry = TaskUpdate(
                status="pending", retry_count=task.retry_count + 1, owner_id=None, lease_expires_at=None
            )
            if await self.storage.update_task(task.id, retry, **if_expired):
                return msgspec.structs.replace(
                    task,
                    status="pending",
                    retry_count=task.retry_count + 1,
                    owner_id=None,
                    lease_expires_at=None,
                )
            return None
        stale = TaskUpdate(
            status="failed",
            error=TaskError(message=STALE_TASK_MESSAGE),
            completed_at=now,
            owner_id=None,
            lease_expires_at=None,
        )
        await self.storage.update_task(task.id, stale, **if_expired)
        return None

    async def _claim_pending(self, task: BackgroundTask, now: datetime) -> None:
        if self._queue_full() and not self._has_slot(task.agent_id):
            return  # left for another manager, or for a later sweep here
        self._owned.add(task.id)
        claim = TaskUpdate(owner_id=self.owner_id, lease_expires_at=self._lease_until())
        won = await self.storage.update_task(
            task.id, claim, expected_status="pending", expected_owner=task.owner_id, lease_expired_by=now
        )
        if won:
            self._pending.append((task.id, task.agent_id))
        else:
            self._owned.discard(task.id)

    async def _release_leases(self) -> None:
        """On shutdown: expire every lease this manager holds, so a successor reclaims at once."""
        try:
            await self.storage.renew_task_leases(self.owner_id, self._clock())
        except Exception:  # pragma: no cover - the leases then lapse on their own
            log.exception("background task manager: releasing leases failed")
        self._owned.clear()
