"""One traced run: the ``invoke_agent`` span around the run's chunks, a ``chat`` span per model call
(the model's ``do_stream`` wrapped) and an ``execute_tool`` span per tool call (`RunTrace.tool_call`,
called by the outermost ``LoopHooks`` of the run's chain, ``agent``'s ``TracingHooks``).

Built only when the run is instrumented: an untraced run has none of these objects, so it pays
nothing per chunk or per token.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, NonRecordingSpan, Span, SpanContext, SpanKind, TraceFlags

from ._settings import ACTIVE, InstrumentationSettings
from ._spans import ABORTED, fail, provider_name, to_json, tokens

if TYPE_CHECKING:
    from .._abort import AbortSignal
    from ..chunks import Chunk
    from ..models import CallOptions, LanguageModel, StreamPart

__all__ = ["RunTrace"]

_REQUEST_ATTRIBUTES = {
    "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p",
    "top_k": "gen_ai.request.top_k",
    "max_output_tokens": "gen_ai.request.max_tokens",
    "stop_sequences": "gen_ai.request.stop_sequences",
    "seed": "gen_ai.request.seed",
    "presence_penalty": "gen_ai.request.presence_penalty",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
}
_RUN_CHUNKS = frozenset({"step-finish", "error", "abort", "finish"})
_STREAM_PARTS = frozenset({"response-metadata", "finish", "error"})
_CONTENT_PARTS = _STREAM_PARTS | {"text-delta", "tool-call"}


class RunTrace:
    """The spans of one agent run (made by ``Agent`` when the run is instrumented).

    The parent of the run span is the OpenTelemetry context current when the run was created
    (``agent.stream(...)``): a run streamed later, in another task, still nests under the request
    or workflow step that started it. A leg resuming a suspended run (`continues`) links to the
    span of the leg that suspended.
    """

    def __init__(
        self,
        settings: InstrumentationSettings,
        *,
        agent_id: str,
        agent_name: str,
        run_id: str,
        model: LanguageModel,
        prompt: list[dict[str, Any]],
        thread_id: str | None = None,
    ) -> None:
        self.settings = settings
        self.content = settings.include_content
        self.parent = otel_context.get_current()
        self.span: Span | None = None
        self._open: dict[int, Span] = {}
        self._prompt = prompt
        self._input_tokens = 0
        self._output_tokens = 0
        self._reason: str | None = None
        self._error = False
        self._aborted = False
        self._text: list[str] = []
        self._attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.id": agent_id,
            "gen_ai.agent.name": agent_name,
            "gen_ai.request.model": model.model_id,
            "gen_ai.provider.name": provider_name(model.provider),
            "agentstream.run_id": run_id,
        }
        if thread_id is not None:
            self._attributes["gen_ai.conversation.id"] = thread_id
        self._name = f"invoke_agent {agent_name}"
        self._links: list[Link] = []

    def reference(self) -> dict[str, Any] | None:
        """The run span's trace and span ids (kept with a suspended run's snapshot, so that the leg
        resuming it can link to this span), ``None`` before the span started or when unsampled."""
        span = self.span
        context = span.get_span_context() if span is not None else None
        if context is None or not context.is_valid:
            return None
        return {
            "traceId": format(context.trace_id, "032x"),
            "spanId": format(context.span_id, "016x"),
            "traceFlags": int(context.trace_flags),
        }

    def continues(self, reference: Any, action: str, prompt: list[dict[str, Any]]) -> None:
        """This run is a leg resuming a suspended run (``action``: approve, decline or resume).

        ``reference`` is the suspended leg's `reference` (``None`` when that leg was not traced).
        The span links to it and, when the leg was started outside any span (no request or workflow
        step around it), is its child: the whole run is then one trace however many legs it took.
        """
        self._attributes["agentstream.resumed"] = True
        self._attributes["agentstream.resume.action"] = action
        self._prompt = prompt
        original = _span_context(reference)
        if original is None:
            return
        self._links.append(Link(original, {"agentstream.link": "resumes"}))
        if not trace.get_current_span(self.parent).get_span_context().is_valid:
            self.parent = trace.set_span_in_context(NonRecordingSpan(original), self.parent)

    # ------------------------------------------------------------------------------ the run span

    def _run_span(self) -> Span:
        if self.span is None:
            self.span = self.settings.tracer.start_span(
                self._name,
                context=self.parent,
                kind=SpanKind.INTERNAL,
                attributes=self._attributes,
                links=self._links,
            )
            if self.content:
                self.span.set_attribute("gen_ai.input.messages", to_json(self._prompt))
        return self.span

    def start_child(self, name: str, attributes: dict[str, Any], kind: SpanKind = SpanKind.INTERNAL) -> Span:
        """A span under the run span, ended by `end` or, at the latest, when the run ends."""
        context = trace.set_span_in_context(self._run_span(), self.parent)
        span = self.settings.tracer.start_span(name, context=context, kind=kind, attributes=attributes)
        self._open[id(span)] = span
        return span

    def is_open(self, span: Span) -> bool:
        """``span`` is a child of this run that has not ended yet."""
        return id(span) in self._open

    def end(self, span: Span) -> None:
        """End a child span (once)."""
        if self._open.pop(id(span), None) is not None:
            span.end()

    async def wrap(self, source: AsyncIterator[Chunk]) -> AsyncIterator[Chunk]:
        """The run's chunks, unchanged, inside the run span (which ends however the run ends)."""
        span = self._run_span()
        try:
            try:
                async for chunk in source:
                    if chunk.type in _RUN_CHUNKS:
                        self._observe(span, chunk)
                    yield chunk
            finally:
                aclose = getattr(source, "aclose", None)
                if aclose is not None:
                    await aclose()  # the run's own clean-up first (it ends the model call's span)
        except GeneratorExit:
            self._aborted = True  # the consumer stopped reading (aclose): the run is cut short
            raise
        except BaseException as exc:
            if isinstance(exc, Exception):
                self._error = True
                fail(span, exc)
            else:
                self._aborted = True
            raise
        finally:
            self._finish(span)

    def _observe(self, span: Span, chunk: Chunk) -> None:
        payload: Any = getattr(chunk, "payload", None)
        kind = chunk.type
        if kind == "step-finish":
            usage = payload.output.get("usage") or {}
            self._input_tokens += tokens(usage.get("inputTokens")) or 0
            self._output_tokens += tokens(usage.get("outputTokens")) or 0
            if self.content and payload.output.get("text"):
                self._text.append(payload.output["text"])
        elif kind == "finish":
            reason = payload.step_result.get("reason")
            self._reason = reason if isinstance(reason, str) else None
        elif kind == "abort":
            self._aborted = True
        elif kind == "error" and not self._error:
            self._error = True
            fail(span, payload.error)

    def _finish(self, span: Span) -> None:
        for child in list(self._open.values()):
            child.set_attribute(ABORTED, True)  # still open when the run ended: cut short
            self.end(child)
        span.set_attribute("gen_ai.usage.input_tokens", self._input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", self._output_tokens)
        if self._reason is not None and not self._aborted:
            span.set_attribute("gen_ai.response.finish_reasons", [self._reason])
        if self._aborted:
            span.set_attribute(ABORTED, True)
        if self.content and self._text:
            message = {"role": "assistant", "parts": [{"type": "text", "content": "\n\n".join(self._text)}]}
            span.set_attribute("gen_ai.output.messages", to_json([message]))
        span.end()

    # ------------------------------------------------------------------------------ the seams

    def model(self, model: LanguageModel) -> LanguageModel:
        """``model`` with a ``chat`` span around each ``do_stream`` call."""
        return TracedModel(model, self)

    async def tool_call(
        self,
        name: str,
        call_id: str,
        args: Any,
        execute: Callable[[], Awaitable[Any]],
        *,
        description: str | None = None,
        signal: AbortSignal | None = None,
    ) -> Any:
        """``await execute()`` inside an ``execute_tool {name}`` span, the current span meanwhile (so
        what the tool starts nests under it); its error is recorded on the span, or, once ``signal``
        (the run's abort signal) fired, the abort."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function",
        }
        if description:
            attributes["gen_ai.tool.description"] = description
        if self.content:
            attributes["gen_ai.tool.call.arguments"] = to_json(args)
        span = self.start_child(f"execute_tool {name}", attributes)
        token = ACTIVE.set(self.settings)
        try:
            with trace.use_span(span, record_exception=False, set_status_on_exception=False):
                result = await execute()
        except BaseException as exc:
            _failed(span, exc, signal)
            raise
        else:
            if self.content:
                span.set_attribute("gen_ai.tool.call.result", to_json(result))
            return result
        finally:
            ACTIVE.reset(token)
            self.end(span)


class TracedModel:
    """A `LanguageModel` whose ``do_stream`` calls are ``chat`` spans of one run."""

    def __init__(self, model: LanguageModel, run: RunTrace) -> None:
        self.wrapped = model
        self.run = run
        self.specification_version = getattr(model, "specification_version", "v2")

    # read per call: the wrapped model may change between steps (`prepare_step`'s model)
    @property
    def provider(self) -> str:
        return self.wrapped.provider

    @provider.setter
    def provider(self, value: str) -> None:
        self.wrapped.provider = value

    @property
    def model_id(self) -> str:
        return self.wrapped.model_id

    @model_id.setter
    def model_id(self, value: str) -> None:
        self.wrapped.model_id = value

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)  # whatever else the provider offers

    def do_stream(self, options: CallOptions) -> AsyncIterator[StreamPart]:
        """The wrapped model's parts, watched for usage, finish reasons and errors."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": self.model_id,
            "gen_ai.provider.name": provider_name(self.provider),
            "gen_ai.system": provider_name(self.provider),
        }
        for key, name in _REQUEST_ATTRIBUTES.items():
            value = options.get(key)
            if value is not None:
                attributes[name] = value
        if self.run.content:
            attributes["gen_ai.input.messages"] = to_json(options.get("prompt") or [])
        span = self.run.start_child(f"chat {self.model_id}", attributes, SpanKind.CLIENT)
        signal = options.get("abort_signal")
        try:
            stream = self.wrapped.do_stream(options)
        except BaseException as exc:
            _failed(span, exc, signal)
            self.run.end(span)
            raise
        return TracedStream(stream, span, self.run, signal)


def _span_context(reference: Any) -> SpanContext | None:
    """The span context a stored `RunTrace.reference` names (``None`` if it is absent or malformed:
    the snapshot is data from storage, a bad reference must not fail the run)."""
    if not isinstance(reference, dict):
        return None
    try:
        context = SpanContext(
            trace_id=int(reference["traceId"], 16),
            span_id=int(reference["spanId"], 16),
            is_remote=True,
            trace_flags=TraceFlags(int(reference.get("traceFlags", TraceFlags.SAMPLED))),
        )
    except (KeyError, TypeError, ValueError):
        return None
    return context if context.is_valid else None


def _failed(span: Span, exc: BaseException, signal: AbortSignal | None) -> None:
    """An exception ended the span's work: an error, or (after an abort, or a cancellation) a cut."""
    if isinstance(exc, Exception) and (signal is None or not signal.aborted):
        fail(span, exc)
    else:
        span.set_attribute(ABORTED, True)


class TracedStream:
    """A model call's parts, passed on unchanged; the call's span ends with the stream."""

    __slots__ = (
        "_calls",
        "_done",
        "_fallback_seen",
        "_inner",
        "_run",
        "_signal",
        "_span",
        "_text",
        "_watched",
    )

    def __init__(
        self, inner: AsyncIterator[StreamPart], span: Span, run: RunTrace, signal: AbortSignal | None
    ) -> None:
        self._inner = inner
        self._signal = signal
        self._done = False
        """A ``finish`` or ``error`` part came: closing the stream now does not cut the call short."""
        self._span = span
        self._run = run
        self._watched = _CONTENT_PARTS if run.content else _STREAM_PARTS
        self._text: list[str] = []
        self._calls: list[dict[str, Any]] = []
        self._fallback_seen = False

    @property
    def model(self) -> Any:
        """The model that answered, when the wrapped stream says (a fallback list's entry)."""
        return getattr(self._inner, "model", None)

    @property
    def fallback_index(self) -> int | None:
        """Which model of a fallback list answered, when the wrapped stream says."""
        return getattr(self._inner, "fallback_index", None)

    @property
    def request(self) -> Any:
        """The wrapped stream's ``request`` (what the provider sent), if it reports one."""
        return getattr(self._inner, "request", None)

    @property
    def response(self) -> Any:
        """The wrapped stream's ``response`` (the HTTP headers), if it reports one."""
        return getattr(self._inner, "response", None)

    def __aiter__(self) -> TracedStream:
        return self

    async def __anext__(self) -> StreamPart:
        try:
            part = await self._inner.__anext__()
        except StopAsyncIteration:
            self._end()
            raise
        except BaseException as exc:
            _failed(self._span, exc, self._signal)
            self._end()
            raise
        if not self._fallback_seen:
            self._fallback_seen = True
            self._note_fallback()
        if part["type"] in self._watched:
            self._observe(part)
        return part

    def _note_fallback(self) -> None:
        """A fallback list's call: which model answered, and each failed attempt as a span event."""
        index = getattr(self._inner, "fallback_index", None)
        if index is None:
            return
        span = self._span
        model = getattr(self._inner, "model", None)
        span.set_attribute("agentstream.fallback.index", index)
        if model is not None:
            span.set_attribute("agentstream.fallback.model", f"{model.provider}/{model.model_id}")
        attempts = getattr(self._inner, "attempts", None) or []
        span.set_attribute("agentstream.fallback.failed_attempts", len(attempts))
        for attempt in attempts:
            attributes: dict[str, Any] = {
                "agentstream.fallback.model": str(attempt.get("model")),
                "agentstream.fallback.index": int(attempt.get("index", 0)),
                "error.message": str(attempt.get("message")),
            }
            if attempt.get("statusCode") is not None:
                attributes["http.response.status_code"] = int(attempt["statusCode"])
            span.add_event("agentstream.fallback.attempt_failed", attributes)

    def _observe(self, part: StreamPart) -> None:
        span = self._span
        if part["type"] == "finish" or part["type"] == "error":
            self._done = True
        if part["type"] == "finish":
            usage = part["usage"] if isinstance(part["usage"], dict) else {}
            for key, name in (("inputTokens", "input_tokens"), ("outputTokens", "output_tokens")):
                count = tokens(usage.get(key))
                if count is not None:
                    span.set_attribute(f"gen_ai.usage.{name}", count)
            reason: Any = part["finishReason"]
            while isinstance(reason, dict):
                reason = reason.get("unified")
            span.set_attribute("gen_ai.response.finish_reasons", [str(reason or "other")])
        elif part["type"] == "response-metadata":
            if part.get("id"):
                span.set_attribute("gen_ai.response.id", str(part.get("id")))
            if part.get("modelId"):
                span.set_attribute("gen_ai.response.model", str(part.get("modelId")))
        elif part["type"] == "error":
            fail(span, part["error"])
        elif part["type"] == "text-delta":
            self._text.append(part["delta"])
        elif part["type"] == "tool-call":
            self._calls.append(
                {
                    "type": "tool_call",
                    "id": part["toolCallId"],
                    "name": part["toolName"],
                    "arguments": part["input"],
                }
            )

    def _end(self) -> None:
        if self._run.content and (self._text or self._calls):
            parts: list[dict[str, Any]] = (
                [{"type": "text", "content": "".join(self._text)}] if self._text else []
            )
            message = {"role": "assistant", "parts": parts + self._calls}
            self._span.set_attribute("gen_ai.output.messages", to_json([message]))
        self._run.end(self._span)

    async def aclose(self) -> None:
        """Close the wrapped stream; a call closed before its last part is marked aborted."""
        try:
            aclose = getattr(self._inner, "aclose", None)
            if aclose is not None:
                await aclose()
        finally:
            if self._run.is_open(self._span):
                if not self._done:
                    self._span.set_attribute(ABORTED, True)
                self._end()
