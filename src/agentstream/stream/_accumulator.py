"""`RunAccumulator`: the pure fold of a run's chunks into its results (spec §3.4), serialisable as it is.

No I/O, no callbacks, no awaiting: each ``fold_*`` takes a chunk and returns the chunks to emit
(a tool input stream becomes a synthetic ``tool-call``; a delta gets its tool name back). The facade
(`ModelOutput`) decides when to call user callbacks and settle the awaitable results; the loop may
read what the step in flight has produced (`step_text`, `step_tool_calls`, `usage`).

Text is never copied per token: `LogText` reads it back from the chunk log on demand. Encoding the
accumulator (`encode_state`) writes that text out as strings, so a later leg (`decode_state`)
continues the run without the log of the earlier one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ..chunks import (
    Chunk,
    File,
    Goal,
    ObjectResult,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    Source,
    StepFinish,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallInputStreamingEnd,
    ToolCallInputStreamingStart,
    ToolCallPayload,
    ToolResult,
    to_jsonable,
)
from ._results import StepResult, TripwireInfo
from ._usage import Usage

__all__ = ["LogText", "ReasoningEntry", "RunAccumulator", "StepBuffers", "decode_state", "encode_state"]


class LogText:
    """The run's text and the step's text, read from the log's ``text-delta`` chunks.

    ``prior`` is the text of the finished steps of earlier legs of a resumed run, ``prior_step``
    what the step in flight streamed in the earlier leg (it is part of the run's text once the step
    finishes, unless a processor rejects the step); ``dropped`` holds the log ranges of rejected
    steps (their text is no part of the answer); ``replay_start`` is where the run's text begins
    after a goal judge restarted the run."""

    __slots__ = (
        "_scan_from",
        "_scanned",
        "_step_parts",
        "dropped",
        "log",
        "prior",
        "prior_step",
        "replay_start",
        "step_start",
    )

    def __init__(self, prior: str = "", prior_step: str = "") -> None:
        self.log: list[Chunk] = []
        self.prior = prior
        self.prior_step = prior_step
        self.replay_start = 0
        self.step_start = 0
        self.dropped: list[tuple[int, int]] = []
        # The step's text as read so far: the loop and the facade read it several times per step,
        # so each read scans only the chunks logged since the last one.
        self._scan_from = 0
        self._scanned = 0
        self._step_parts: list[str] = []

    def run(self, *, dropped: bool = False) -> str:
        """The text of the run; with ``dropped`` also that of steps a processor rejected."""
        log = self.log
        head = self.prior + (self.prior_step if self.replay_start == 0 else "")
        if dropped or not self.dropped:
            if self.replay_start <= self.step_start:
                # The step in flight's text is read incrementally (`step`): only settled steps
                # are scanned here (a long answer's run text was three scans of its whole log).
                return head + _joined(log, self.replay_start, self.step_start) + self._step_scan()
            return head + _joined(log, self.replay_start, len(log))
        parts, start = [head], self.replay_start
        for begin, end in self.dropped:
            if end > start:
                parts.append(_joined(log, start, begin))
                start = end
        parts.append(_joined(log, start, len(log)))
        return "".join(parts)

    def step(self) -> str:
        """The text the step in flight has streamed so far."""
        return self.prior_step + self._step_scan()

    def _step_scan(self) -> str:
        """The text of the step's deltas in the log, scanning only those logged since the last read."""
        start, end = self.step_start, len(self.log)
        if self._scan_from != start or self._scanned > end:
            self._scan_from, self._scanned, self._step_parts = start, start, []
        if self._scanned < end:
            self._step_parts.append(_joined(self.log, self._scanned, end))
            self._scanned = end
            if len(self._step_parts) > 1:  # kept as one string: the next read joins nothing
                self._step_parts = ["".join(self._step_parts)]
        return self._step_parts[0] if self._step_parts else ""

    def step_parts(self) -> dict[str, str]:
        """The step's text by text part id (the step's deltas of this leg), in first-seen order."""
        parts: dict[str, list[str]] = {}
        for chunk in self.log[self.step_start :]:
            if type(chunk) is TextDelta:
                payload = chunk.payload
                texts = parts.get(payload.id)
                if texts is None:
                    texts = parts[payload.id] = []
                texts.append(payload.text)
        return {key: "".join(texts) for key, texts in parts.items()}

    def before_step(self) -> str:
        """The run's text without the step in flight (what is settled)."""
        text = self.run()
        in_flight = (self.prior_step if self.replay_start == 0 else "") + _joined(
            self.log, max(self.step_start, self.replay_start), len(self.log)
        )
        return text[: len(text) - len(in_flight)]

    def drop_step(self) -> None:
        """A processor rejected the step in flight: its text is no part of the run's."""
        self.dropped.append((self.step_start, len(self.log)))
        self.prior_step = ""

    def close_step(self, log_length: int) -> None:
        """The step in flight finished; the next one starts at ``log_length``."""
        if self.replay_start == 0:
            self.prior += self.prior_step
        self.prior_step = ""
        self.step_start = log_length

    def restart(self, log_length: int) -> None:
        """A goal judge restarted the run: its text begins at ``log_length``."""
        self.replay_start = log_length
        self.prior = ""


def _joined(log: list[Chunk], start: int, end: int) -> str:
    if end <= start:
        return ""
    return "".join([c.payload.text for c in log[start:end] if type(c) is TextDelta])


@dataclass
class ReasoningEntry:
    """One reasoning block (by ``id``): its deltas' text and the latest provider metadata."""

    id: str
    text: list[str] = field(default_factory=list)
    provider_metadata: dict[str, Any] | None = None


@dataclass
class StepBuffers:
    """What the step in flight has produced so far (the loop reads these)."""

    reasoning: dict[str, ReasoningEntry] = field(default_factory=dict)
    sources: list[Source] = field(default_factory=list)
    files: list[File] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_results: list[ToolResult] = field(default_factory=list)


@dataclass
class RunAccumulator:
    """Everything the results of a run are made of, folded chunk by chunk.

    Read by the loop: `step_text`, `step_tool_calls`, `step_tool_results`, `usage` (the run's so
    far), `steps`; by the facade: the rest. `encode_state` / `decode_state` are its JSON form."""

    run_id: str = ""
    text: LogText = field(default_factory=LogText)
    steps: list[StepResult] = field(default_factory=list)
    step: StepBuffers = field(default_factory=StepBuffers)
    reasoning: dict[str, ReasoningEntry] = field(default_factory=dict)
    sources: list[Source] = field(default_factory=list)
    files: list[File] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_results: list[ToolResult] = field(default_factory=list)
    tool_inputs: dict[str, ToolCallInputStreamingStart] = field(default_factory=dict)
    tool_args: dict[str, list[str]] = field(default_factory=dict)
    synthetic_calls: dict[str, int] = field(default_factory=dict)
    warnings: list[Any] = field(default_factory=list)
    request: dict[str, Any] = field(default_factory=dict)
    response: dict[str, Any] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    provider_metadata: dict[str, Any] | None = None
    object: Any = None
    has_object: bool = False
    used_fallback_value: bool = False
    was_suspended: bool = False
    truncate_at_step_finish: bool = False

    # ---------------------------------------------------------------- what the loop reads

    @property
    def step_text(self) -> str:
        """The text of the step in flight so far."""
        return self.text.step()

    def step_text_parts(self) -> dict[str, str]:
        """The text of the step in flight by text part id (for the assistant message's parts)."""
        return self.text.step_parts()

    @property
    def step_tool_calls(self) -> list[ToolCall]:
        """The step's tool calls so far (a streamed input counts once its stream ended)."""
        return list(self.step.tool_calls)

    @property
    def step_tool_results(self) -> list[ToolResult]:
        """The step's tool results so far."""
        return list(self.step.tool_results)

    def run_text(self, *, dropped: bool = False) -> str:
        """The text of the run (earlier legs included); ``dropped`` adds rejected steps' text."""
        return self.text.run(dropped=dropped)

    def reasoning_details(self, *, step: bool = False) -> list[dict[str, Any]]:
        """Reasoning as Mastra's ``reasoning`` chunks (the run's, or with ``step`` the step's)."""
        out = []
        for entry in (self.step.reasoning if step else self.reasoning).values():
            payload: dict[str, Any] = {"id": entry.id, "text": "".join(entry.text)}
            if entry.provider_metadata is not None:
                payload["providerMetadata"] = entry.provider_metadata
            out.append({"type": "reasoning", "runId": self.run_id, "from": "AGENT", "payload": payload})
        return out

    def reasoning_text(self, *, step: bool = False) -> str | None:
        """All reasoning text (the run's, or the step's), or ``None`` when there was none."""
        details = self.step.reasoning if step else self.reasoning
        if not details:
            return None
        return "".join("".join(entry.text) for entry in details.values())

    @property
    def object_value(self) -> Any:
        """The structured output, or ``None`` before (or without) an ``object-result``."""
        return self.object if self.has_object else None

    # ---------------------------------------------------------------- folding
    # Each fold returns what to emit: the chunk itself unless it says otherwise.

    def fold_source(self, chunk: Source) -> Source:
        """A ``source`` chunk: one more source of the run and of the step."""
        self.sources.append(chunk)
        self.step.sources.append(chunk)
        return chunk

    def fold_file(self, chunk: File) -> File:
        """A ``file`` chunk: one more file of the run and of the step."""
        self.files.append(chunk)
        self.step.files.append(chunk)
        return chunk

    def fold_object_result(self, chunk: ObjectResult) -> None:
        """The structured output (and whether it is the configured fallback value)."""
        self.object, self.has_object = chunk.object, True
        self.used_fallback_value = bool(chunk.metadata and chunk.metadata.get("fallback") is True)

    def fold_reasoning(
        self, chunk: ReasoningStart | ReasoningDelta | ReasoningEnd
    ) -> ReasoningStart | ReasoningDelta | ReasoningEnd:
        """A reasoning chunk: its block's text and provider metadata, for the run and the step."""
        payload = chunk.payload
        for details in (self.reasoning, self.step.reasoning):
            entry = details.get(payload.id)
            if entry is None:
                entry = details[payload.id] = ReasoningEntry(id=payload.id)
            if payload.provider_metadata is not None:
                entry.provider_metadata = payload.provider_metadata
            if type(chunk) is ReasoningDelta:
                entry.text.append(chunk.payload.text)
        return chunk

    def fold_tool_input_start(self, chunk: ToolCallInputStreamingStart) -> ToolCallInputStreamingStart:
        """A tool input stream begins: its deltas are collected until its end."""
        self.tool_inputs[chunk.payload.tool_call_id] = chunk
        self.tool_args[chunk.payload.tool_call_id] = []
        return chunk

    def fold_tool_delta(self, chunk: ToolCallDelta) -> ToolCallDelta:
        """The delta to emit: with the tool name of its input stream when the provider left it out."""
        payload = chunk.payload
        self.tool_args.setdefault(payload.tool_call_id, []).append(payload.args_text_delta)
        start = self.tool_inputs.get(payload.tool_call_id)
        if not payload.tool_name and start is not None:
            # Mastra back-fills the name by mutating the chunk; ours are immutable, so copy.
            replaced = msgspec.structs.replace(payload, tool_name=start.payload.tool_name)
            return msgspec.structs.replace(chunk, payload=replaced)
        return chunk

    def fold_tool_input_end(self, chunk: ToolCallInputStreamingEnd) -> ToolCall | None:
        """The synthetic ``tool-call`` Mastra emits after a tool input stream (``None`` without one)."""
        call_id = chunk.payload.tool_call_id
        start_chunk = self.tool_inputs.get(call_id)
        if start_chunk is None:
            return None
        text = "".join(self.tool_args.get(call_id, ()))
        try:
            args = json.loads(text) if text else {}
        except ValueError:
            args = {}
        start = start_chunk.payload
        synthetic = ToolCall(
            run_id=chunk.run_id,
            from_=chunk.from_,
            payload=ToolCallPayload(
                tool_call_id=call_id,
                tool_name=start.tool_name,
                args=args,
                provider_executed=start.provider_executed,
                provider_metadata=start.provider_metadata,
                dynamic=start.dynamic,
                title=start.title,
                observability=start.observability,
            ),
        )
        self.synthetic_calls[call_id] = len(self.tool_calls)
        self.tool_calls.append(synthetic)
        self.step.tool_calls.append(synthetic)
        return synthetic

    def fold_tool_call(self, chunk: ToolCall) -> bool:
        """Whether to emit the call: not when it repeats one already emitted from its input stream."""
        payload = chunk.payload
        index = self.synthetic_calls.pop(payload.tool_call_id, None)
        if index is not None:
            # Fold what the provider's own tool-call adds into the recorded call; emit nothing.
            merged = _merge_call(self.tool_calls[index], payload)
            self.tool_calls[index] = merged
            self.step.tool_calls = [
                merged if c.payload.tool_call_id == payload.tool_call_id else c for c in self.step.tool_calls
            ]
            return False
        output = payload.output
        if isinstance(output, dict) and output.get("from") == "AGENT" and output.get("type") == "finish":
            self.usage = self.usage + Usage.from_wire((output.get("payload") or {}).get("usage"))
        self.tool_calls.append(chunk)
        self.step.tool_calls.append(chunk)
        return True

    def fold_tool_result(self, chunk: ToolResult) -> ToolResult:
        """A ``tool-result``: one more result of the run and of the step."""
        self.tool_results.append(chunk)
        self.step.tool_results.append(chunk)
        return chunk

    def fold_step_start(self, request: dict[str, Any]) -> None:
        """A step starts: its request is the latest."""
        self.request = request

    def fold_step_finish(self, chunk: StepFinish) -> StepResult:
        """The step's result (its buffers stay until `close_step`, after ``on_step_finish`` ran)."""
        payload = chunk.payload
        usage = Usage.from_wire(payload.output.get("usage"))
        self.usage = self.usage + usage
        warnings = payload.step_result.get("warnings") or []
        self.warnings = list(warnings)
        metadata = payload.metadata
        request = metadata.get("request")
        if isinstance(request, dict):
            self.request = request
        steps_meta = payload.output.get("steps") or []
        last_meta = steps_meta[-1] if steps_meta else None
        trip_data = last_meta.get("tripwire") if isinstance(last_meta, dict) else None
        tripwire = TripwireInfo.from_data(trip_data) if isinstance(trip_data, dict) else None
        if tripwire is not None:
            self.text.drop_step()
        response = {
            "id": payload.id or metadata.get("id") or "",
            "timestamp": metadata.get("timestamp"),
            "modelId": metadata.get("modelId") or metadata.get("model") or "",
            "messages": (payload.messages or {}).get("nonUser", []),
        }
        if metadata.get("headers") is not None:
            response["headers"] = metadata["headers"]
        self.response = response
        self.provider_metadata = payload.provider_metadata
        step = self.step
        text = "" if tripwire else self.step_text
        return StepResult(
            step_type="initial" if not self.steps else "tool-result",
            text=text,
            reasoning=self.reasoning_details(step=True),
            reasoning_text=self.reasoning_text(step=True) or "",
            sources=step.sources,
            files=step.files,
            tool_calls=step.tool_calls,
            tool_results=step.tool_results,
            finish_reason=payload.reason,
            usage=usage,
            warnings=list(warnings),
            request=request if isinstance(request, dict) else {},
            response=response,
            provider_metadata=payload.provider_metadata,
            tripwire=tripwire,
            content=_step_content(step, text),
        )

    def close_step(self, result: StepResult, log_length: int) -> bool:
        """Record the finished step; the next one starts at ``log_length``. Whether the run so far
        was forgotten now (a goal judge sent the run round again during this step)."""
        self.steps.append(result)
        self.step = StepBuffers()
        self.text.close_step(log_length)
        restart, self.truncate_at_step_finish = self.truncate_at_step_finish, False
        if restart:
            self.restart(log_length)
        return restart

    def fold_goal(self, chunk: Goal, log_length: int) -> bool:
        """Whether the goal judge sent the run round again (the run so far then starts over at
        ``log_length``, and the step in flight is dropped when it finishes)."""
        if chunk.payload.should_continue is not True:
            return False
        self.restart(log_length, at_step_finish=True)
        return True

    def restart(self, log_length: int, *, at_step_finish: bool = False) -> None:
        """Forget the run so far for replay and results (Mastra keeps usage, per-step state, object)."""
        self.text.restart(log_length)
        self.steps.clear()
        self.reasoning.clear()
        self.sources.clear()
        self.files.clear()
        self.tool_calls.clear()
        self.tool_results.clear()
        self.synthetic_calls.clear()
        self.truncate_at_step_finish = at_step_finish


def _merge_call(recorded: ToolCall, provider: ToolCallPayload) -> ToolCall:
    current = recorded.payload
    changes: dict[str, Any] = {}
    if not current.args and provider.args is not msgspec.UNSET:
        changes["args"] = provider.args
    if current.provider_metadata is None and provider.provider_metadata is not None:
        changes["provider_metadata"] = provider.provider_metadata
    if current.dynamic is None and provider.dynamic is not None:
        changes["dynamic"] = provider.dynamic
    if current.observability is None and provider.observability is not None:
        changes["observability"] = provider.observability
    if not changes:
        return recorded
    return msgspec.structs.replace(recorded, payload=msgspec.structs.replace(current, **changes))


def _step_content(step: StepBuffers, text: str) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = [
        {"type": "reasoning", "text": "".join(entry.text)} for entry in step.reasoning.values()
    ]
    if text:
        content.append({"type": "text", "text": text})
    for call in step.tool_calls:
        args = call.payload.args
        content.append(
            {
                "type": "tool-call",
                "toolCallId": call.payload.tool_call_id,
                "toolName": call.payload.tool_name,
                "input": args if args is not msgspec.UNSET else None,
            }
        )
    for result in step.tool_results:
        content.append(
            {
                "type": "tool-result",
                "toolCallId": result.payload.tool_call_id,
                "toolName": result.payload.tool_name,
                "output": result.payload.result,
            }
        )
    return content


# -------------------------------------------------------------------- the JSON form


def _state_enc_hook(value: Any) -> Any:
    if isinstance(value, LogText):
        return {"text": value.before_step(), "stepText": value.step()}
    if isinstance(value, Usage):
        return value.to_wire()
    return to_jsonable(value)


def _state_dec_hook(cls: type, value: Any) -> Any:
    if cls is LogText and isinstance(value, Mapping):
        return LogText(prior=str(value.get("text", "")), prior_step=str(value.get("stepText", "")))
    if cls is Usage and isinstance(value, Mapping):
        return Usage.from_wire(value)
    raise NotImplementedError(f"restore_state: cannot decode a {cls.__name__} from {type(value).__name__}")


def encode_state(accumulator: RunAccumulator) -> dict[str, Any]:
    """The accumulator as JSON data (Mastra's ``serializeState``); the text is written out in full."""
    data: dict[str, Any] = msgspec.to_builtins(accumulator, enc_hook=_state_enc_hook)
    return data


def decode_state(data: Mapping[str, Any]) -> RunAccumulator:
    """The accumulator `encode_state` wrote, to continue a run in a later leg (with a new, empty log).

    A state written before the accumulator existed (``text`` a string, camelCase keys) is read too,
    so that a run suspended before an upgrade resumes after it."""
    if isinstance(data.get("text"), str):
        data = _from_legacy(data)
    try:
        return msgspec.convert(data, RunAccumulator, dec_hook=_state_dec_hook)
    except msgspec.ValidationError as exc:
        raise ValueError(f"restore_state: not a state written by serialize_state(): {exc}") from None


def _from_legacy(state: Mapping[str, Any]) -> dict[str, Any]:
    """The hand-written ``serialize_state`` format of agentstream <= 0.x, as `encode_state` writes it."""

    def reasoning(items: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            str(e["id"]): {
                "id": e["id"],
                "text": [e.get("text", "")],
                "provider_metadata": e.get("providerMetadata"),
            }
            for e in items
        }

    def buffers(part: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "reasoning": reasoning(part.get("reasoning") or []),
            "sources": part.get("sources") or [],
            "files": part.get("files") or [],
            "tool_calls": part.get("toolCalls") or [],
            "tool_results": part.get("toolResults") or [],
        }

    text, step_text = str(state.get("text", "")), str(state.get("stepText", ""))
    settled = text[: len(text) - len(step_text)] if step_text and text.endswith(step_text) else text
    run = buffers(state)
    return {
        **{k: v for k, v in run.items()},
        "steps": state.get("steps") or [],
        "text": {"text": settled, "stepText": step_text},
        "step": buffers(state.get("step") or {}),
        "warnings": state.get("warnings") or [],
        "request": state.get("request") or {},
        "response": state.get("response") or {},
        "usage": state.get("usage") or {},
        "provider_metadata": state.get("providerMetadata"),
        "was_suspended": bool(state.get("wasSuspended", True)),
    }
