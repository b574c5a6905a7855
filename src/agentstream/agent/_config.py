"""`RunConfig`: what the loop runs with (made by `RunPlan.config`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from .._abort import AbortSignal
from .._request_context import RequestContext
from ..chunks import Chunk
from ..models import LanguageModel
from ..stream import RunAccumulator
from ..tools import Tool, ToolErrorMask
from ._hooks import LoopHooks, StopCondition
from ._settings import ModelSettings
from ._structured import StructuredOutputConfig
from ._suspension import ResumePoint
from ._tool_runner import ApprovalCheck
from ._tripwire import Tripwire

__all__ = ["RunConfig"]


@dataclass
class RunConfig:
    agent_id: str
    run_id: str
    message_id: str
    model: LanguageModel
    prompt: list[dict[str, Any]]
    tools: dict[str, Tool]
    signal: AbortSignal
    """Fires on user abort or when the output is cancelled: ends the run with an ``abort`` chunk."""
    now_ms: Callable[[], float]
    max_steps: int = 5
    stop_when: list[StopCondition] = field(default_factory=list)
    on_chunk: Callable[[Chunk], Any] | None = None
    include_raw_chunks: bool = False
    structured_output: StructuredOutputConfig | None = None
    tool_choice: Any = None
    active_tools: list[str] | None = None
    model_settings: ModelSettings = field(default_factory=lambda: ModelSettings())
    tool_call_concurrency: int = 10
    hooks: LoopHooks = field(default_factory=LoopHooks)
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    """How the run waits (timeouts, the rate-limit pause): inject a fake clock's in tests."""
    on_tool_error: ToolErrorMask | None = None
    """What the client and the model see of a tool's exception (see `tool_error`)."""
    approval: ApprovalCheck | None = None
    """Whether a validated tool call must wait for approval (``require_tool_approval``, the
    tool's ``require_approval``); ``None``: no call does."""
    resume: ResumePoint | None = None
    """Continue a suspended run from here instead of starting it (no ``start`` chunk)."""
    on_suspend: Callable[[dict[str, Any]], None] | None = None
    """Called with the loop's state (`ResumePoint.to_json` plus ``pending``) just before the
    suspension chunk is streamed; the agent stores it with the output's state."""
    finish_response: bool = False
    request_context: RequestContext = field(default_factory=RequestContext)
    """The run's `RequestContext`, handed to its tools (``context.request_context``)."""
    """Fill ``finish.payload.response`` (Mastra does once output processors ran on the result:
    the run's own, or memory's)."""
    results: Callable[[], RunAccumulator] | None = None
    """What the run's output has folded of the chunks so far (`ModelOutput.accumulator`): the loop
    reads the step's text there instead of keeping a copy. ``None``: no output reads this loop
    (a test driving `run_loop` itself), which then folds its own (`run_loop`)."""
    on_result_tripwire: Callable[[Tripwire], None] | None = None
    """Told when ``end_of_run`` (an output-result processor) raised `Tripwire`: no chunk shows it,
    the output's results do (text ``""``, finish reason ``other``, ``tripwire`` set)."""
