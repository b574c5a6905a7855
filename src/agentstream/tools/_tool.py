"""``Tool``, ``@tool`` and the execution context a tool receives."""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, NoReturn, get_args, get_origin, get_type_hints, overload

import pydantic
from pydantic.fields import FieldInfo

from .._abort import AbortSignal
from .._request_context import RequestContext
from ..chunks import (
    BaseChunk,
    Chunk,
    ChunkFrom,
    DataChunk,
    ToolOutput,
    ToolOutputPayload,
    UnknownChunk,
    chunk_to_dict,
    to_jsonable,
)
from ._background import ToolBackgroundConfig
from ._docstrings import parse_tool_doc
from ._mcp_context import MCPToolExecutionContext
from ._schema import (
    CompiledSchema,
    Schema,
    SchemaDefinitionError,
    compile_schema,
    format_issues,
    issues_tree,
    json_schema_of,
)
from ._suspend import ToolSuspended

__all__ = ["Tool", "ToolContext", "ToolWriter", "tool"]

ToolExecute = Callable[[Any, "ToolContext"], Any]


class ToolWriter:
    """What ``context.writer`` is: ``write(x)`` emits ``tool-output``, ``custom(chunk)`` a ``data-*`` chunk,
    ``emit(chunk)`` any chunk.

    Safe to call from a sync tool running in a worker thread.
    """

    __slots__ = ("_emit", "_loop", "_run_id", "_thread", "_tool_call_id", "_tool_name")

    def __init__(
        self, emit: Callable[[Chunk], None], *, run_id: str, tool_call_id: str, tool_name: str
    ) -> None:
        self._emit = emit
        self._run_id = run_id
        self._tool_call_id = tool_call_id
        self._tool_name = tool_name
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()

    def _send(self, chunk: Chunk) -> None:
        if threading.get_ident() == self._thread:
            self._emit(chunk)
        else:
            self._loop.call_soon_threadsafe(self._emit, chunk)

    def write(self, output: Any) -> None:
        """Emit ``{type: 'tool-output', from: 'USER', payload: {output, toolCallId, toolName}}``.

        A chunk written here (a sub-run's, say) is stored as its wire dict, as a reader of the JSON
        stream would see it: the nested chunk keeps its extra keys and dates exactly.
        """
        if isinstance(output, (BaseChunk, UnknownChunk)):
            output = chunk_to_dict(output)
        self._send(
            ToolOutput(
                run_id=self._run_id,
                from_=ChunkFrom.USER,
                payload=ToolOutputPayload(
                    output=output, tool_call_id=self._tool_call_id, tool_name=self._tool_name
                ),
            )
        )

    def emit(self, chunk: Chunk) -> None:
        """Put any chunk into the run's stream as it is (e.g. ``background-task-started``).

        It appears among the step's tool chunks, before the ``tool-result`` chunks; chunk types on
        the loop's ``on_chunk`` list also reach ``on_chunk``.
        """
        self._send(chunk)

    def custom(self, chunk: DataChunk | dict[str, Any]) -> None:
        """Emit a ``data-*`` chunk (a ``DataChunk`` or its dict ``{type: 'data-x', data, ...}``)."""
        if isinstance(chunk, dict):
            chunk = DataChunk(
                type=str(chunk.get("type", "")),
                data=chunk.get("data"),
                id=chunk.get("id"),
                transient=chunk.get("transient"),
            )
        if not isinstance(chunk, DataChunk):
            raise TypeError(f"writer.custom() takes a DataChunk or a dict, got {type(chunk).__name__}")
        self._send(chunk)


@dataclass
class ToolContext:
    """Passed to ``execute(input, context)``."""

    run_id: str
    tool_call_id: str
    tool_name: str
    agent_id: str | None
    abort_signal: AbortSignal
    writer: ToolWriter
    messages: list[dict[str, Any]] = field(default_factory=list)
    """The prompt of the model call that asked for this tool (V2 prompt messages)."""
    resume_data: Any = None
    """What `agent.resume_stream(resume_data, ...)` passed (validated against the tool's
    ``resume_schema``); ``None`` on the first run of the call."""
    request_context: RequestContext = field(default_factory=RequestContext)
    """The run's `RequestContext` (``stream(..., request_context=...)``, or what ``chat_route``
    built from the HTTP request): who is asking, in what tenant."""
    mcp: MCPToolExecutionContext | None = None
    """The MCP request this call serves (elicitation, logging, progress, sampling) when an MCP
    client called the tool through `agentstream.mcp.MCPServer`; ``None`` otherwise."""

    @property
    def idempotency_key(self) -> str:
        """A key naming this tool call, the same every time the call runs again.

        A run on a worker that died runs again elsewhere with the same run id and the model's
        recorded tool call ids, so the call that was in flight gets the same key: hand it to the
        service the tool acts on (a payment API's ``Idempotency-Key``, an email's ``Message-ID``)
        or keep it with the effect in your own database, and the effect happens once (see
        docs/serving.md, "Tools with side effects")."""
        return f"{self.run_id}:{self.tool_call_id}"

    @property
    def is_resumed(self) -> bool:
        """Whether this execution resumes a suspended call (`resume_data` was given)."""
        return self.resume_data is not None

    async def suspend(self, payload: Any = None) -> NoReturn:
        """Suspend the run, waiting for input: ``return await context.suspend(payload)``.

        The step's stream ends with ``tool-call-suspended`` (``payload`` as ``suspendPayload``) and
        the run is kept (in the agent's storage) until `agent.resume_stream(resume_data, run_id=...)`
        runs this tool again from the start with `resume_data` set. It does not return.
        """
        raise ToolSuspended(payload)


class ToolInputValidationError(ValueError):
    """A tool was called with arguments that do not match its input schema; the message names the field."""


@dataclass
class Tool:
    """A tool the model may call.

    ``input_schema`` is a JSON Schema dict or a pydantic model (the model gets its JSON Schema; the
    tool gets a validated instance). A dict is compiled here: a schema the validator cannot enforce
    (a keyword outside Draft 2020-12 / Draft 7, a remote ``$ref``, an unknown ``format``...) raises
    `SchemaDefinitionError` naming the keyword and its place, instead of being ignored at call time. ``execute(input, context)`` may be async or sync (sync runs in a
    worker thread). ``output_schema`` (optional) validates what ``execute`` returns.

    ``to_model_output(result)`` (optional) projects the result for the model's next prompt.

    ``background`` (Mastra ``createTool({background})``): ``{"enabled": True, "timeout_ms": ...,
    "max_retries": ..., "default_disposition": "deferred" | "foreground", "on_complete": ...,
    "on_failed": ...}``, ``True``/``False`` or a
    ``ToolBackgroundConfig`` (normalised to one). It only matters when
    the agent runs with a background-task manager (``Mastra(background_tasks=...)``); without one
    the tool runs inline.

    Human in the loop: ``require_approval=True`` stops the run at every call of this tool with a
    ``tool-call-approval`` chunk until `agent.approve_tool_call` / `agent.decline_tool_call`.
    ``suspend_schema`` / ``resume_schema`` (JSON Schema dicts or pydantic models) describe what
    ``context.suspend(payload)`` sends and what `agent.resume_stream` must pass back (the resume
    data is validated against ``resume_schema``). A tool that needs approval or declares either
    schema runs its step's tool calls one at a time.
    """

    id: str
    description: str
    input_schema: Schema
    execute: ToolExecute
    output_schema: Schema | None = None
    background: ToolBackgroundConfig | Mapping[str, Any] | bool | None = None
    """A `ToolBackgroundConfig` (or ``None``) after construction."""
    to_model_output: Callable[[Any], Any] | None = None
    """Mastra's ``toModelOutput``: what the model is shown of a result (an AI SDK tool-result
    ``output``, e.g. ``{"type": "text", "value": ...}``) when that is not the whole result; it rides
    on the ``tool-result`` chunk as ``providerMetadata.mastra.modelOutput``."""
    require_approval: bool = False
    """Every call waits for `agent.approve_tool_call` / `decline_tool_call` before it runs."""
    suspend_schema: Schema | None = None
    """What the tool passes to ``context.suspend(payload)`` (documentation for clients)."""
    resume_schema: Schema | None = None
    """What `agent.resume_stream(resume_data, ...)` must pass; the resume data is validated."""

    def __post_init__(self) -> None:
        if not self.id:
            raise ValueError("a tool needs a non-empty id")
        if not callable(self.execute):
            raise TypeError(f"tool {self.id!r}: execute must be callable")
        self.background = ToolBackgroundConfig.from_value(self.background)
        self._input_check = _compiled(self.id, "input_schema", self.input_schema)
        self._output_check = (
            None if self.output_schema is None else _compiled(self.id, "output_schema", self.output_schema)
        )
        if not isinstance(self.require_approval, bool):
            raise TypeError(
                f"tool {self.id!r}: require_approval must be True or False, got {self.require_approval!r}"
            )
        for name in ("suspend_schema", "resume_schema"):
            value = getattr(self, name)
            if value is not None and not _is_schema(value):
                raise TypeError(
                    f"tool {self.id!r}: {name} must be a JSON Schema dict or a pydantic model, "
                    f"got {type(value).__name__}"
                )
        self._resume_check = (
            None if self.resume_schema is None else _compiled(self.id, "resume_schema", self.resume_schema)
        )
        self._is_async = inspect.iscoroutinefunction(self.execute) or inspect.iscoroutinefunction(
            getattr(self.execute, "__call__", None)  # noqa: B004
        )

    def definition(self) -> dict[str, Any]:
        """The AI SDK function-tool definition sent to the model."""
        return {
            "type": "function",
            "name": self.id,
            "description": self.description,
            "inputSchema": json_schema_of(self.input_schema),
        }

    @property
    def may_suspend(self) -> bool:
        """Whether a call of this tool may stop the run (it needs approval or declares a suspend or
        resume schema): such tools force tool-call concurrency 1."""
        return self.require_approval or self.suspend_schema is not None or self.resume_schema is not None

    def resume_schema_json(self) -> str | None:
        """The ``resume_schema`` as the compact JSON string chunks carry (``None`` without one)."""
        if self.resume_schema is None:
            return None
        return json.dumps(json_schema_of(self.resume_schema), separators=(",", ":"), ensure_ascii=False)

    def validate_resume_data(self, data: Any) -> Any:
        """``data`` validated against ``resume_schema`` (as is without one).

        Raises `ToolInputValidationError` naming each offending field.
        """
        if self._resume_check is None:
            return data
        outcome = self._resume_check.validate(data)
        if not outcome.ok:
            raise ToolInputValidationError(
                f"resume data for tool {self.id!r} does not match its resume_schema:\n"
                f"{format_issues(outcome.issues)}"
            )
        return outcome.value

    def validation_error(self, args: Any) -> tuple[Any, dict[str, Any] | None]:
        """``(parsed_input, None)`` or ``(args, error_result)`` with Mastra's validation-error result."""
        outcome = self._input_check.validate(args)
        if outcome.ok:
            return outcome.value, None
        provided = json.dumps(args, indent=2, ensure_ascii=False, default=str)
        message = (
            f"Tool input validation failed for {self.id}. Please fix the following errors and try again:\n"
            f"{format_issues(outcome.issues)}\n\nProvided arguments: {provided}"
        )
        return args, {"error": True, "message": message, "validationErrors": issues_tree(outcome.issues)}

    async def run(self, parsed: Any, context: ToolContext) -> Any:
        """Call ``execute`` (in a thread when it is sync) and return a JSON-able result."""
        if self._is_async:
            result = await self.execute(parsed, context)
        else:
            result = await asyncio.to_thread(self.execute, parsed, context)
            if inspect.isawaitable(result):
                result = await result
        if self._output_check is not None:
            outcome = self._output_check.validate(result)
            if not outcome.ok:
                return {
                    "error": True,
                    "message": f"Tool output validation failed for {self.id}:\n{format_issues(outcome.issues)}",
                    "validationErrors": issues_tree(outcome.issues),
                }
            result = outcome.value
        return to_jsonable(result)


def _is_schema(value: Any) -> bool:
    if isinstance(value, (dict, pydantic.TypeAdapter)):
        return True
    return isinstance(value, type) and issubclass(value, pydantic.BaseModel)


def _compiled(tool_id: str, name: str, schema: Schema) -> CompiledSchema:
    try:
        return compile_schema(schema)
    except SchemaDefinitionError as exc:
        raise SchemaDefinitionError(
            f"tool {tool_id!r}: {name}: {exc}", keyword=exc.keyword, path=exc.path
        ) from None


def _described(annotation: Any, default: Any, description: str | None) -> Any:
    """``annotation`` carrying the docstring's ``description`` unless a ``Field`` already gives one."""
    if description is None:
        return annotation
    given = [default, *get_args(annotation)[1:]] if get_origin(annotation) is Annotated else [default]
    if any(isinstance(f, FieldInfo) and f.description is not None for f in given):
        return annotation
    return Annotated[annotation, pydantic.Field(description=description)]


def _is_context_param(name: str, annotation: Any) -> bool:
    return annotation is ToolContext or name in ("context", "ctx")


@overload
def tool(
    fn: Callable[..., Any],
    *,
    id: str | None = None,
    description: str | None = None,
    background: Any = None,
    require_approval: bool = False,
    suspend_schema: Schema | None = None,
    resume_schema: Schema | None = None,
) -> Tool: ...


@overload
def tool(
    fn: None = None,
    *,
    id: str | None = None,
    description: str | None = None,
    background: Any = None,
    require_approval: bool = False,
    suspend_schema: Schema | None = None,
    resume_schema: Schema | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    id: str | None = None,
    description: str | None = None,
    background: Any = None,
    require_approval: bool = False,
    suspend_schema: Schema | None = None,
    resume_schema: Schema | None = None,
) -> Any:
    """Build a ``Tool`` from a type-hinted function (sync or async).

    Parameters become the input schema (via pydantic); a parameter named ``context`` (or annotated
    ``ToolContext``) receives the context. The description defaults to the docstring's first
    paragraph, and each parameter documented in it (Google ``Args:``, NumPy ``Parameters`` or Sphinx
    ``:param x:`` style) gets that text as its ``description`` in the JSON Schema the model sees,
    unless its ``Field(description=...)`` already gives one.
    ``background`` is the tool's background-task config (see ``Tool``), e.g.
    ``@tool(background={"enabled": True, "timeout_ms": 60_000})``. ``require_approval``,
    ``suspend_schema`` and ``resume_schema`` are the `Tool` fields of the same names.
    """

    def build(func: Callable[..., Any]) -> Tool:
        signature = inspect.signature(func)
        hints = get_type_hints(func, include_extras=True)
        doc = parse_tool_doc(func)
        fields: dict[str, Any] = {}
        context_param: str | None = None
        for name, param in signature.parameters.items():
            annotation = hints.get(name, Any)
            if _is_context_param(name, annotation):
                context_param = name
                continue
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[name] = (_described(annotation, default, doc.parameters.get(name)), default)
        model = pydantic.create_model(
            f"{func.__name__}_input", __config__=pydantic.ConfigDict(extra="forbid"), **fields
        )
        is_async = inspect.iscoroutinefunction(func)

        def kwargs_of(parsed: pydantic.BaseModel, context: ToolContext) -> dict[str, Any]:
            kwargs = {name: getattr(parsed, name) for name in fields}
            if context_param is not None:
                kwargs[context_param] = context
            return kwargs

        execute: ToolExecute
        if is_async:

            async def execute_async(parsed: pydantic.BaseModel, context: ToolContext) -> Any:
                return await func(**kwargs_of(parsed, context))

            execute = execute_async
        else:

            def execute_sync(parsed: pydantic.BaseModel, context: ToolContext) -> Any:
                return func(**kwargs_of(parsed, context))

            execute = execute_sync
        return Tool(
            id=id or func.__name__,
            description=description if description is not None else doc.description,
            input_schema=model,
            execute=execute,
            background=background,
            require_approval=require_approval,
            suspend_schema=suspend_schema,
            resume_schema=resume_schema,
        )

    if fn is not None:
        return build(fn)
    return build
