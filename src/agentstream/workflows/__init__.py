"""Workflows (Mastra's ``createWorkflow`` / ``createStep``): steps chained with ``.then``, ``.parallel``,
``.branch``, loops, ``.foreach``, sleeps and ``.map``; runs that stream Mastra's workflow chunks, suspend
and resume (also in another process, through storage snapshots), and can be cancelled."""

from __future__ import annotations

from ._checkpoint import Checkpoint, RecordedStepError, Slot, StepRecord
from ._errors import (
    StepInputValidationError,
    WorkflowDefinitionError,
    WorkflowError,
    WorkflowInputValidationError,
    WorkflowResumeError,
)
from ._output import WorkflowResult, WorkflowRunOutput, WorkflowRunStatus
from ._run import Run
from ._step import Step, StepContext, StepExecute, StepWriter, create_step
from ._workflow import Condition, RetryConfig, Workflow, create_workflow

__all__ = [
    "Checkpoint",
    "Condition",
    "RecordedStepError",
    "RetryConfig",
    "Run",
    "Slot",
    "Step",
    "StepContext",
    "StepExecute",
    "StepInputValidationError",
    "StepRecord",
    "StepWriter",
    "Workflow",
    "WorkflowDefinitionError",
    "WorkflowError",
    "WorkflowInputValidationError",
    "WorkflowResult",
    "WorkflowResumeError",
    "WorkflowRunOutput",
    "WorkflowRunStatus",
    "create_step",
    "create_workflow",
]
