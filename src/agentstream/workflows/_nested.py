"""A workflow used as a step of another workflow."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ..chunks import Chunk, WorkflowCanceled, WorkflowFinish, WorkflowStart, chunk_to_dict, decode_chunk
from ._errors import WorkflowError
from ._step import Step, StepContext

if TYPE_CHECKING:
    from ._workflow import Workflow

__all__ = ["META", "nested_path", "nested_step", "resumed_step"]


# Where a nested workflow's suspension is recorded in the parent step's suspend payload (Mastra's
# key): the child's run id and the path to its suspended step, which the resume follows down.
META = "__workflow_meta"


def nested_step(workflow: Workflow) -> Step:
    """A `Step` that runs `workflow` to its end as one step of the parent run.

    The child's steps stream as steps of the parent run, as Mastra's do (see `_restamped`); the
    parent's cancellation cancels the child; the child starts with the
    parent's state and its state at the end becomes the parent's. A child that fails makes the
    step fail with its error. A child that suspends suspends the step, with the child's suspend
    payload plus ``__workflow_meta: {runId, path}`` (as Mastra); resuming the step resumes the
    child there with the resume data. Each other execution of the step (loop iterations, retries,
    a re-run after a crash) runs the child afresh under the run id ``{parent run id}.{workflow id}``.
    """

    async def execute(context: StepContext) -> Any:
        meta = _suspended_child(context.suspend_data)
        # the child keeps the parent's clock and sleep (a test's frozen clock, a durable run's timers)
        clock, sleep = context._clock, context._sleep
        if meta is not None:
            run = await workflow.create_run(meta["runId"], clock=clock, sleep=sleep)
        else:
            run = workflow._fresh_run(f"{context.run_id}.{workflow.id}", clock=clock, sleep=sleep)
        remove = context.abort_signal.add_listener(lambda _reason: _cancel_soon(run))
        try:
            if meta is not None:
                output = run.resume_stream(
                    step=meta["path"] or None,
                    resume_data=context.resume_data,
                    request_context=context.request_context,
                )
            else:
                # The child starts from the parent's state and hands its own back, as in Mastra.
                output = run.stream(
                    input_data=context.input_data,
                    initial_state=context.state,
                    request_context=context.request_context,
                )
            async for chunk in output.full_stream:
                if not isinstance(chunk, (WorkflowStart, WorkflowFinish, WorkflowCanceled)):
                    context.writer._relay(_restamped(chunk, workflow.id, context.run_id))
            result = await output.result
        finally:
            remove()
        context.set_state(run._execution.state[0])
        if result.status == "success":
            return result.result
        if result.status in ("failed", "tripwire") and result.error is not None:
            raise result.error  # a tripwire stays one: the parent run ends "tripwire" too
        if result.status == "suspended" and result.suspended:
            path = result.suspended[0]
            payload = result.suspend_payload.get(path[0])
            fields = {k: v for k, v in payload.items() if k != META} if isinstance(payload, dict) else {}
            return await context.suspend({**fields, META: {"runId": run.run_id, "path": path}})
        raise WorkflowError(f"nested workflow {workflow.id!r} ended {result.status}")

    step = Step(
        id=workflow.id,
        description=workflow.description,
        input_schema=workflow.input_schema,
        output_schema=workflow.output_schema,
        execute=execute,
        component="WORKFLOW",
        workflow=workflow,
    )
    return step


# The chunks of a nested run's steps: they show in the outer run under the nested step's id.
_STEP_EVENTS = frozenset(
    {
        "workflow-step-start",
        "workflow-step-result",
        "workflow-step-suspended",
        "workflow-step-waiting",
        "workflow-step-progress",
        "workflow-step-finish",
    }
)


def _restamped(chunk: Chunk, step_id: str, run_id: str) -> Chunk:
    """A chunk of the nested run as a chunk of the outer one (Mastra's nested-watch relay,
    packages/core/src/workflows/workflow.ts, Workflow.execute): the outer ``runId``; a step event's
    ``id`` (and so its ``stepName``) prefixed ``{nested step id}.``; a ``writer.write`` output keeps
    the inner step's name; ``data-*`` chunks go to the top level as they are."""
    data = chunk_to_dict(chunk)
    if "runId" in data:
        data["runId"] = run_id
    payload = data.get("payload")
    if isinstance(payload, dict):
        payload = dict(payload)
        if data.get("type") in _STEP_EVENTS and isinstance(payload.get("id"), str):
            payload["id"] = f"{step_id}.{payload['id']}"
            if "stepName" in payload or data["type"] != "workflow-step-finish":
                payload["stepName"] = payload["id"]
        elif data.get("type") == "workflow-step-output" and "runId" in payload:
            payload["runId"] = run_id
        data["payload"] = payload
    return decode_chunk(data, unknown="keep")


_PENDING: set[asyncio.Task[Any]] = set()


def _cancel_soon(run: Any) -> None:
    # called from the abort signal's listener (synchronous): the cancel runs as a task kept alive here
    task = asyncio.get_running_loop().create_task(run.cancel())
    _PENDING.add(task)
    task.add_done_callback(_PENDING.discard)


def _suspended_child(suspend_data: Any) -> dict[str, Any] | None:
    """The ``{runId, path}`` a suspended nested step recorded, when the step is being resumed."""
    meta = suspend_data.get(META) if isinstance(suspend_data, dict) else None
    if isinstance(meta, dict) and isinstance(meta.get("runId"), str) and isinstance(meta.get("path"), list):
        return meta
    return None


def nested_path(step_id: str, suspend_payload: Any) -> list[str]:
    """The path to a suspended step from this run: ``[step_id]``, followed down into a nested
    workflow that suspended (``[nested step id, its suspended step id, ...]``, as Mastra lists it)."""
    meta = _suspended_child(suspend_payload)
    return [step_id, *meta["path"]] if meta is not None else [step_id]


def resumed_step(workflow: Workflow, path: list[str]) -> Step | None:
    """The step at ``path`` from ``workflow``, through the nested workflows on the way."""
    current: Workflow | None = workflow
    found: Step | None = None
    for step_id in path:
        found = current.steps.get(step_id) if current is not None else None
        if found is None:
            return None
        current = found.workflow
    return found
