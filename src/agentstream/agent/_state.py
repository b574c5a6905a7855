"""Per-step state: what one model call produced, as the part handlers and the loop fill it in."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from ..chunks import UNSET, Chunk
from ..models import StreamPart, ToolInputStartPart
from ..stream import RunAccumulator
from ._hooks import PendingToolCall
from ._structured import StructuredOutputState

__all__ = ["StepState", "model_output"]


def model_output(result: Any) -> dict[str, Any]:
    """A tool result as a prompt ``tool-result`` part's ``output``."""
    if isinstance(result, str):
        return {"type": "text", "value": result}
    return {"type": "json", "value": result}


def _result_part(call: PendingToolCall, failed: bool, value: Any) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "tool-result", "toolCallId": call.call_id, "toolName": call.name}
    if failed:
        part["output"] = {"type": "error-text", "value": str(value)}
    elif call.model_output is not None:
        part["output"] = call.model_output
        part["providerOptions"] = {"mastra": {"modelOutput": call.model_output}}
    else:
        part["output"] = model_output(value)
    part["input"] = call.history_args
    return part


@dataclass(eq=False, slots=True)
class StepState:
    """One step: the provider's parts as converted so far, its finish, its error, its tool calls."""

    run_id: str
    number: int
    created_at: int
    results: Callable[[], RunAccumulator]
    """The run's fold of the chunks streamed so far (`RunConfig.results`): the step's text is read there."""
    so: StructuredOutputState | None = None
    stream: AsyncIterator[StreamPart] | None = None
    first: StreamPart | None = None
    """The model's first part, when it was not ``stream-start`` (read while opening the call)."""
    request: dict[str, Any] = field(default_factory=dict)
    warnings: list[Any] = field(default_factory=list)
    response: dict[str, Any] = field(default_factory=dict)
    finish_reason: str | None = None
    raw_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    provider_metadata: Any = None
    error: Any = UNSET
    """The step's error (``UNSET``: none); set by an ``error`` part, a throw or a synthetic error."""
    aborted: bool = False
    timed_out: BaseException | None = None
    has_content: bool = False
    route: int = 0
    """How the loop treats the chunk the last handler returned (``_parts.STANDARD`` unless set)."""
    pending: bool = False
    """``early`` or ``notify`` holds something (checked once per part instead of both lists)."""
    fatal: bool = False
    """An ``error`` part ended the step's stream."""
    tripwire: Any = None
    """The `Tripwire` a processor raised in this step (``None``: none)."""
    text_closed: set[str] = field(default_factory=set)
    """Text part ids whose ``text-end`` went through async output processing."""
    content: list[dict[str, Any]] = field(default_factory=list)
    """The assistant message's parts in stream order (text / reasoning parts filled in at the end)."""
    text_part: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The assistant content's text part per text part id (its text is read from the output's
    fold when the content is built: `assistant_content`)."""
    reasoning_acc: dict[str, list[str]] = field(default_factory=dict)
    reasoning_part: dict[str, dict[str, Any]] = field(default_factory=dict)
    calls: list[PendingToolCall] = field(default_factory=list)
    streamed: dict[str, list[str]] = field(default_factory=dict)
    """Streamed tool-input JSON per call id."""
    stream_meta: dict[str, ToolInputStartPart] = field(default_factory=dict)
    """The ``tool-input-start`` part per call id."""
    early: list[Chunk] = field(default_factory=list)
    """Chunks a handler wants streamed before its own (structured-output objects, their errors)."""
    notify: list[Chunk] = field(default_factory=list)
    """Chunks a handler wants ``on_chunk`` to see before its own (the synthetic streamed tool-call)."""
    frozen: tuple[str, dict[str, str]] | None = None
    """The step's text, and its text by part, as the fold held them when the step was recorded
    (`freeze`): read later, the fold would give a later step's."""
    resumed: dict[str, Any] | None = None
    """A step restored from a suspended run (``ResumePoint.step``): no model call, its tools go on."""

    @property
    def text(self) -> str:
        """The text this step streamed (after output processing), as the run's output folded it."""
        if self.frozen is not None:
            return self.frozen[0]
        return self.results().step_text

    def freeze(self) -> None:
        """Keep the step's text as it is now: the step is recorded, the fold moves on to the next."""
        if self.frozen is None:
            acc = self.results()
            self.frozen = (acc.step_text, acc.step_text_parts())

    @property
    def ended(self) -> bool:
        """The step was cut short (abort, timeout or error) before its parts ran out."""
        return self.aborted or self.timed_out is not None or self.error is not UNSET

    def client_calls(self) -> list[PendingToolCall]:
        return [c for c in self.calls if not c.provider_executed]

    def text_entry(self, tid: str, provider_options: Any) -> None:
        """A text part starts: its place in the assistant content."""
        self.text_part[tid] = part = {"type": "text", "text": "", "providerOptions": provider_options}
        self.content.append(part)

    def reasoning_entry(self, rid: str, provider_options: Any) -> list[str]:
        acc = self.reasoning_acc[rid] = []
        self.reasoning_part[rid] = part = {
            "type": "reasoning",
            "text": "",
            "providerOptions": provider_options,
        }
        self.content.append(part)
        return acc

    def assistant_content(self) -> list[dict[str, Any]]:
        """The step's assistant message content for the next model call's prompt."""
        if self.resumed is not None:
            return list(self.resumed["content"])
        by_obj: dict[int, str] = {id(p): k for k, p in self.text_part.items()}
        by_reasoning: dict[int, str] = {id(p): k for k, p in self.reasoning_part.items()}
        texts = self.frozen[1] if self.frozen is not None else self.results().step_text_parts()
        out: list[dict[str, Any]] = []
        for part in self.content:
            kind = part["type"]
            if kind == "text" or kind == "reasoning":
                if kind == "text":
                    text = texts.get(by_obj.get(id(part)) or "", "")
                else:
                    text = "".join(self.reasoning_acc.get(by_reasoning.get(id(part)) or "", []))
                if not text and (kind == "text" or part.get("providerOptions") is None):
                    continue
                options = dict(part.get("providerOptions") or {})
                options["mastra"] = {"createdAt": self.created_at}
                out.append({"type": kind, "text": text, "providerOptions": options})
            else:
                out.append(part)
        return out

    def history(self, results: list[tuple[PendingToolCall, bool, Any]]) -> list[dict[str, Any]]:
        """The messages this step adds to the prompt: the assistant's, then the tool results."""
        new_messages: list[dict[str, Any]] = []
        assistant = self.assistant_content()
        projected = {c.call_id: c.model_output for c, f, _ in results if not f and c.model_output is not None}
        if projected:
            # A tool's ``to_model_output`` rides on both parts of its call, as Mastra records them.
            assistant = [
                {
                    **p,
                    "providerOptions": {
                        **(p.get("providerOptions") or {}),  # a provider's own (Gemini's thought signature)
                        "mastra": {"modelOutput": projected[p["toolCallId"]]},
                    },
                }
                if p.get("type") == "tool-call" and p.get("toolCallId") in projected
                else p
                for p in assistant
            ]
        if assistant:
            new_messages.append({"role": "assistant", "content": assistant})
        if results:
            new_messages.append({"role": "tool", "content": [_result_part(c, f, v) for c, f, v in results]})
        return new_messages
