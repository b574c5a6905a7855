"""Steps: `create_step` (a function, an agent or a tool), the context a step runs with, its writer."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias, overload

from .._abort import AbortSignal
from .._request_context import RequestContext
from ..agent import Agent, Tripwire
from ..chunks import (
    UNSET,
    BaseChunk,
    Chunk,
    ChunkFrom,
    DataChunk,
    TextDelta,
    UnknownChunk,
    WorkflowStepOutput,
    WorkflowStepOutputPayload,
    chunk_to_dict,
)
from ..chunks import Tripwire as TripwireChunk
from ..tools import Schema, Tool, ToolContext, ToolWriter, json_schema_of, validate_value
from ._errors import StepSuspendValidationError, WorkflowDefinitionError, _Bail, _Suspend

if TYPE_CHECKING:
    from ._workflow import Workflow

__all__ = ["Step", "StepContext", "StepExecute", "StepWriter", "create_step"]

StepExecute: TypeAlias = "Callable[[StepContext], Awaitable[Any] | Any]"
"""``execute(context)``: async or plain function of the `StepContext`; returns the step's output."""

_ANY_OBJECT: dict[str, Any] = {"type": "object"}


class StepWriter:
    """``context.writer``: what a step streams while it runs.

    ``write(value)`` emits ``workflow-step-output {output: value, runId, stepName}`` (a chunk, e.g. one
    of an agent, is written as its wire dict); ``custom({"type": "data-...", "data": ...})`` emits a
    top-level ``data-*`` chunk (``id`` and ``transient`` kept).
    """

    __slots__ = ("_emit", "_run_id", "_step_name")

    def __init__(self, emit: Callable[[Chunk], None], *, run_id: str, step_name: str) -> None:
        self._emit = emit
        self._run_id = run_id
        self._step_name = step_name

    def write(self, output: Any) -> None:
        """Stream `output` as a `workflow-step-output` chunk from this step."""
        if isinstance(output, (BaseChunk, DataChunk, UnknownChunk)):
            output = chunk_to_dict(output)
        self._emit(
            WorkflowStepOutput(
                run_id=self._run_id,
                from_=ChunkFrom.USER,
                payload=WorkflowStepOutputPayload(
                    output=output, run_id=self._run_id, step_name=self._step_name
                ),
            )
        )

    def _relay(self, chunk: Chunk) -> None:
        """Emit `chunk` as it is, as a chunk of this run (a nested workflow's, already restamped)."""
        self._emit(chunk)

    def custom(self, chunk: DataChunk | Mapping[str, Any]) -> None:
        """Stream a `data-*` chunk (a `DataChunk` or its dict `{type: 'data-x', data, id?, transient?}`)."""
        if isinstance(chunk, Mapping):
            kind = chunk.get("type")
            if not isinstance(kind, str) or not kind.startswith("data-"):
                raise ValueError(
                    f"writer.custom(): type must be a string starting with 'data-', got {kind!r}"
                )
            chunk = DataChunk(
                type=kind, data=chunk.get("data"), id=chunk.get("id"), transient=chunk.get("transient")
            )
        if not isinstance(chunk, DataChunk):
            raise TypeError(f"writer.custom() takes a DataChunk or a dict, got {type(chunk).__name__}")
        # Run.stream() stamps custom chunks with the run and WORKFLOW as their origin.
        extra = {"runId": self._run_id, "from": ChunkFrom.WORKFLOW.value, **chunk.extra}
        self._emit(
            DataChunk(type=chunk.type, data=chunk.data, id=chunk.id, transient=chunk.transient, extra=extra)
        )


@dataclass
class StepContext:
    """What ``execute(context)``, conditions and ``map`` functions receive (Mastra's execute params).

    * ``input_data`` — the step's input (the previous step's output, validated by ``input_schema``;
      a pydantic model instance when the schema is a model);
    * ``get_init_data()`` — the workflow's input; ``get_step_result(step_or_id)`` — an earlier step's
      output (``None`` if it has not succeeded);
    * ``state`` / ``set_state(value)`` — the run's shared state (``initial_state`` of ``stream``);
    * ``await suspend(payload)`` — stop here and suspend the run (``resume_stream`` runs the step again
      with ``resume_data``); ``bail(result)`` — end the run successfully with ``result``;
    * ``writer``, ``abort_signal`` (fires on ``run.cancel()``), ``run_id``, ``workflow_id``, ``mastra``,
      ``retry_count``, ``suspend_data`` (the payload given to ``suspend`` before a resume);
    * ``request_context`` — the run's `RequestContext` (Mastra's ``requestContext``: given to
      ``stream`` / ``start``, kept with a suspended run); agent and tool steps hand it on.
    """

    input_data: Any
    run_id: str
    workflow_id: str
    step_id: str
    writer: StepWriter
    abort_signal: AbortSignal
    resume_data: Any = None
    suspend_data: Any = None
    retry_count: int = 0
    mastra: Any = None
    request_context: RequestContext = field(default_factory=RequestContext)
    _init_data: Any = None
    _results: Callable[[str], Any] = field(default=lambda _id: None, repr=False)
    _state: list[Any] = field(default_factory=lambda: [None], repr=False)
    _suspend_schema: Schema | None = field(default=None, repr=False)
    _clock: Callable[[], float] | None = field(default=None, repr=False)
    _sleep: Callable[[float], Any] | None = field(default=None, repr=False)
    """The run's injected clock and sleep, which a nested workflow's run keeps."""

    def get_init_data(self) -> Any:
        """The workflow run's input data."""
        return self._init_data

    def get_step_result(self, step: Step | str) -> Any:
        """The output of an earlier step of this run (by `Step` or id); `None` if it has not succeeded."""
        return self._results(step if isinstance(step, str) else step.id)

    @property
    def state(self) -> Any:
        """The run's shared state (`initial_state`, then whatever `set_state` stored)."""
        return self._state[0]

    def set_state(self, value: Any) -> None:
        """Replace the run's shared state (later steps see it; it is saved in snapshots)."""
        self._state[0] = value

    async def suspend(self, payload: Any = None) -> Any:
        """Suspend the run at this step with `payload` (checked against `suspend_schema`); never returns.

        ``return await context.suspend({...})`` reads as in Mastra.
        """
        if self._suspend_schema is not None:
            outcome = validate_value(self._suspend_schema, payload)
            if not outcome.ok:
                raise StepSuspendValidationError(self.step_id, outcome.issues)
        raise _Suspend(payload)

    def bail(self, result: Any) -> Any:
        """End the whole run now, successfully, with `result` as its result; never returns."""
        raise _Bail(result)


@dataclass
class Step:
    """One unit of work in a workflow (Mastra's ``createStep``). Build it with `create_step`.

    ``input_schema`` / ``output_schema`` / ``suspend_schema`` / ``resume_schema`` are pydantic models or
    JSON Schema dicts (``None``: anything). ``retries`` overrides the workflow's ``retry_config``
    attempts for this step. ``component`` is ``"AGENT"``, ``"TOOL"`` or ``"WORKFLOW"`` for wrapped agents,
    tools and nested workflows.
    """

    id: str
    execute: StepExecute
    input_schema: Schema | None = None
    output_schema: Schema | None = None
    suspend_schema: Schema | None = None
    resume_schema: Schema | None = None
    retries: int | None = None
    description: str | None = None
    component: str | None = None
    workflow: Workflow | None = field(default=None, repr=False)
    """The workflow this step runs, when it is a nested workflow (`Workflow.as_step`)."""

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise WorkflowDefinitionError(f"a step needs a non-empty string id, got {self.id!r}")
        if not callable(self.execute):
            raise WorkflowDefinitionError(
                f"step {self.id!r}: execute must be callable, got {type(self.execute).__name__}"
            )
        if self.retries is not None and (
            isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0
        ):
            raise WorkflowDefinitionError(
                f"step {self.id!r}: retries must be an int >= 0, got {self.retries!r}"
            )

    @property
    def can_suspend(self) -> bool:
        """Whether the step declares a suspend or resume schema (Mastra's ``canSuspend``)."""
        return self.suspend_schema is not None or self.resume_schema is not None

    def to_json(self) -> dict[str, Any]:
        """The step as Mastra serialises it in a step graph: ``{id, description?, canSuspend}``."""
        out: dict[str, Any] = {"id": self.id}
        if self.description:
            out["description"] = self.description
        out["canSuspend"] = self.can_suspend
        return out

    def json_schemas(self) -> dict[str, Any]:
        """The step's schemas as JSON Schema (``inputSchema``, ``outputSchema``, ...), for listings."""
        out: dict[str, Any] = {}
        for key, schema in (
            ("inputSchema", self.input_schema),
            ("outputSchema", self.output_schema),
            ("suspendSchema", self.suspend_schema),
            ("resumeSchema", self.resume_schema),
        ):
            if schema is not None:
                out[key] = json_schema_of(schema)
        return out


@overload
def create_step(
    source: None = None,
    *,
    id: str,
    execute: StepExecute,
    input_schema: Schema | None = None,
    output_schema: Schema | None = None,
    suspend_schema: Schema | None = None,
    resume_schema: Schema | None = None,
    retries: int | None = None,
    description: str | None = None,
) -> Step: ...


@overload
def create_step(source: Agent | Tool | Workflow, **options: Any) -> Step: ...


def create_step(source: Agent | Tool | Workflow | None = None, **options: Any) -> Step:
    """A workflow step (Mastra's ``createStep``).

    * ``create_step(id=..., input_schema=..., output_schema=..., execute=..., suspend_schema=None,
      resume_schema=None, retries=None, description=None)`` — ``execute(context)`` gets a `StepContext`;
    * ``create_step(agent, structured_output=None, **agent_options)`` — input ``{prompt}``, output
      ``{text}`` (the text of every agent step) or the structured object; every chunk of the agent's
      stream is forwarded as ``workflow-step-output``, and its usage counts towards the run's;
    * ``create_step(tool)`` — the tool's schemas; its ``tool-output`` chunks are forwarded.
    """
    if source is None:
        return Step(**options)
    if isinstance(source, Agent):
        return _agent_step(source, **options)
    if isinstance(source, Tool):
        if options:
            raise TypeError(f"create_step(tool) takes no options, got {', '.join(sorted(options))}")
        return _tool_step(source)
    from ._workflow import Workflow

    if isinstance(source, Workflow):
        return source.as_step()
    raise TypeError(
        f"create_step() takes an Agent, a Tool, a Workflow or keyword options, got {type(source).__name__}"
    )


_PROMPT_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {"prompt": {"type": "string"}},
    "required": ["prompt"],
    "additionalProperties": False,
}
_TEXT_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
    "additionalProperties": False,
}


def _agent_step(agent: Agent, *, structured_output: Any = None, **agent_options: Any) -> Step:
    async def execute(context: StepContext) -> Any:
        options = {
            "request_context": context.request_context,
            **agent_options,
            "abort_signal": context.abort_signal,
        }
        if structured_output is not None:
            options["structured_output"] = structured_output
        output = agent.stream(context.input_data["prompt"], **options)
        texts: list[str] = []
        async for chunk in output.full_stream:
            if type(chunk) is TextDelta:
                texts.append(chunk.payload.text)
            context.writer.write(chunk)
            if type(chunk) is TripwireChunk:
                # Mastra's agent step (workflows/workflow.ts, createStepFromAgent): the tripwire is
                # forwarded, then the step fails with it and the run ends with status "tripwire"
                p = chunk.payload
                raise Tripwire(
                    p.reason or "Agent tripwire triggered",
                    retry=bool(p.retry),
                    metadata=None if p.metadata is UNSET else p.metadata,
                    processor_id=p.processor_id,
                )
        if structured_output is not None:
            return await output.object
        # Mastra's onFinish text: every step's text (ModelOutput.text is the last step's)
        return {"text": "".join(texts)}

    output_schema: Any = _TEXT_SCHEMA
    if structured_output is not None:
        schema = (
            structured_output.get("schema") if isinstance(structured_output, Mapping) else structured_output
        )
        output_schema = schema if schema is not None else None
    return Step(
        id=agent.id,
        description=getattr(agent, "description", None) or None,
        input_schema=_PROMPT_SCHEMA,
        output_schema=output_schema,
        execute=execute,
        component="AGENT",
    )


def _tool_step(tool: Tool) -> Step:
    async def execute(context: StepContext) -> Any:
        writer = ToolWriter(
            lambda chunk: context.writer.write(chunk),
            run_id=context.run_id,
            tool_call_id=context.step_id,
            tool_name=tool.id,
        )
        tool_context = ToolContext(
            run_id=context.run_id,
            tool_call_id=context.step_id,
            tool_name=tool.id,
            agent_id=None,
            abort_signal=context.abort_signal,
            writer=writer,
            request_context=context.request_context,
        )
        return await tool.run(context.input_data, tool_context)

    return Step(
        id=tool.id,
        description=tool.description or None,
        input_schema=tool.input_schema,
        output_schema=tool.output_schema,
        execute=execute,
        component="TOOL",
    )


async def call(fn: Callable[[StepContext], Any], context: StepContext) -> Any:
    """Call a step function, condition or mapper (async or plain) with the context."""
    value = fn(context)
    if inspect.isawaitable(value):
        value = await value
    return value
