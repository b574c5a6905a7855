"""`WorkflowRunOutput` (Mastra's ``WorkflowRunOutput``): one run's stream with replay, status, result, usage;
and `WorkflowResult`, what a run ends with."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..chunks import (
    UNSET,
    Chunk,
    ChunkFrom,
    WorkflowCanceled,
    WorkflowFinish,
    WorkflowFinishPayload,
    WorkflowPaused,
    WorkflowStart,
    WorkflowStartPayload,
    WorkflowStepFinish,
    WorkflowStepOutput,
    WorkflowStepResult,
    WorkflowStepSuspended,
    to_jsonable,
    zero_workflow_usage,
)
from ..stream import ChunkLog, ChunkStream, Delayed, Usage
from ._errors import error_instance_json, error_json

__all__ = ["WorkflowResult", "WorkflowRunOutput", "WorkflowRunStatus"]

WorkflowRunStatus = Literal["running", "success", "failed", "suspended", "canceled", "paused", "tripwire"]


@dataclass(frozen=True)
class WorkflowResult:
    """What a workflow run ended with (Mastra's ``WorkflowResult``); `to_dict` gives Mastra's JSON.

    ``steps`` maps ``"input"`` to the run's input and each step id to its record (``status``,
    ``output`` / ``error`` / ``suspendPayload``, timestamps), as Mastra shows them.
    """

    status: str
    run_id: str
    input: Any
    steps: dict[str, Any]
    step_execution_path: list[str]
    result: Any = None
    error: BaseException | None = None
    suspended: list[list[str]] = field(default_factory=list)
    suspend_payload: dict[str, Any] = field(default_factory=dict)
    tripwire: dict[str, Any] | None = None
    """``{reason, retry?, metadata?, processorId?}`` of the guardrail that ended a ``tripwire`` run."""

    def to_dict(self) -> dict[str, Any]:
        """Mastra's JSON: ``{status, steps, input, stepExecutionPath, result | error | suspended..., runId}``."""
        steps = {
            k: {**v, "error": error_instance_json(v["error"])}
            if isinstance(v, dict) and isinstance(v.get("error"), BaseException)
            else v
            for k, v in self.steps.items()
        }
        out: dict[str, Any] = {
            "status": self.status,
            "steps": to_jsonable(steps),
            "input": self.input,
            "stepExecutionPath": list(self.step_execution_path),
        }
        if self.status == "success":
            out["result"] = self.result
        elif self.status == "failed" and self.error is not None:
            out["error"] = error_json(self.error)
        elif self.status == "suspended":
            out["suspended"] = [list(p) for p in self.suspended]
            out["suspendPayload"] = dict(self.suspend_payload)
        elif self.status == "tripwire" and self.tripwire is not None:
            out["tripwire"] = dict(self.tripwire)
        out["runId"] = self.run_id
        return out


def _int(value: Any) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip() or 0)
        except ValueError:
            return 0
    return 0


class WorkflowRunOutput(ChunkLog):
    """The stream of one workflow run (``run.stream()`` / ``run.resume_stream()``).

    * ``full_stream`` — every chunk from ``workflow-start`` to ``workflow-finish``; each access replays
      from the first chunk, then follows live (a late subscriber misses nothing);
    * ``status`` — ``running``, then ``success`` / ``failed`` / ``suspended`` / ``canceled``;
    * ``await output.result`` — the `WorkflowResult`; ``await output.usage`` — token usage summed
      over the agent steps (``finish`` chunks forwarded as step output), a `Usage`
      (``usage.input_tokens``; its six counts are 0, not ``None``, when no step reported one, and its
      `Usage.to_wire` is the ``workflow-finish`` chunk's ``output.usage``);
    * ``consume_stream()`` — wait for the end without reading.

    ``workflow-step-finish`` is internal and never reaches ``full_stream`` (``run.watch`` sees it).
    """

    def __init__(self, *, run_id: str, workflow_id: str) -> None:
        self.run_id = run_id
        self.workflow_id = workflow_id
        super().__init__(
            [
                WorkflowStart(
                    run_id=run_id,
                    from_=ChunkFrom.WORKFLOW,
                    payload=WorkflowStartPayload(workflow_id=workflow_id),
                )
            ]
        )
        self._status: str = "running"
        self._usage = zero_workflow_usage()
        self._usage_seen = False
        self._result: Delayed[WorkflowResult] = Delayed(_nothing)
        self._usage_result: Delayed[Usage] = Delayed(_nothing)
        self._task: asyncio.Task[Any] | None = None
        self._on_cancel: Callable[[], Any] | None = None

    # ---------------------------------------------------------------------------- reading

    @property
    def status(self) -> str:
        """Where the run is: `running`, `success`, `failed`, `suspended`, `canceled`, `paused`, `tripwire`."""
        return self._status

    @property
    def full_stream(self) -> ChunkStream:
        """Every chunk of the run, replayed from the first, then live; a new consumer per access."""
        return ChunkStream(self._follow())

    @property
    def result(self) -> Delayed[WorkflowResult]:
        """Awaitable: the run's `WorkflowResult` (raises if the run could not start or crashed)."""
        return self._result

    @property
    def usage(self) -> Delayed[Usage]:
        """Awaitable: token usage of the run's agent steps (``usage.input_tokens``, ...; dict access
        still works for one release, with a `DeprecationWarning`)."""
        return self._usage_result

    async def consume_stream(self) -> None:
        """Wait until the run's stream has ended, without reading it."""
        async for _ in self._follow():
            pass

    # ---------------------------------------------------------------------------- writing

    def push(self, chunk: Chunk) -> None:
        """Add a chunk of the run (status and usage are tracked as Mastra's output does)."""
        if self._done:
            return
        kind = type(chunk)
        if kind is WorkflowStepFinish:
            return
        if kind is WorkflowStepOutput:
            self._count_usage(chunk.payload.output)  # type: ignore[union-attr]
        elif kind is WorkflowStepResult:
            payload = chunk.payload  # type: ignore[union-attr]
            if payload.status == "failed":
                self._status = "tripwire" if payload.tripwire else "failed"
        elif kind is WorkflowStepSuspended:
            self._status = "suspended"
        elif kind is WorkflowCanceled:
            self._status = "canceled"
        elif kind is WorkflowPaused:
            self._status = "paused"
        self._log.append(chunk)
        if self._changed is not None:
            self._wake()

    def _count_usage(self, output: Any) -> None:
        if not isinstance(output, Mapping) or output.get("type") != "finish":
            return
        payload = output.get("payload")
        if not isinstance(payload, Mapping):
            return
        usage = payload.get("usage")
        if not isinstance(usage, Mapping):
            inner = payload.get("output")
            usage = inner.get("usage") if isinstance(inner, Mapping) else None
        if not isinstance(usage, Mapping):
            return
        self._usage_seen = True
        self._usage["inputTokens"] += _int(usage.get("inputTokens", usage.get("promptTokens")))
        self._usage["outputTokens"] += _int(usage.get("outputTokens", usage.get("completionTokens")))
        for key in ("totalTokens", "cachedInputTokens", "cacheCreationInputTokens", "reasoningTokens"):
            self._usage[key] += _int(usage.get(key))

    def close(self, result: WorkflowResult | None, error: BaseException | None = None) -> None:
        """End the stream: emit `workflow-finish` and settle `result` and `usage`."""
        if self._done:
            return
        if result is not None:
            self._status = result.status if result.status != "running" else "success"
        elif self._status == "running" or error is not None:
            self._status = "failed"
        metadata: dict[str, Any] = {}
        if error is not None:
            metadata = {"error": error_json(error), "errorMessage": str(error)}
        finish = WorkflowFinishPayload(
            workflow_status=self._status,
            metadata=metadata,
            output={"usage": dict(self._usage)},
            final_workflow_result=to_jsonable(result.result)
            if result is not None and self._status == "success"
            else UNSET,
        )
        self._log.append(WorkflowFinish(run_id=self.run_id, from_=ChunkFrom.WORKFLOW, payload=finish))
        self._done = True
        self._wake()
        self._usage_result.resolve(Usage.from_wire(self._usage))
        if result is not None:
            self._result.resolve(result)
        else:
            self._result.reject(error or RuntimeError("the workflow run ended without a result"))

    async def aclose(self) -> None:
        """Cancel the run this stream belongs to (as `run.cancel()`), then wait for the end."""
        if self._on_cancel is not None and not self._done:
            await self._on_cancel()
        await self.consume_stream()


def _nothing() -> None:
    return None
