"""Errors of the workflow layer, and the control-flow signals a step raises (`suspend`, `bail`)."""

from __future__ import annotations

from typing import Any

from ..tools import SchemaIssue, format_issues

__all__ = [
    "StepInputValidationError",
    "StepOutputValidationError",
    "WorkflowDefinitionError",
    "WorkflowError",
    "WorkflowInputValidationError",
    "WorkflowResumeError",
]


class WorkflowError(Exception):
    """Base of the workflow layer's errors."""


class WorkflowDefinitionError(WorkflowError, ValueError):
    """A workflow or step is built wrongly (duplicate step id, no steps, not committed, ...)."""


class WorkflowInputValidationError(WorkflowError, ValueError):
    """The input given to `run.stream()` / `run.start()` does not match the workflow's `input_schema`.

    Nothing runs: `run.start()` raises it, `run.stream()` ends failed with it (as Mastra's
    ``#validateSchema``: a ``MastraError`` ``WORKFLOW_SCHEMA_VALIDATION_FAILED``, category ``USER``). The
    message names each offending field (``Invalid input data: \n- value: Invalid input: expected
    number, received string``), `issues` holds them and `workflow_id` names the workflow.
    """

    name = "Error"

    def __init__(self, workflow_id: str, issues: tuple[SchemaIssue, ...]) -> None:
        super().__init__(f"Invalid input data: \n{format_issues(issues)}")
        self.workflow_id = workflow_id
        self.issues = issues
        self.details: dict[str, Any] = {
            "domain": "MASTRA_WORKFLOW",
            "category": "USER",
            "code": "WORKFLOW_SCHEMA_VALIDATION_FAILED",
            "details": {},
        }


class _ValidationFailure(WorkflowError):
    """A step's data failed its schema: Mastra's `MastraError` shape (`domain`, `category`, `code`)."""

    name = "Error"
    _what = ""
    code = ""

    def __init__(self, step_id: str, issues: tuple[SchemaIssue, ...]) -> None:
        super().__init__(f"Step {self._what} validation failed: \n{format_issues(issues)}")
        self.step_id = step_id
        self.issues = issues
        cause = [{"path": list(i.path), "message": i.message} for i in issues]
        self.details: dict[str, Any] = {
            "domain": "MASTRA_WORKFLOW",
            "category": "USER",
            "code": self.code,
            "details": {},
            "cause": {"name": "Error", "message": _json({"issues": cause}), "issues": cause},
        }


def _json(value: Any) -> str:
    import json

    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class StepInputValidationError(_ValidationFailure):
    """A step's input does not match its `input_schema` (the step fails without running)."""

    _what = "input"
    code = "WORKFLOW_STEP_INPUT_VALIDATION_FAILED"


class StepOutputValidationError(_ValidationFailure):
    """What a step returned does not match its `output_schema` (the step fails)."""

    _what = "output"
    code = "WORKFLOW_STEP_OUTPUT_VALIDATION_FAILED"


class StepSuspendValidationError(_ValidationFailure):
    """The payload given to `suspend()` does not match the step's `suspend_schema`."""

    _what = "suspend payload"
    code = "WORKFLOW_STEP_SUSPEND_VALIDATION_FAILED"


class WorkflowResumeError(WorkflowError, ValueError):
    """A run cannot be resumed: unknown run, not suspended, wrong step, resume data that does not match
    the step's `resume_schema`, or already resumed by someone else."""


class _Suspend(BaseException):
    """Raised by `context.suspend()`: the step stops here and the run suspends."""

    def __init__(self, payload: Any) -> None:
        super().__init__("step suspended")
        self.payload = payload


class _Bail(BaseException):
    """Raised by `context.bail()`: the run ends successfully with this result."""

    def __init__(self, result: Any) -> None:
        super().__init__("step bailed")
        self.result = result
