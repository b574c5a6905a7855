"""Who runs a stored run, and whether that process still lives (workflow runs and agent runs).

A ``running`` snapshot (a workflow run's, or an agent run's resumed leg) records its owner: this
process (``host:pid:start``) and a lease (wall-clock milliseconds) that the running leg renews every
`RUN_RENEW_MS`. A run whose owner died would otherwise stay ``running`` for good, and cancel and
resume would keep answering "running in another server process" / "already being resumed". It is
lost when its lease expired (any process sharing the store can tell), or at once when its owner
was a process on this host that no longer exists (a restart after kill -9 on one machine; the
process start time tells a reused pid apart). Whoever loads such a snapshot first marks it
``failed`` with a sentence that says so (``workflows._liveness.lost_error``,
``agent._suspension``); docs/decisions/issue-22-dead-runs.md argues why it is not restarted.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

__all__ = ["PROCESS_OWNER", "RUN_LEASE_MS", "RUN_RENEW_MS", "run_lost_reason", "run_owner_record"]

RUN_LEASE_MS = 30_000
RUN_RENEW_MS = 10_000


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux ``/proc``), ``None`` elsewhere."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return fields[19]
    except (OSError, IndexError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


_HOST = socket.gethostname()
PROCESS_OWNER = f"{_HOST}:{os.getpid()}:{_start_time(os.getpid()) or 'unknown'}"
"""This process, as written into the ``running`` snapshots it owns."""


def run_owner_record(now_ms: float | None = None) -> dict[str, Any]:
    """The ``owner`` field of a ``running`` snapshot written now."""
    now = time.time() * 1000 if now_ms is None else now_ms
    return {"id": PROCESS_OWNER, "leaseExpiresAt": int(now + RUN_LEASE_MS)}


def run_lost_reason(snapshot: dict[str, Any], now_ms: float | None = None) -> str | None:
    """Why the ``running`` run of ``snapshot`` has no live owner, or ``None`` (it may be running)."""
    if snapshot.get("status") != "running":
        return None
    owner = snapshot.get("owner")
    if not isinstance(owner, dict) or not isinstance(owner.get("id"), str):
        return None  # written before owners were recorded: nothing to tell
    owner_id: str = owner["id"]
    if owner_id == PROCESS_OWNER:
        return None  # ours: this process knows whether it runs it
    host, _, rest = owner_id.partition(":")
    pid_text, _, started = rest.partition(":")
    if host == _HOST and pid_text.isdigit():
        pid = int(pid_text)
        if not _alive(pid):
            return f"its server process (pid {pid}) is gone"
        current = _start_time(pid)
        if started != "unknown" and current is not None and current != started:
            return f"its server process (pid {pid}) is gone (the pid now belongs to another process)"
    expires = owner.get("leaseExpiresAt")
    now = time.time() * 1000 if now_ms is None else now_ms
    if isinstance(expires, (int, float)) and expires < now:
        # the owner's host name stays out: the sentence reaches clients
        return f"its server process stopped renewing its lease {int((now - expires) / 1000)} s ago"
    return None
