"""Processors on the loop's seams: the `Processor` protocol and `ProcessorHooks`, which runs an
agent's input, output and error processors in the phases of Mastra's ``ProcessorRunner`` (spec §7).

Every processor method is called with keyword arguments named as Mastra's in snake_case; a
processor names the ones it uses and takes the rest as ``**_``. Each call gets ``abort(reason, *,
retry=False, metadata=None)`` (raises `Tripwire` with the processor's id), ``retry_count`` (the
consecutive processor retries so far), ``writer`` (``writer.custom(chunk)`` streams a chunk),
``abort_signal`` (the run's) and ``request_context`` (the run's `RequestContext`, Mastra's
``requestContext``).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, runtime_checkable

from .._abort import AbortSignal
from .._request_context import RequestContext
from ..chunks import Chunk, DataChunk, ToolCallApproval, ToolCallSuspended
from ._hooks import ChainedHooks, LoopHooks, PendingToolCall, StepDecision, StepInfo
from ._tripwire import Tripwire

if TYPE_CHECKING:
    from ..models import CallOptions
    from ..tools import Tool, ToolContext

__all__ = [
    "DEFAULT_MAX_ERROR_RETRIES",
    "INPUT_METHODS",
    "OUTPUT_METHODS",
    "Processor",
    "ProcessorHooks",
    "ProcessorWriter",
    "check_processors",
]

log = logging.getLogger("agentstream.processors")

DEFAULT_MAX_ERROR_RETRIES = 3
"""API-error retries allowed when error processors exist and ``max_processor_retries`` is unset."""

INPUT_METHODS = ("process_input", "process_input_step", "process_llm_request")
OUTPUT_METHODS = (
    "process_output_stream",
    "process_output_step",
    "process_tool_result",
    "process_output_result",
)
ERROR_METHODS = ("process_api_error",)


@runtime_checkable
class Processor(Protocol):
    """A processor (Mastra's ``Processor``): an ``id`` and any of these async methods, each called
    with keyword arguments (take what you need, then ``**_``):

    * ``process_input(*, messages, system_messages, ...)`` → the messages (or ``None``: unchanged);
      once, before the first model call. Messages are the prompt's model messages
      (``{"role", "content"}``, content a string or AI SDK parts); ``messages`` never holds the
      system messages, which come apart as ``system_messages``.
    * ``process_input_step(*, messages, step_number, ...)`` → this call's messages (or ``None``);
      before every model call.
    * ``process_llm_request(*, prompt, step_number, ...)`` → this call's prompt (or ``None``); not
      kept for later calls.
    * ``process_output_stream(*, part, stream_parts, state, ...)`` → the part, a replacement, or
      ``None`` to drop it; ``data-*`` parts only with ``process_data_parts = True``.
    * ``process_output_step(*, step_number, finish_reason, tool_calls, text, usage, messages,
      system_messages, steps, state, ...)``: after every model response, before its tools run.
    * ``process_tool_result(*, tool_name, tool_call_id, args, result, ...)`` → the result to commit.
    * ``process_output_result(*, messages, result, state, ...)``: once at the end; ``result`` is
      ``{"text", "usage", "finish_reason", "steps"}``.
    * ``process_api_error(*, error, messages, step_number, ...)`` → ``{"retry": True}`` (or ``True``)
      to call the model again.

    Step numbers are 0-based, as Mastra's. Optional attributes: ``name``, ``description``,
    ``process_data_parts``.
    """

    @property
    def id(self) -> str:
        """The processor's id (``processor_id`` of the tripwires it raises)."""
        ...


class ProcessorWriter:
    """``writer.custom(chunk)``: stream a chunk (a ``data-*`` chunk or any other) from a processor,
    in any phase: it goes out before the part being processed, else with the next chunk the run
    streams, at the latest before ``finish``."""

    __slots__ = ("_written",)

    def __init__(self) -> None:
        self._written: list[Chunk] = []

    def custom(self, chunk: Chunk | Mapping[str, Any]) -> None:
        """Stream ``chunk`` (a chunk, or a ``{"type": "data-...", "data": ...}`` dict) next."""
        if isinstance(chunk, Mapping):
            kind = chunk.get("type")
            if not isinstance(kind, str) or not kind.startswith("data-"):
                raise ValueError(f"writer.custom: a dict chunk needs type 'data-<name>', got {kind!r}")
            chunk = DataChunk(
                type=kind,
                data=chunk.get("data"),
                id=chunk.get("id"),
                transient=chunk.get("transient"),
            )
        self._written.append(chunk)

    @property
    def pending(self) -> bool:
        """Whether chunks were written since the last `take`."""
        return bool(self._written)

    def take(self) -> list[Chunk]:
        """The chunks written since the last call (the runner streams them)."""
        written, self._written = self._written, []
        return written


def check_processors(value: Any, where: str, methods: Sequence[str]) -> list[Any]:
    """``value`` as a list of processors; `TypeError` naming ``where[i]`` for anything else."""
    if value is None:
        return []
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise TypeError(f"{where} must be a list of processors, got {type(value).__name__}")
    out = list(value)
    for i, p in enumerate(out):
        pid = getattr(p, "id", None)
        if not isinstance(pid, str) or not pid:
            raise TypeError(f"{where}[{i}]: a processor needs a non-empty str id, got {pid!r}")
        if not any(callable(getattr(p, m, None)) for m in methods):
            raise TypeError(f"{where}[{i}] ({pid!r}) has none of the methods {', '.join(methods)}")
    return out


def _abort_for(processor_id: str, default: str) -> Callable[..., NoReturn]:
    def abort(reason: str | None = None, *, retry: bool = False, metadata: Any = None) -> NoReturn:
        raise Tripwire(reason or default, retry=retry, metadata=metadata, processor_id=processor_id)

    return abort


async def _call(fn: Callable[..., Any], **kwargs: Any) -> Any:
    result = fn(**kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


class _Entry:
    """One processor of one run, with what it keeps between calls."""

    __slots__ = ("abort", "abort_stream", "data_parts", "id", "processor", "state", "stream_parts")

    def __init__(self, processor: Any) -> None:
        self.processor = processor
        self.id: str = processor.id
        self.data_parts = bool(getattr(processor, "process_data_parts", False))
        self.state: dict[str, Any] = {}
        self.stream_parts: list[Chunk] = []
        self.abort = _abort_for(self.id, f"Tripwire triggered by {self.id}")
        self.abort_stream = _abort_for(self.id, f"Stream part blocked by {self.id}")

    def method(self, name: str) -> Callable[..., Any] | None:
        fn = getattr(self.processor, name, None)
        return fn if callable(fn) else None


class ProcessorHooks(ChainedHooks):
    """Runs one run's processors on the loop's seams, then chains to ``inner`` for everything.

    The retry budget: ``abort(..., retry=True)`` in ``process_output_step`` retries the step only
    while ``retry_count < max_processor_retries`` (unset: never); API errors retry while
    ``retry_count < max_processor_retries`` (unset: `DEFAULT_MAX_ERROR_RETRIES` when error
    processors exist). Only consecutive retries count: a step that passes resets the count.
    """

    def __init__(
        self,
        inner: LoopHooks,
        *,
        input_processors: Sequence[Any] = (),
        output_processors: Sequence[Any] = (),
        error_processors: Sequence[Any] = (),
        max_processor_retries: int | None = None,
        signal: AbortSignal | None = None,
        request_context: RequestContext | None = None,
    ) -> None:
        super().__init__(inner)
        self.request_context = request_context if request_context is not None else RequestContext()
        self.inputs = [_Entry(p) for p in input_processors]
        self.outputs = [_Entry(p) for p in output_processors]
        self.errors = [_Entry(p) for p in error_processors]
        self.max_retries = max_processor_retries
        self.max_error_retries = (
            max_processor_retries
            if max_processor_retries is not None
            else (DEFAULT_MAX_ERROR_RETRIES if self.errors else None)
        )
        self.signal = signal
        self.retry_count = 0
        self.writer = ProcessorWriter()
        self.system_messages: list[dict[str, Any]] = []
        self.messages: list[dict[str, Any]] = []
        self._steps: list[StepInfo] = []
        self._streamers: list[tuple[_Entry, Callable[..., Any], dict[str, Any], bool]] = []
        for entry in self.outputs:
            fn = entry.method("process_output_stream")
            if fn is not None:
                kw = {
                    "stream_parts": entry.stream_parts,
                    "state": entry.state,
                    **self._ctx(entry, stream=True),
                }
                self._streamers.append((entry, fn, kw, inspect.iscoroutinefunction(fn)))
        self._inner_process = inner.process_chunk
        if self._streamers or self.inputs or self.outputs or self.errors:
            # on the chunk path whenever there are processors: chunks a processor writes in any
            # phase are streamed with the next chunk (or before ``finish``)
            self.process_chunk = self._process_chunk

    def _ctx(self, entry: _Entry, *, stream: bool = False) -> dict[str, Any]:
        return {
            "abort": entry.abort_stream if stream else entry.abort,
            "retry_count": self.retry_count,
            "writer": self.writer,
            "abort_signal": self.signal,
            "request_context": self.request_context,
        }

    # ------------------------------------------------------------------ input

    async def process_input(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        system = [m for m in messages if m.get("role") == "system"]
        rest = [m for m in messages if m.get("role") != "system"]
        changed = False
        for entry in self.inputs:
            fn = entry.method("process_input")
            if fn is None:
                continue
            out = await _call(fn, messages=rest, system_messages=system, **self._ctx(entry))
            if out is not None:
                rest, changed = _message_list(out, f"{entry.id}.process_input"), True
        self.system_messages, self.messages = system, rest
        # unchanged input keeps its order (a client's system message may sit between others)
        return await self.inner.process_input(system + rest if changed else messages)

    async def prepare_step(self, step_number: int, options: CallOptions) -> CallOptions:
        prompt = list(options.get("prompt", []))
        # the conversation as this call starts: what output processors see as ``messages``
        self.messages = [m for m in prompt if m.get("role") != "system"]
        for name, key in (("process_input_step", "messages"), ("process_llm_request", "prompt")):
            for entry in self.inputs:
                fn = entry.method(name)
                if fn is None:
                    continue
                out = await _call(fn, **{key: prompt}, step_number=step_number - 1, **self._ctx(entry))
                if out is not None:
                    prompt = _message_list(out, f"{entry.id}.{name}")
        if prompt != options.get("prompt"):
            options = {**options, "prompt": prompt}
        return await self.inner.prepare_step(step_number, options)

    # ------------------------------------------------------------------ output stream

    async def _process_chunk(self, chunk: Chunk) -> Chunk | list[Chunk | None] | None:
        # The per-token path of a run with output-stream processors: keyword dicts are built once
        # per processor and only ``part`` changes (``**kw`` copies it for the callee).
        # the hooks inside go first (background dispatch annotates tool results), so processors
        # see the chunk as it will be streamed
        inner = self._inner_process
        if inner is not None:
            result = inner(chunk)
            chunk = await result if inspect.isawaitable(result) else result
            if chunk is None:
                return None
        part: Chunk | None = chunk
        kind = type(chunk)
        if kind is not ToolCallApproval and kind is not ToolCallSuspended:
            is_data = kind is DataChunk
            for entry, fn, kw, awaits in self._streamers:
                if is_data and not entry.data_parts:
                    continue
                entry.stream_parts.append(part)  # type: ignore[arg-type]
                kw["part"] = part
                try:
                    out = await fn(**kw) if awaits else fn(**kw)
                    if not awaits and inspect.isawaitable(out):
                        out = await out
                except Tripwire:
                    raise
                except Exception:
                    # Mastra: a processor that fails (other than by abort) is logged; the part goes on.
                    log.exception(
                        "output processor %r failed on a %s part; the part is kept", entry.id, kind.__name__
                    )
                    out = part
                if (
                    out is not None
                    and type(out) is not type(part)
                    and not isinstance(getattr(out, "type", None), str)
                ):
                    raise TypeError(
                        f"{entry.id}.process_output_stream must return a chunk or None, got {type(out).__name__}"
                    )
                part = out
                if part is None:
                    break
        if self.writer.pending:
            return [*self.writer.take(), part]
        return part

    def _set_retry_count(self, value: int) -> None:
        self.retry_count = value
        for _, _, kw, _ in self._streamers:
            kw["retry_count"] = value

    # ------------------------------------------------------------------ output step

    async def after_model(self, step: StepInfo) -> None:
        for entry in self.outputs:
            fn = entry.method("process_output_step")
            if fn is None:
                continue
            try:
                await _call(
                    fn,
                    step_number=step.number - 1,
                    finish_reason=step.finish_reason,
                    tool_calls=step.tool_calls,
                    text=step.text,
                    usage=step.usage,
                    messages=self._with_answer(step),
                    system_messages=list(self.system_messages),
                    steps=list(self._steps),
                    state=entry.state,
                    **self._ctx(entry),
                )
            except Tripwire as trip:
                log.warning(
                    "Output step processor tripwire triggered: %s (processor %s, retry %s)",
                    trip.reason,
                    trip.processor_id,
                    trip.retry,
                )
                if trip.retry:
                    if self.max_retries is None:
                        log.warning(
                            "Processor requested retry but max_processor_retries is not set. Treating as abort."
                        )
                        trip.retry_denied = True
                    elif self.retry_count >= self.max_retries:
                        log.warning(
                            "Processor retry budget exceeded (max_processor_retries=%d). Treating as abort.",
                            self.max_retries,
                        )
                        trip.retry_denied = True
                    else:
                        self._set_retry_count(self.retry_count + 1)
                        trip.retry_count = self.retry_count
                raise
        self._set_retry_count(0)
        await self.inner.after_model(step)

    def _with_answer(self, step: StepInfo) -> list[dict[str, Any]]:
        """The conversation with this step's answer (its text and tool calls) at the end."""
        content: list[dict[str, Any]] = [{"type": "text", "text": step.text}] if step.text else []
        content += [
            {
                "type": "tool-call",
                "toolCallId": c["toolCallId"],
                "toolName": c["toolName"],
                "input": c["args"],
            }
            for c in step.tool_calls
        ]
        return [*self.messages, {"role": "assistant", "content": content}] if content else list(self.messages)

    async def end_of_step(self, step: StepInfo) -> bool | StepDecision | None:
        self._steps.append(step)
        return await self.inner.end_of_step(step)

    # ------------------------------------------------------------------ tools

    async def execute_tool(
        self,
        call: PendingToolCall,
        tool: Tool,
        context: ToolContext,
        default: Callable[[], Awaitable[Any]],
    ) -> Any:
        result = await self.inner.execute_tool(call, tool, context, default)
        for entry in self.outputs:
            fn = entry.method("process_tool_result")
            if fn is None:
                continue
            result = await _call(
                fn,
                tool_name=call.name,
                tool_call_id=call.call_id,
                args=call.exec_args,
                result=result,
                state=entry.state,
                **self._ctx(entry),
            )
        return result

    # ------------------------------------------------------------------ output result

    async def end_of_run(self, steps: list[StepInfo]) -> list[Chunk]:
        chunks = await self.inner.end_of_run(steps)
        last = steps[-1] if steps else None
        result = {
            "text": last.text if last is not None else "",
            "usage": _sum_usage(steps),
            "finish_reason": last.finish_reason if last is not None else "other",
            "steps": list(steps),
        }
        for entry in self.outputs:
            fn = entry.method("process_output_result")
            if fn is None:
                continue
            await _call(
                fn, messages=list(self.messages), result=result, state=entry.state, **self._ctx(entry)
            )
        return [*chunks, *self.writer.take()]

    # ------------------------------------------------------------------ API errors

    async def on_model_error(self, step: StepInfo, error: BaseException | Any) -> bool:
        budget = self.max_error_retries
        if self.errors and budget is not None and self.retry_count < budget:
            for entry in self.errors:
                fn = entry.method("process_api_error")
                if fn is None:
                    continue
                out = await _call(
                    fn,
                    error=error,
                    messages=list(self.messages),
                    step_number=step.number - 1,
                    state=entry.state,
                    **self._ctx(entry),
                )
                if out is True or (isinstance(out, Mapping) and out.get("retry") is True):
                    self._set_retry_count(self.retry_count + 1)
                    return True
        return await self.inner.on_model_error(step, error)


def _message_list(value: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise TypeError(f"{where} must return a list of messages or None, got {type(value).__name__}")
    out = list(value)
    for i, m in enumerate(out):
        if not isinstance(m, Mapping) or not isinstance(m.get("role"), str):
            raise TypeError(f"{where} returned messages[{i}] without a role: {m!r}")
    return [dict(m) for m in out]


def _sum_usage(steps: list[StepInfo]) -> dict[str, Any]:
    total: dict[str, Any] = {}
    for step in steps:
        for key, value in step.usage.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total[key] = total.get(key, 0) + value
    return total
