"""A workflow as ``GET /api/workflows`` and ``GET /api/workflows/:workflowId`` describe it
(``getWorkflowInfo`` of ``@mastra/server``): its steps with their schemas, every step of nested
workflows (``allSteps``), the step graph Studio draws (``stepGraph``) and its schemas.

Mastra sends each schema as a superjson string (``{"json": <JSON Schema>}`` serialised), which
client-js's ``getSchema`` and Studio's run form parse back.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..tools import json_schema_of

if TYPE_CHECKING:
    from ..workflows import Step, Workflow

__all__ = ["workflow_info"]

_DRAFT_07 = "http://json-schema.org/draft-07/schema#"
_OPTIONS = {"validateInputs": True, "emitStepEvents": True}


def _schema(schema: Any) -> str | None:
    """A schema as Mastra sends it: superjson of its draft-07 JSON Schema (``None``: none)."""
    if schema is None:
        return None
    converted = json_schema_of(schema)
    if isinstance(converted, dict) and "$schema" not in converted:
        converted = {"$schema": _DRAFT_07, **converted}
    return json.dumps({"json": converted}, separators=(",", ":"), ensure_ascii=False)


def _step(step: Step, *, flag_workflows: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"id": step.id}
    if step.description:
        out["description"] = step.description
    for key, schema in (
        ("inputSchema", step.input_schema),
        ("outputSchema", step.output_schema),
        ("resumeSchema", step.resume_schema),
        ("suspendSchema", step.suspend_schema),
    ):
        text = _schema(schema)
        if text is not None:
            out[key] = text
    if flag_workflows:
        out["isWorkflow"] = step.workflow is not None or step.component == "WORKFLOW"
    if step.component is not None:
        out["component"] = step.component
    return out


def _all_steps(workflow: Workflow, path: str = "") -> dict[str, Any]:
    """Every step, nested workflows' steps under ``<nested id>.<step id>`` (Mastra's ``getSteps``)."""
    out: dict[str, Any] = {}
    for key, step in workflow.steps.items():
        full = f"{path}.{key}" if path else key
        out[full] = _step(step, flag_workflows=True)
        if step.workflow is not None:
            out.update(_all_steps(step.workflow, full))
    return out


def workflow_info(workflow: Workflow, *, partial: bool = False) -> dict[str, Any]:
    """Mastra's ``getWorkflowInfo(workflow, partial)``: ``partial`` (``?partial=true``) leaves the
    steps and schemas out and counts the steps instead."""
    name = workflow.id
    if partial:
        out: dict[str, Any] = {"name": name}
        if workflow.description:
            out["description"] = workflow.description
        out.update(
            stepCount=len(workflow.steps),
            stepGraph=workflow.serialized_step_graph(),
            options=dict(_OPTIONS),
            steps={},
            allSteps={},
            origin="code",
        )
        return out
    out = {"name": name}
    if workflow.description:
        out["description"] = workflow.description
    out["origin"] = "code"
    out["steps"] = {key: _step(step, flag_workflows=False) for key, step in workflow.steps.items()}
    out["allSteps"] = _all_steps(workflow)
    out["stepGraph"] = workflow.serialized_step_graph()
    for key, schema in (
        ("inputSchema", workflow.input_schema),
        ("outputSchema", workflow.output_schema),
        ("stateSchema", workflow.state_schema),
    ):
        text = _schema(schema)
        if text is not None:
            out[key] = text
    out["options"] = dict(_OPTIONS)
    out["isProcessorWorkflow"] = False
    return out
