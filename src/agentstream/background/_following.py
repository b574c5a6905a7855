"""Following the tasks other managers run, through the shared stream store, for this manager's
subscribers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from ..chunks import (
    chunk_from_dict,
)
from ..storage import (
    BackgroundTask,
)
from ._shared import SEGMENT_END

if TYPE_CHECKING:
    pass

from ._leases import _LeasedRunner
from ._records import _TASK_CHUNKS, _record_chunk

log = logging.getLogger("agentstream.background")


class _FollowingRunner(_LeasedRunner):
    """Following other managers' tasks, for `BackgroundTaskManager`."""

    async def _follow_loop(self, interval_ms: int) -> None:
        while True:
            try:
                await self.follow_tasks()
            except Exception:  # pragma: no cover - logged, the loop keeps going (a store may be down)
                log.exception("background task manager: following other managers' tasks failed")
            await self._sleep(interval_ms / 1000)

    async def follow_tasks(self) -> None:
        """Start following the running tasks other managers hold that a subscriber here wants; end
        the following of tasks that ended without their stream saying so (their manager died).

        Runs every ``follow_interval_ms`` when a ``stream_store`` is set; call it directly in tests.
        """
        if self._shared is None or (not self._subscribers and not self._followers):
            return
        page = await self.storage.list_tasks(status=("running", "pending"))
        alive = {task.id: task for task in page.tasks}
        for task_id in list(self._followers):
            if task_id in alive:
                self._stale_followers.discard(task_id)
            elif task_id in self._stale_followers:  # ended a poll ago and the stream never said so
                await self._end_following(task_id)
            else:
                self._stale_followers.add(task_id)
        for task_id in [t for t in self._followed if t not in alive and t not in self._followers]:
            del self._followed[task_id]
        for task in alive.values():
            if (
                task.status != "running"
                or task.id in self._owned
                or task.id in self._followers
                or self._followed.get(task.id, False) == task.started_at
                or not any(sub.wants(task) for sub in self._subscribers)
            ):
                continue
            self._followed[task.id] = task.started_at
            follower = asyncio.create_task(self._follow(task), name=f"background-task-follow:{task.id}")
            self._followers[task.id] = follower

    async def _follow(self, task: BackgroundTask) -> None:
        def deliver(wire: dict[str, Any]) -> None:
            chunk = chunk_from_dict(wire, unknown="keep")
            if isinstance(chunk, _TASK_CHUNKS):
                self._fan_out(task, chunk)
                if wire.get("type") in SEGMENT_END:
                    self._notify_terminal()

        assert self._shared is not None
        ended = False
        try:
            ended = await self._shared.follow(task.id, deliver, lambda: task.id in self._owned)
        except Exception as exc:
            log.warning("background task %s: following its stream failed (%s)", task.id, exc)
        finally:
            # Without its ending chunk (its stream expired or failed), the entry stays: the next
            # polls tell the end from the record (`_end_following`).
            if (ended or task.id in self._owned) and self._followers.get(task.id) is asyncio.current_task():
                del self._followers[task.id]
                self._stale_followers.discard(task.id)

    async def _end_following(self, task_id: str) -> None:
        """The task ended but its manager died before its stream said so: tell from the record."""
        follower = self._followers.pop(task_id)
        self._stale_followers.discard(task_id)
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower
        task = await self.storage.find_task(task_id)
        chunk = None if task is None else _record_chunk(task)
        if task is not None and chunk is not None:
            self._fan_out(task, chunk)
            self._notify_terminal()
