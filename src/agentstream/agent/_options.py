"""The typed options of ``Agent.stream()`` / ``generate()`` (Mastra's ``AgentExecutionOptions`` in snake_case).

``**options: Unpack[StreamOptions]``: editors complete the names and mypy checks the values; at
run time unknown names still raise ``TypeError`` listing the known ones (`check_options`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, TypedDict

from .._abort import AbortSignal
from .._request_context import RequestContext
from ..chunks import Chunk
from ..stream import AbortEvent, ErrorEvent, FinishEvent, StepResult, TransformFactory
from ..tools import ToolErrorMask
from ._hooks import StopCondition
from ._processors import Processor
from ._settings import ModelSettings
from ._structured import StructuredOutputConfig
from ._task_complete import IsTaskCompleteConfig

__all__ = ["ResumeOptions", "StreamOptions", "TurnOptions", "UntilIdleOptions", "check_options"]


class UntilIdleOptions(TypedDict, total=False):
    """``until_idle={"max_idle_ms": n}``: close after ``n`` ms without news between turns."""

    max_idle_ms: float


class MemoryThread(TypedDict, total=False):
    id: str
    title: str
    metadata: dict[str, Any]


class MemoryOptions(TypedDict, total=False):
    """``memory={"thread": id | {...}, "resource": id}``."""

    thread: str | MemoryThread
    resource: str


class ResumeOptions(TypedDict, total=False):
    """The options of a leg that resumes a suspended run (`Agent.approve_tool_call`,
    ``decline_tool_call``, ``resume_stream``): a turn's options without ``run_id``, instructions,
    processors and completion checks (the run's own JSON options are kept with it; callbacks and
    callables are given per leg). `TurnOptions` adds the rest."""

    max_steps: int
    stop_when: StopCondition | Sequence[StopCondition]
    on_chunk: Callable[[Chunk], Awaitable[None] | None]
    on_step_finish: Callable[[StepResult], Awaitable[None] | None]
    on_finish: Callable[[FinishEvent], Awaitable[None] | None]
    on_error: Callable[[ErrorEvent], Awaitable[None] | None]
    on_abort: Callable[[AbortEvent], Awaitable[None] | None]
    on_tool_error: ToolErrorMask
    """What the client and the model see of a tool's exception (secrets are redacted either way)."""
    abort_signal: AbortSignal
    structured_output: StructuredOutputConfig | Mapping[str, Any] | type[Any]
    """A pydantic model class, ``{"schema": <JSON Schema or model>, ...}`` or a config."""
    experimental_transform: TransformFactory | Sequence[TransformFactory]
    include_raw_chunks: bool
    tool_choice: Literal["auto", "none", "required"] | str | Mapping[str, Any]
    active_tools: list[str]
    model_settings: ModelSettings
    tool_call_concurrency: int | Mapping[str, int]
    clock: Callable[[], float]
    """``() -> milliseconds`` for timestamps (inject a fake clock's ``now_ms`` in tests)."""
    sleep: Callable[[float], Awaitable[None]]
    """How the run waits (timeouts, the rate-limit pause); inject a fake clock's ``sleep`` in tests."""
    memory: MemoryOptions
    request_context: RequestContext | Mapping[str, Any]
    """Mastra's ``requestContext``: what this request knows of its caller, for the agent's dynamic
    fields and its tools (``context.request_context``)."""
    require_tool_approval: bool | Callable[[str, Any], bool | Awaitable[bool]]
    """``True``: every tool call waits for approval; a callable ``(tool_name, args) -> bool`` (may
    be async) decides per call. The run ends suspended on ``tool-call-approval``."""


class TurnOptions(ResumeOptions, total=False):
    """The options of one turn (``generate()`` takes exactly these)."""

    run_id: str
    instructions: str
    """This run's instructions in place of the agent's own (Mastra's ``instructions`` option)."""
    input_processors: Sequence[Processor]
    """Replace the agent's input processors for this call."""
    output_processors: Sequence[Processor]
    """Replace the agent's output processors for this call."""
    error_processors: Sequence[Processor]
    """Replace the agent's error processors for this call."""
    max_processor_retries: int | None
    """Processor retries allowed (``None``: none for input/output; 3 for API errors with error processors)."""
    is_task_complete: IsTaskCompleteConfig | Mapping[str, Any]
    """``{"scorers": [...], "strategy": "all" | "any", ...}``: keep going until the scorers pass."""
    prepare_step: Callable[..., Any]
    """Called before every model call with the step (``step_number``, ``steps``, ``messages``,
    ``system_messages``, ``model``, ``tools``, ``tool_choice``, ``active_tools``,
    ``request_context``): return ``None`` or ``{"model"?, "tools"?, "active_tools"?,
    "tool_choice"?, "messages"?, "system_messages"?, "provider_options"?}`` for that call only
    (Mastra's ``prepareStep``)."""
    auto_resume_suspended_tools: bool
    """With ``memory``: a new user message in a thread whose run is suspended answers the pending
    approval or suspension (resume data generated from the conversation) instead of starting over."""


class StreamOptions(TurnOptions, total=False):
    """`TurnOptions` plus ``until_idle``."""

    until_idle: bool | UntilIdleOptions


KNOWN_OPTIONS = frozenset(StreamOptions.__optional_keys__ | StreamOptions.__required_keys__)
RESUME_OPTIONS = frozenset(ResumeOptions.__optional_keys__)


def check_options(options: Mapping[str, Any], known: frozenset[str] = KNOWN_OPTIONS) -> None:
    """Raise ``TypeError`` naming unknown option names and the known ones."""
    unknown = set(options) - known
    if unknown:
        raise TypeError(
            f"unknown agent option(s): {', '.join(sorted(unknown))} (known: {', '.join(sorted(known))})"
        )
