"""A workflow used as a step of another workflow."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ..chunks import WorkflowFinish, WorkflowStart
from ._errors import WorkflowError
from ._step import Step, StepContext

if TYPE_CHECKING:
    from ._workflow import Workflow

__all__ = ["nested_step"]


def nested_step(workflow: Workflow) -> Step:
    """A `Step` that runs `workflow` to its end as one step of the parent run.

    The child's chunks (other than its own start and finish) are forwarded as the parent step's
    ``workflow-step-output``; the parent's cancellation cancels the child; the child starts with the
    parent's state and its state at the end becomes the parent's. A child that fails makes
    the step fail with its error; suspending inside a nested workflow is not supported. Each
    execution of the step (loop iterations, retries, a re-run after a crash) runs the child afresh
    under the same run id ``{parent run id}.{workflow id}``.
    """

    async def execute(context: StepContext) -> Any:
        run = workflow._fresh_run(f"{context.run_id}.{workflow.id}")
        remove = context.abort_signal.add_listener(lambda _reason: _cancel_soon(run))
        try:
            # The child starts from the parent's state and hands its own back, as in Mastra.
            output = run.stream(input_data=context.input_data, initial_state=context.state)
            async for chunk in output.full_stream:
                if not isinstance(chunk, (WorkflowStart, WorkflowFinish)):
                    context.writer.write(chunk)
            result = await output.result
        finally:
            remove()
        context.set_state(run._execution.state[0])
        if result.status == "success":
            return result.result
        if result.status == "failed" and result.error is not None:
            raise result.error
        raise WorkflowError(
            f"nested workflow {workflow.id!r} ended {result.status}; suspending inside a nested workflow is not supported"
        )

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


_PENDING: set[asyncio.Task[Any]] = set()


def _cancel_soon(run: Any) -> None:
    # called from the abort signal's listener (synchronous): the cancel runs as a task kept alive here
    task = asyncio.get_running_loop().create_task(run.cancel())
    _PENDING.add(task)
    task.add_done_callback(_PENDING.discard)
