"""Workflow runs whose process died (the mechanism: ``storage._liveness``, shared with agent runs).

A lost run is marked ``failed`` with a sentence that says so (`lost_error`).

Mastra recovers differently: ``Mastra.restartAllActiveWorkflowRuns()``, called by its deployer at
boot, restarts every ``running`` run of the default engine from its last snapshot, assuming the
booting process owns them all. Restarting a step that may have had effects half-way is not
something this layer can decide for a user's step, and with several processes on one store the
booting one owns nothing (docs/decisions/issue-22-dead-runs.md).
"""

from __future__ import annotations

from typing import Any

from ..storage import PROCESS_OWNER, RUN_LEASE_MS, RUN_RENEW_MS, run_lost_reason, run_owner_record

__all__ = ["LEASE_MS", "LOST_RUN", "PROCESS_OWNER", "RENEW_MS", "lost_error", "lost_reason", "owner_record"]

LEASE_MS = RUN_LEASE_MS
RENEW_MS = RUN_RENEW_MS
LOST_RUN = "WorkflowRunLost"
"""``error.name`` of a run marked failed because its process died."""
lost_reason = run_lost_reason
owner_record = run_owner_record


def lost_error(workflow_id: str, run_id: str, reason: str) -> dict[str, Any]:
    """The ``error`` of a lost run's ``failed`` snapshot."""
    return {
        "name": LOST_RUN,
        "message": (
            f"run {run_id[:120]!r} of workflow {workflow_id!r} stopped while running: {reason}. It was "
            "marked failed; steps that had finished keep their results, the step that was running may "
            "have had effects. Start a new run to try again."
        ),
    }
