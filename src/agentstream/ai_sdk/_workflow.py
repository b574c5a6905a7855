"""Workflow chunks → AI SDK UI message chunks (``toAISdkStream(..., {from: 'workflow'})``, spec §9.4).

``data-workflow`` carries the run's snapshot (``{name, status, steps, output}``; step outputs are shown
only in the final one), ``data-workflow-step`` one step with its output; text parts of agent steps
pass through as for agents; ``data-*`` chunks pass through.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol

from agentstream.chunks import (
    UNSET,
    Chunk,
    DataChunk,
    UnknownChunk,
    WorkflowFinish,
    WorkflowStart,
    WorkflowStepOutput,
    WorkflowStepResult,
    WorkflowStepStart,
    WorkflowStepSuspended,
    decode_chunk,
    to_jsonable,
)

from ._chat import MAX_ID_LENGTH, ChatRequestError, _clip, _guarded
from ._convert import OnErrorFn, UIChunk, UIChunkConverter, Version, to_ai_sdk_stream

__all__ = ["WorkflowRegistry", "WorkflowUIChunkConverter", "handle_workflow_stream", "workflow_ui_stream"]

# Mastra chunk types whose AI SDK counterpart is in the text-stream whitelist (step-start/-finish and
# the tool-input streaming chunks are not: they produce nothing inside a workflow).
_TEXT_STREAM_TYPES = frozenset(
    {
        "text-start",
        "text-delta",
        "text-end",
        "reasoning-start",
        "reasoning-delta",
        "reasoning-end",
        "file",
        "source",
        "tool-call",
        "tool-call-approval",
        "tool-call-suspended",
        "tool-result",
        "tool-error",
        "tool-output-denied",
        "error",
        "start",
        "finish",
        "abort",
        "object",
        "tripwire",
        "raw",
    }
)


def _step_view(step: Mapping[str, Any], *, with_output: bool) -> dict[str, Any]:
    view = dict(step)
    if not with_output:
        view["output"] = None
    return view


class WorkflowUIChunkConverter:
    """The stateful workflow → UI chunk conversion of one stream (``WorkflowStreamToAISDKTransformer``).

    `begin` gives the leading ``start``, `convert` the parts of each chunk, `end` the closing
    ``finish``. ``include_text_stream_parts`` (default on) converts the text, reasoning, source and
    tool parts of agent steps as for an agent stream. ``nested=True`` names the parts
    ``data-tool-workflow`` / ``data-tool-workflow-step`` (a workflow run inside an agent's tool call,
    spec §9.3).
    """

    def __init__(
        self,
        *,
        version: Version = "v5",
        include_text_stream_parts: bool = True,
        send_reasoning: bool = False,
        send_sources: bool = False,
        on_error: OnErrorFn | None = None,
        nested: bool = False,
    ) -> None:
        self.include_text_stream_parts = include_text_stream_parts
        self._run_part = "data-tool-workflow" if nested else "data-workflow"
        self._step_part = "data-tool-workflow-step" if nested else "data-workflow-step"
        self._inner = UIChunkConverter(
            version=version,
            send_start=False,
            send_finish=False,
            send_reasoning=send_reasoning,
            send_sources=send_sources,
            on_error=on_error,
        )
        self._runs: dict[str, dict[str, Any]] = {}

    def begin(self) -> list[UIChunk]:
        """The parts that open the UI stream."""
        return [{"type": "start"}]

    def end(self) -> list[UIChunk]:
        """The parts that close the UI stream."""
        return [{"type": "finish"}]

    def _snapshot(self, run_id: str, status: str, *, outputs: bool = False, output: Any = None) -> UIChunk:
        run = self._runs[run_id]
        steps = {k: _step_view(v, with_output=outputs) for k, v in run["steps"].items()}
        return {
            "type": self._run_part,
            "id": run_id,
            "data": {"name": run["name"], "status": status, "steps": steps, "output": output},
        }

    def convert(self, chunk: Chunk) -> list[UIChunk]:
        """The UI chunks for one workflow chunk (in order)."""
        kind = type(chunk)
        run_id = getattr(chunk, "run_id", None) or ""
        if kind is WorkflowStart:
            self._runs[run_id] = {"name": chunk.payload.workflow_id, "steps": {}}  # type: ignore[union-attr]
            return [self._snapshot(run_id, "running")]
        if kind is WorkflowStepOutput:
            return self._step_output(chunk.payload.output)  # type: ignore[union-attr]
        if kind is DataChunk:
            return self._data(chunk)  # type: ignore[arg-type]
        if isinstance(chunk, UnknownChunk):
            raw = chunk.raw
            if isinstance(raw.get("type"), str) and raw["type"].startswith("data-"):
                return self._data_dict(raw)
            return []
        run = self._runs.get(run_id)
        if run is None:
            return []
        if kind is WorkflowStepStart:
            p = chunk.payload  # type: ignore[union-attr]
            run["steps"][p.id] = {
                "name": p.id,
                "status": p.status,
                "input": None if p.payload is UNSET else to_jsonable(p.payload),
                "output": None,
                "suspendPayload": None,
                "resumePayload": None,
            }
            return [self._snapshot(run_id, "running")]
        if kind is WorkflowStepResult or kind is WorkflowStepSuspended:
            return self._step_end(run_id, run, chunk)
        if kind is WorkflowFinish:
            p = chunk.payload  # type: ignore[union-attr]
            output = to_jsonable(p.output) if p.output is not None else None
            return [self._snapshot(run_id, p.workflow_status, outputs=True, output=output)]
        return []

    def _step_end(self, run_id: str, run: dict[str, Any], chunk: Any) -> list[UIChunk]:
        p = chunk.payload
        step = run["steps"].get(p.id)
        if step is None:
            step = run["steps"][p.id] = {
                "name": p.id,
                "status": p.status,
                "input": None if p.payload is UNSET else to_jsonable(p.payload),
                "output": None,
                "suspendPayload": None,
                "resumePayload": None,
            }
        step["status"] = p.status
        suspended = isinstance(chunk, WorkflowStepSuspended)
        if suspended:
            step["suspendPayload"] = None if p.suspend_payload is UNSET else to_jsonable(p.suspend_payload)
        else:
            step["output"] = None if p.output is UNSET else to_jsonable(p.output)
        status = "suspended" if suspended else "running"
        return [
            self._snapshot(run_id, status),
            {
                "type": self._step_part,
                "id": f"{run_id}:{p.id}",
                "data": {"name": run["name"], "status": status, "stepId": p.id, "step": dict(step)},
            },
        ]

    def _step_output(self, output: Any) -> list[UIChunk]:
        if not isinstance(output, Mapping):
            return []
        kind = output.get("type")
        if not isinstance(kind, str):
            return []
        if self.include_text_stream_parts and (
            kind in _TEXT_STREAM_TYPES or kind.startswith("background-task-")
        ):
            return self._inner.convert(decode_chunk(output, unknown="keep"))
        if kind.startswith("data-"):
            return self._data_dict(output)
        return []

    def _data(self, chunk: DataChunk) -> list[UIChunk]:
        if chunk.data is UNSET:
            return []
        out: UIChunk = {"type": chunk.type, "data": to_jsonable(chunk.data)}
        if chunk.id is not None:
            out["id"] = chunk.id
        return [out]

    @staticmethod
    def _data_dict(raw: Mapping[str, Any]) -> list[UIChunk]:
        if "data" not in raw:
            return []
        out: UIChunk = {"type": raw["type"], "data": to_jsonable(raw["data"])}
        if raw.get("id") is not None:
            out["id"] = raw["id"]
        return [out]


async def workflow_ui_stream(
    chunks: AsyncIterator[Any],
    *,
    version: Version = "v5",
    include_text_stream_parts: bool = True,
    send_reasoning: bool = False,
    send_sources: bool = False,
    on_error: OnErrorFn | None = None,
) -> AsyncIterator[UIChunk]:
    """UI message chunks for a workflow's chunks: ``start``, the converted parts, ``finish``."""
    converter = WorkflowUIChunkConverter(
        version=version,
        include_text_stream_parts=include_text_stream_parts,
        send_reasoning=send_reasoning,
        send_sources=send_sources,
        on_error=on_error,
    )
    for part in converter.begin():
        yield part
    try:
        async for chunk in chunks:
            for part in converter.convert(chunk):
                yield part
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()
    for part in converter.end():
        yield part


class WorkflowRegistry(Protocol):
    """What `handle_workflow_stream` needs of a ``Mastra``: workflows by id (``KeyError`` if unknown)."""

    def get_workflow(self, key: str) -> Any:
        """The workflow registered under ``key``; raises ``KeyError`` if none is."""
        ...


_PARAM_KEYS = frozenset(
    {"runId", "resourceId", "inputData", "initialState", "resumeData", "step", "requestContext"}
)


def _issues_path(exc: BaseException) -> str | None:
    issues = getattr(exc, "issues", None)
    if issues:
        return ".".join(str(p) for p in issues[0].path) or None
    return None


async def handle_workflow_stream(
    *,
    mastra: WorkflowRegistry,
    workflow_id: str,
    params: Mapping[str, Any],
    resource_id: str | None = None,
    version: Version = "v5",
    include_text_stream_parts: bool = True,
    send_reasoning: bool = False,
    send_sources: bool = False,
    on_error: OnErrorFn | None = None,
    resume: bool | None = None,
) -> AsyncIterator[UIChunk]:
    """Start or resume a run of workflow ``workflow_id`` and return its UI message stream
    (``handleWorkflowStream`` of ``@mastra/ai-sdk``).

    ``params``: ``{inputData, initialState?, runId?}`` starts a run; ``{runId, resumeData, step?}``
    resumes a suspended one (``resume=True`` requires that, ``False`` refuses it). ``resource_id``
    (the authenticated user) owns new runs, and a run owned by another resource is answered as not
    found. Raises `ChatRequestError` before streaming: 400 for malformed params or input that fails
    the workflow's schema (``path`` names the field), 404 for an unknown workflow or run, 409 for a
    run that is not suspended at that step. Closing the returned stream cancels the run.
    """
    if not isinstance(params, Mapping):
        raise ChatRequestError(f"expected the request body to be a JSON object, got {type(params).__name__}")
    unknown = sorted(set(params) - _PARAM_KEYS)
    if unknown:
        raise ChatRequestError(
            f"unknown field(s) {unknown}; expected some of {sorted(_PARAM_KEYS)}", path=unknown[0]
        )
    try:
        workflow = mastra.get_workflow(workflow_id)
    except (KeyError, LookupError) as exc:
        raise ChatRequestError(f"Workflow {_clip(workflow_id, 120)} not found", status_code=404) from exc
    run_id = params.get("runId")
    if run_id is not None and (not isinstance(run_id, str) or not run_id or len(run_id) > MAX_ID_LENGTH):
        raise ChatRequestError(
            f"runId: expected a non-empty string of at most {MAX_ID_LENGTH} characters", path="runId"
        )
    resuming = "resumeData" in params
    if resume is True and not resuming:
        raise ChatRequestError("resumeData is required to resume a run", path="resumeData")
    if resume is False and resuming:
        raise ChatRequestError(
            "resumeData is not accepted here; resume at the resume endpoint", path="resumeData"
        )
    if resuming and run_id is None:
        raise ChatRequestError("runId is required when resumeData is provided", path="runId")
    step = params.get("step")
    if step is not None and not (
        isinstance(step, str) or (isinstance(step, list) and all(isinstance(s, str) for s in step))
    ):
        raise ChatRequestError("step: expected a step id or a list of step ids", path="step")
    run = await workflow.create_run(run_id, resource_id=resource_id)
    existing = run.status != "pending"
    if existing and run.stored_resource_id != resource_id:
        # Someone else's run: indistinguishable from one that does not exist.
        raise ChatRequestError(f"run {_clip(str(run_id), 120)} not found", status_code=404, path="runId")
    try:
        if resuming:
            if not existing:
                raise ChatRequestError(
                    f"run {_clip(str(run_id), 120)} not found", status_code=404, path="runId"
                )
            output = run.resume_stream(step=step, resume_data=params.get("resumeData"))
        else:
            if existing:
                raise ChatRequestError(
                    f"runId {_clip(str(run_id), 120)} is already used by a run", status_code=409, path="runId"
                )
            output = run.stream(input_data=params.get("inputData"), initial_state=params.get("initialState"))
    except ValueError as exc:
        if isinstance(exc, ChatRequestError):
            raise
        status = 409 if type(exc).__name__ == "WorkflowResumeError" and "resume data" not in str(exc) else 400
        raise ChatRequestError(str(exc), status_code=status, path=_issues_path(exc)) from None
    stream = to_ai_sdk_stream(
        output,
        from_="workflow",
        version=version,
        include_text_stream_parts=include_text_stream_parts,
        send_reasoning=send_reasoning,
        send_sources=send_sources,
        on_error=on_error,
    )
    return _guarded(stream, output, on_error)
