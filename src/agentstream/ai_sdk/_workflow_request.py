"""A workflow start or resume request, checked, as JSON (`WorkflowRunSpec`), and running one.

`check_workflow_request` does every check `handle_workflow_stream` answers before streaming
(unknown workflow or run, bad input with its field path, not suspended, another user's run)
without starting anything, so a server can hand the run to another process (a worker) that
runs it with `run_workflow_spec` (into a stream store: `run_workflow_job`) and gets the same UI
message stream.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any, Literal, NotRequired, Protocol, TypedDict

from .._abort import AbortSignal
from ..chunks import chunk_to_dict, zero_workflow_usage
from ..resumable import WORKER_LEASE_S, StreamStore, WorkflowJob
from ._chat import MAX_ID_LENGTH, ChatRequestError, _clip, _guarded
from ._convert import OnErrorFn, UIChunk, Version, to_ai_sdk_stream
from ._errors import default_error_text, is_storage_error
from ._jobs import end_cancelled, write_job

__all__ = [
    "WorkflowRegistry",
    "WorkflowRunSpec",
    "WorkflowStreamOptions",
    "check_workflow_request",
    "end_cancelled_workflow_leg",
    "leg_cancelled",
    "run_workflow_job",
    "run_workflow_spec",
    "start_workflow_stream",
]

_PARAM_KEYS = frozenset(
    {"runId", "resourceId", "inputData", "initialState", "resumeData", "step", "requestContext"}
)


class WorkflowRegistry(Protocol):
    """What `handle_workflow_stream` needs of a ``Mastra``: workflows by id (``KeyError`` if unknown)."""

    def get_workflow(self, key: str) -> Any:
        """The workflow registered under ``key``; raises ``KeyError`` if none is."""
        ...


class WorkflowStreamOptions(TypedDict):
    """How the run's chunks become UI chunks (the JSON-able options of `handle_workflow_stream`)."""

    version: Version
    include_text_stream_parts: bool
    send_reasoning: bool
    send_sources: bool
    wire: NotRequired[Literal["ui", "mastra"]]
    """``mastra``: the run's own chunks as JSON (Mastra's workflow stream, for the Mastra API's
    workflow routes), not UI chunks; ``ui`` (the default): UI chunks."""


class WorkflowRunSpec(TypedDict):
    """A checked start (``resume`` false) or resume of one run, as JSON: all a worker needs."""

    workflow_id: str
    run_id: str
    resource_id: str | None
    resume: bool
    input_data: Any
    initial_state: Any
    resume_data: Any
    step: str | list[str] | None
    options: WorkflowStreamOptions


def _issues_path(exc: BaseException) -> str | None:
    issues = getattr(exc, "issues", None)
    if issues:
        return ".".join(str(p) for p in issues[0].path) or None
    return None


def _refusal(exc: ValueError) -> ChatRequestError:
    if isinstance(exc, ChatRequestError):
        return exc
    status = 409 if type(exc).__name__ == "WorkflowResumeError" and "resume data" not in str(exc) else 400
    return ChatRequestError(str(exc), status_code=status, path=_issues_path(exc))


def _check_params(params: Mapping[str, Any], resume: bool | None) -> None:
    if not isinstance(params, Mapping):
        raise ChatRequestError(f"expected the request body to be a JSON object, got {type(params).__name__}")
    unknown = sorted(set(params) - _PARAM_KEYS)
    if unknown:
        raise ChatRequestError(
            f"unknown field(s) {unknown}; expected some of {sorted(_PARAM_KEYS)}", path=unknown[0]
        )
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


async def check_workflow_request(
    *,
    mastra: WorkflowRegistry,
    workflow_id: str,
    params: Mapping[str, Any],
    resource_id: str | None,
    resume: bool | None,
    options: WorkflowStreamOptions,
) -> tuple[WorkflowRunSpec, Any]:
    """The request checked as `handle_workflow_stream` checks it, nothing started: its
    `WorkflowRunSpec` (a new run gets its id here) and the ``Run`` it loaded. Raises
    `ChatRequestError` (400 with the field ``path``, 404, 409) as `handle_workflow_stream` does."""
    _check_params(params, resume)
    try:
        workflow = mastra.get_workflow(workflow_id)
    except (KeyError, LookupError) as exc:
        raise ChatRequestError(f"Workflow {_clip(workflow_id, 120)} not found", status_code=404) from exc
    run_id = params.get("runId")
    run = await workflow.create_run(run_id, resource_id=resource_id)
    existing = run.status != "pending"
    if existing and run.stored_resource_id != resource_id:
        # Someone else's run: indistinguishable from one that does not exist.
        raise ChatRequestError(f"run {_clip(str(run_id), 120)} not found", status_code=404, path="runId")
    resuming = "resumeData" in params
    spec = WorkflowRunSpec(
        workflow_id=workflow_id,
        run_id=run.run_id,
        resource_id=resource_id,
        resume=resuming,
        input_data=params.get("inputData"),
        initial_state=params.get("initialState"),
        resume_data=params.get("resumeData"),
        step=params.get("step"),
        options=options,
    )
    if resuming and not existing:
        raise ChatRequestError(f"run {_clip(str(run_id), 120)} not found", status_code=404, path="runId")
    if not resuming and existing:
        raise ChatRequestError(
            f"runId {_clip(str(run_id), 120)} is already used by a run", status_code=409, path="runId"
        )
    try:
        if resuming:
            run.check_resume(step=spec["step"], resume_data=spec["resume_data"])
        else:
            run.check_input(spec["input_data"])
    except ValueError as exc:
        raise _refusal(exc) from None
    return spec, run


def start_workflow_stream(
    run: Any, spec: WorkflowRunSpec, *, on_error: OnErrorFn | None
) -> AsyncIterator[UIChunk]:
    """Start (or resume) ``run`` as ``spec`` says; its UI message stream. Closing it cancels the run.
    Raises `ChatRequestError` if the run cannot start (as `check_workflow_request`)."""
    try:
        if spec["resume"]:
            output = run.resume_stream(step=spec["step"], resume_data=spec["resume_data"])
        else:
            output = run.stream(input_data=spec["input_data"], initial_state=spec["initial_state"])
    except ValueError as exc:
        raise _refusal(exc) from None
    options = spec["options"]
    if options.get("wire") == "mastra":
        return _mastra_chunks(output)
    stream = to_ai_sdk_stream(
        output,
        from_="workflow",
        version=options["version"],
        include_text_stream_parts=options["include_text_stream_parts"],
        send_reasoning=options["send_reasoning"],
        send_sources=options["send_sources"],
        on_error=on_error,
    )
    return _guarded(stream, output, on_error)


async def _mastra_chunks(output: Any) -> AsyncIterator[dict[str, Any]]:
    async for chunk in output.full_stream:
        yield chunk_to_dict(chunk)


async def _cancel_on(signal: AbortSignal, run: Any) -> None:
    await signal.wait()
    # A leg that already ended suspended is left to the cancel route (claiming it takes DBOS steps,
    # which only the workflow's own task may take).
    if run.status != "suspended":
        await run.cancel()


async def run_workflow_spec(
    mastra: WorkflowRegistry,
    spec: WorkflowRunSpec,
    *,
    on_error: OnErrorFn | None = None,
    abort_signal: AbortSignal | None = None,
    **run_options: Any,
) -> AsyncIterator[UIChunk]:
    """Run a checked `WorkflowRunSpec` here (a worker): the UI message stream the server that checked
    it would have sent. ``run_options`` go to ``create_run`` (e.g. ``checkpoint=``). A run that can
    no longer start (resumed by someone else meanwhile) is one ``error`` chunk. ``abort_signal``
    cancels the run (``run.cancel()``: it ends ``canceled``, as a cancel in the server's process)."""
    try:
        workflow = mastra.get_workflow(spec["workflow_id"])
        run = await workflow.create_run(spec["run_id"], resource_id=spec["resource_id"], **run_options)
        stream = start_workflow_stream(run, spec, on_error=on_error)
    except Exception as exc:
        message = str(exc) if isinstance(exc, ChatRequestError) else f"{type(exc).__name__}: {exc}"
        if is_storage_error(exc):
            message = default_error_text(exc)  # the database's text stays in the log
        yield {"type": "error", "errorText": message}
        return
    canceller, unlisten = None, None
    if abort_signal is not None:
        # The signal reaches the steps at once (a checkpoint may fire it at a step boundary and
        # fail the step: the run must see itself aborted then); the task waits for the run to stop.
        unlisten = abort_signal.add_listener(lambda _reason: run.abort())
        canceller = asyncio.ensure_future(_cancel_on(abort_signal, run))
    try:
        async for part in stream:
            yield part
    finally:
        if canceller is not None and unlisten is not None:
            unlisten()
            canceller.cancel()


async def run_workflow_job(
    mastra: WorkflowRegistry,
    store: StreamStore,
    job: WorkflowJob,
    *,
    on_error: OnErrorFn | None = None,
    abort_signal: AbortSignal | None = None,
    **run_options: Any,
) -> None:
    """Run ``job``'s leg with ``mastra``'s workflow into ``store`` (from chunk 0, positionally, so a
    re-run after a crash writes no chunk twice), then finish the stream: the job service's
    `write_job` with the workflow producer (`run_workflow_spec`), as a chat turn's. ``run_options``
    go to ``create_run`` (``checkpoint=`` on a durable worker). A stream that finished or expired
    meanwhile stops the writing quietly. ``abort_signal`` cancels the run."""
    chunks = run_workflow_spec(
        mastra, job["spec"], on_error=on_error, abort_signal=abort_signal, **run_options
    )
    # The writer lease (as a chat turn's): the readers of a leg whose worker died end within seconds.
    await write_job(
        store, job["stream_id"], chunks, lease_s=WORKER_LEASE_S, on_worker=True, what="workflow leg"
    )


def leg_cancelled(workflow_id: str, run_id: str) -> tuple[dict[str, Any], ...]:
    """The last chunks of a workflow leg cancelled before it started, as a cancelled run's stream
    ends: the run's ``data-workflow`` part with status ``canceled``, then ``finish``."""
    canceled = {
        "type": "data-workflow",
        "id": run_id,
        "data": {
            "name": workflow_id,
            "status": "canceled",
            "steps": {},
            "output": {"usage": zero_workflow_usage()},
        },
    }
    return (canceled, {"type": "finish"})


async def end_cancelled_workflow_leg(
    store: StreamStore, stream_id: str, workflow_id: str, run_id: str
) -> None:
    """End the stream of a workflow leg cancelled before it started (`leg_cancelled`)."""
    await end_cancelled(store, stream_id, *leg_cancelled(workflow_id, run_id))
