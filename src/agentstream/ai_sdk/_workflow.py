"""Workflow chunks → AI SDK UI message chunks (``toAISdkStream(..., {from: 'workflow'})``, spec §9.4).

``data-workflow`` carries the run's snapshot (``{name, status, steps, output}``; step outputs are shown
only in the final one), ``data-workflow-step`` one step with its output; text parts of agent steps
pass through as for agents; ``data-*`` chunks pass through.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

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

from ._convert import OnErrorFn, UIChunk, UIChunkConverter, Version
from ._workflow_request import (
    WorkflowRegistry,
    WorkflowStreamOptions,
    check_workflow_request,
    start_workflow_stream,
)

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
    options = WorkflowStreamOptions(
        version=version,
        include_text_stream_parts=include_text_stream_parts,
        send_reasoning=send_reasoning,
        send_sources=send_sources,
    )
    spec, run = await check_workflow_request(
        mastra=mastra,
        workflow_id=workflow_id,
        params=params,
        resource_id=resource_id,
        resume=resume,
        options=options,
    )
    return start_workflow_stream(run, spec, on_error=on_error)
