"""Errors of the workflow layer, and the control-flow signals a step raises (`suspend`, `bail`)."""

from __future__ import annotations

from typing import Any

from ..chunks import error_to_dict
from ..tools import SchemaIssue, format_issues

__all__ = [
    "StepInputValidationError",
    "WorkflowDefinitionError",
    "WorkflowError",
    "WorkflowInputValidationError",
    "WorkflowResumeError",
]


class WorkflowError(Exception):
    """Base of the workflow layer's errors."""


class MastraShapedError(WorkflowError):
    """An error Mastra raises as a ``MastraError``: ``details`` holds its ``domain``, ``category``,
    ``code``, ``details`` and ``cause``. Mastra shows it two ways (the recording invalid-step-output):
    serialised (``toJSON``: chunks, a result's ``error``) without ``name``, and as the Error object
    itself (a result's ``steps``) with ``name`` and its ``id`` in place of ``code``."""

    name = "Error"
    details: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """``MastraError.toJSON()``: ``{message, domain, category, code, details, cause?}``."""
        return {"message": str(self), **self.details}

    def instance_json(self) -> dict[str, Any]:
        """The Error object's own fields: ``{name, message, id, domain, category, details, cause?}``."""
        fields = {k: v for k, v in self.details.items() if k != "code"}
        return {"name": self.name, "message": str(self), "id": self.details["code"], **fields}


def error_json(error: BaseException) -> dict[str, Any]:
    """An error as Mastra serialises it in chunks and a result's ``error``."""
    if isinstance(error, MastraShapedError):
        return error.to_json()
    return error_to_dict(error)


def error_instance_json(error: BaseException) -> dict[str, Any]:
    """An error as a result's ``steps`` shows it (the Error object)."""
    if isinstance(error, MastraShapedError):
        return error.instance_json()
    return error_to_dict(error)


class WorkflowDefinitionError(WorkflowError, ValueError):
    """A workflow or step is built wrongly (duplicate step id, no steps, not committed, ...)."""


class WorkflowInputValidationError(MastraShapedError, ValueError):
    """The input given to `run.stream()` / `run.start()` does not match the workflow's `input_schema`.

    Nothing runs: `run.start()` raises it, `run.stream()` ends failed with it (as Mastra's
    ``#validateSchema``: a ``MastraError`` ``WORKFLOW_SCHEMA_VALIDATION_FAILED``, category ``USER``). The
    message names each offending field (``Invalid input data: \n- value: Invalid input: expected
    number, received string``), `issues` holds them and `workflow_id` names the workflow.
    """

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


class _ValidationFailure(MastraShapedError):
    """A step's data failed its schema: Mastra's `MastraError` shape (`domain`, `category`, `code`)."""

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


class StepSuspendValidationError(_ValidationFailure):
    """The payload given to `suspend()` does not match the step's `suspend_schema`."""

    _what = "suspend payload"
    code = "WORKFLOW_STEP_SUSPEND_VALIDATION_FAILED"


class WorkflowResumeError(WorkflowError, ValueError):
    """A run cannot be resumed: unknown run, not suspended, wrong step, resume data that does not match
    the step's `resume_schema` (then `issues` names the fields), or already resumed by someone else."""

    issues: tuple[SchemaIssue, ...] = ()


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
