"""Stored runs in Mastra's shapes: a run of ``GET /workflows/:id/runs`` (``{workflowName, runId,
snapshot, createdAt, updatedAt, resourceId?}`` with Mastra's snapshot) and the run of ``GET
/workflows/:id/runs/:runId`` (status, result or error, payload, steps, the graph...).

Our snapshots keep what resuming needs (the input at the top, the branch choices, the resume
token's generation, the live owner's lease); Mastra's keep the input in ``context.input``. These
shapes are Mastra's: what is ours alone is left out (the lease names a host and process).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ..storage import WorkflowSnapshotRecord

__all__ = ["RUN_FIELDS", "leg_result", "mastra_snapshot", "run_item", "run_result"]

RUN_FIELDS = ("result", "error", "payload", "steps", "activeStepsPath", "serializedStepGraph")
"""What ``?fields=`` may ask for (status and the run's metadata always come)."""


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def mastra_snapshot(record: WorkflowSnapshotRecord) -> dict[str, Any]:
    """The stored snapshot as Mastra's ``WorkflowRunState``."""
    ours = _dict(record.snapshot)
    context = _dict(ours.get("context"))
    if ours.get("status") != "pending" or "input" in ours:
        context = {"input": ours.get("input"), **context}
    out: dict[str, Any] = {
        "runId": record.run_id,
        "status": ours.get("status", "pending"),
        "value": _dict(ours.get("value")),
        "context": context,
        "activePaths": [],
    }
    if "stepExecutionPath" in ours:
        out["stepExecutionPath"] = list(ours.get("stepExecutionPath") or [])
    out["activeStepsPath"] = {}
    out["serializedStepGraph"] = ours.get("serializedStepGraph") or []
    out["suspendedPaths"] = _dict(ours.get("suspendedPaths"))
    out["waitingPaths"] = {}
    out["resumeLabels"] = {}
    for key in ("result", "error"):
        if key in ours:
            out[key] = ours[key]
    if record.resource_id is not None:
        out["resourceId"] = record.resource_id
    out["timestamp"] = ours.get("timestamp", int(record.updated_at.timestamp() * 1000))
    return out


def run_item(record: WorkflowSnapshotRecord) -> dict[str, Any]:
    """One run of a runs listing."""
    out: dict[str, Any] = {
        "workflowName": record.workflow_name,
        "runId": record.run_id,
        "snapshot": mastra_snapshot(record),
        "createdAt": _iso(record.created_at),
        "updatedAt": _iso(record.updated_at),
    }
    if record.resource_id is not None:
        out["resourceId"] = record.resource_id
    return out


def run_result(record: WorkflowSnapshotRecord, fields: tuple[str, ...] | None) -> dict[str, Any]:
    """A run as ``getWorkflowRunById`` gives it: metadata and status always; of the rest, the
    ``fields`` asked for (all of them when ``None``)."""
    snapshot = mastra_snapshot(record)
    out: dict[str, Any] = {"runId": record.run_id, "workflowName": record.workflow_name}
    if record.resource_id is not None:
        out["resourceId"] = record.resource_id
    out.update(
        createdAt=_iso(record.created_at), updatedAt=_iso(record.updated_at), status=snapshot["status"]
    )
    context = dict(snapshot["context"])
    parts: dict[str, Any] = {}
    for key in ("result", "error"):
        if key in snapshot:
            parts[key] = snapshot[key]
    if "input" in context:
        parts["payload"] = context.pop("input")
    parts["steps"] = context
    parts["activeStepsPath"] = snapshot["activeStepsPath"]
    parts["serializedStepGraph"] = snapshot["serializedStepGraph"]
    wanted = RUN_FIELDS if fields is None else fields
    out.update({k: v for k, v in parts.items() if k in wanted})
    if fields is None:
        out.update(
            suspendedPaths=snapshot["suspendedPaths"],
            resumeLabels=snapshot["resumeLabels"],
            waitingPaths=snapshot["waitingPaths"],
        )
    return out


def leg_result(record: WorkflowSnapshotRecord) -> dict[str, Any]:
    """Mastra's ``WorkflowResult`` JSON from the snapshot a leg left (a leg run on a worker: its
    result is what it stored)."""
    ours = _dict(record.snapshot)
    status = ours.get("status", "failed")
    context = _dict(ours.get("context"))
    out: dict[str, Any] = {
        "status": status,
        "steps": {"input": ours.get("input"), **context},
        "input": ours.get("input"),
        "stepExecutionPath": list(ours.get("stepExecutionPath") or []),
    }
    if status == "success":
        out["result"] = ours.get("result")
    elif status == "failed" and "error" in ours:
        out["error"] = ours["error"]
    elif status == "suspended":
        suspended = list(_dict(ours.get("suspendedPaths")))
        out["suspended"] = [[step] for step in suspended]
        out["suspendPayload"] = {step: _dict(context.get(step)).get("suspendPayload") for step in suspended}
    out["runId"] = record.run_id
    return out
