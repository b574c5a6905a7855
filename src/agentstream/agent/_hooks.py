"""The loop's seams: what it tells the code plugged into it, and where it calls that code.

One `LoopHooks` object per run; every method has a no-op default, so an override implements
only what it needs and chains to an inner hooks object for the rest (as the background package's
``BackgroundHooks`` does). The order within a run, and who is meant to plug in where:

==========================  ===================================================================
``process_input``           once, before the first model call: the prompt (input processors)
``start_of_run``            once, after ``process_input``: chunks to stream before the first step
``prepare_step``            before every model call: that call's options (per-step processors,
                            ``prepareStep``, the LLM-request phase)
``step_tools``              once a step's response is in: the tools its calls may run
                            (``prepareStep``'s per-step tools)
``process_chunk``           every chunk the loop streams (output-stream processors, tripwire)
``on_model_error``          a model call failed before producing anything: retry it? (error
                            processors)
``after_model``             after every model response, before its tools (output-step processors)
``execute_tool``            every client tool call that validated (tool approval / suspension,
                            background dispatch, tool-result processors)
``after_tools``             after a step's tools ran
``end_of_step``             before ``step-finish``: force continuing or stopping, stream chunks,
                            add messages to the next call (goals, is-task-complete)
``end_of_run``              before ``finish``: chunks to stream first (output-result processors)
==========================  ===================================================================

Background tasks plug in one level up, per run: a `BackgroundSeam` gives the run its tools,
instructions and (wrapping) hooks, and runs the until-idle stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..background import UntilIdleOutput
    from ..chunks import Chunk
    from ..models import CallOptions
    from ..stream import ModelOutput
    from ..tools import Tool, ToolContext
    from ._agent import Agent
    from ._messages import MessageInput

__all__ = [
    "SEAMS",
    "BackgroundSeam",
    "ChainedHooks",
    "Layer",
    "LoopHooks",
    "LoopSeams",
    "PendingToolCall",
    "RunSetup",
    "StepDecision",
    "StepInfo",
    "StopCondition",
    "compose_hooks",
]


@dataclass
class StepInfo:
    """What ``stop_when`` conditions and hooks see about one finished step."""

    number: int
    text: str
    finish_reason: str
    is_continued: bool
    tool_calls: list[dict[str, Any]]
    tool_results: list[dict[str, Any]]
    usage: dict[str, Any]
    errored: bool = False


@dataclass
class PendingToolCall:
    """One client-side tool call of a step, as the loop runs it."""

    call_id: str
    name: str
    exec_args: Any
    """The arguments the tool is run with (the streamed JSON, or the provider's repaired input)."""
    history_args: Any
    """The arguments recorded in the message history (the provider's ``tool-call`` input)."""
    provider_executed: bool | None
    args: Any = None
    """``exec_args`` validated against the tool's input schema (set just before the tool runs)."""
    model_output: Any = None
    """The tool's ``to_model_output`` projection of its result (``None``: the model sees the result)."""


StopCondition = Callable[[list[StepInfo]], bool | Awaitable[bool]]


@dataclass
class StepDecision:
    """What ``end_of_step`` decided about a step, beyond a plain ``True`` / ``False`` / ``None``.

    The loop first streams ``chunks`` (before ``step-finish``); an async iterable is read to its end,
    so a judge can stream its progress live and fill in ``continue_`` and ``messages`` as it goes.
    Only then are ``continue_`` (``True``/``False`` force continuing / stopping, ``None`` keeps the
    loop's decision) and ``messages`` (appended to the prompt of the next model call, after the
    step's own response) read.
    """

    continue_: bool | None = None
    chunks: Sequence[Chunk] | AsyncIterable[Chunk] = ()
    messages: list[dict[str, Any]] = field(default_factory=list)


class LoopHooks:
    """Where processors, goals, approvals and background tasks plug into a run (no-ops here).

    * ``process_input(messages)`` — the prompt before the first model call (system messages
      included); return it, or a replacement list.
    * ``prepare_step(step_number, options)`` — the ``CallOptions`` of one model call (``prompt``,
      ``tools``, ``tool_choice`` …); return them, or a replacement.
    * ``process_chunk(chunk)`` — per-chunk output processing; return the chunk, a replacement, or
      ``None`` to drop it. A plain attribute (``None``: no processing) so that the per-token path
      pays nothing when nobody processes. It may be a coroutine function (awaited only then), and
      may return a list: chunks to stream first, then the chunk (or ``None``).
    * ``step_tools(step_number, tools)`` — the tools the step's calls run with (after its model
      call); return them, or a replacement (a step's own tool set).
    * ``on_model_error(step, error)`` — a model call failed before streaming any content; return
      ``True`` to call the model again (same step), ``False`` to let the error end the step.
    * ``after_model(step)`` — after the model's response, before the step's tools run.
    * ``execute_tool(call, tool, context, default)`` — the tool-execution seam: called for every
      client tool call whose tool exists and whose input validated (``call.args``); the default
      awaits ``default()``, which runs the tool. An override may run it elsewhere instead (the
      background-task package dispatches eligible tools and returns a placeholder result), ask
      for approval first, or decline. What it returns is the tool's result; what it raises becomes
      a ``tool-error``. It may stream chunks into the run with ``context.writer.emit(chunk)`` (e.g.
      ``background-task-started``, which also reaches ``on_chunk``); they appear before the step's
      ``tool-result`` chunks.
    * ``after_tools(step, results)`` — after the step's tools ran; ``results`` are
      ``(call, failed, value)`` triples in call order.
    * ``start_of_run()`` — after ``process_input``, before the first step: chunks to stream.
    * ``end_of_step(step)`` — before ``step-finish``; return ``True``/``False`` to force continuing or
      stopping, ``None`` to keep the loop's decision, or a `StepDecision` (chunks to stream first,
      messages for the next call) (goals, is-task-complete).
    * ``end_of_run(steps)`` — after the last step, before ``finish``: chunks to stream first.

    Any hook may raise ``agentstream.agent.Tripwire``; the loop gives it the meaning of its phase
    (``run_loop``, spec §7.2).
    """

    process_chunk: Callable[[Chunk], Any] | None = None

    async def process_input(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The prompt before the first model call; return it or a replacement (input processors)."""
        return messages

    async def start_of_run(self) -> list[Chunk]:
        """After ``process_input``, before the first step: chunks to stream (a goal's state signal)."""
        return []

    async def prepare_step(self, step_number: int, options: CallOptions) -> CallOptions:
        """One model call's options (1-based ``step_number``); return them or a replacement."""
        return options

    async def step_tools(self, step_number: int, tools: dict[str, Tool]) -> dict[str, Tool]:
        """The tools step ``step_number``'s calls run with; return them or a replacement."""
        return tools

    async def on_model_error(self, step: StepInfo, error: Any) -> bool:
        """A model call failed before streaming content: ``True`` calls the model again."""
        return False

    async def after_model(self, step: StepInfo) -> None:
        """After the model's response, before the step's tools (output-step processors)."""
        return None

    async def execute_tool(
        self,
        call: PendingToolCall,
        tool: Tool,
        context: ToolContext,
        default: Callable[[], Awaitable[Any]],
    ) -> Any:
        """Run one validated tool call; the default awaits ``default()`` (the tool itself)."""
        return await default()

    async def after_tools(self, step: StepInfo, results: list[Any]) -> None:
        """After a step's tools ran: ``results`` are ``(call, failed, value)`` in call order."""
        return None

    async def end_of_step(self, step: StepInfo) -> bool | StepDecision | None:
        """Before ``step-finish``: ``True``/``False`` force continuing / stopping, ``None`` keeps it;
        a `StepDecision` also streams chunks and adds messages to the next call."""
        return None

    async def end_of_run(self, steps: list[StepInfo]) -> list[Chunk]:
        """After the last step of a run that was not aborted: chunks to stream before ``finish``."""
        return []


class LoopSeams(Protocol):
    """Every seam of the loop, declared once: what `ChainedHooks` forwards and `compose_hooks`
    chains. A seam added here is forwarded by every link of every chain without another line."""

    process_chunk: Callable[[Chunk], Any] | None

    async def process_input(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]: ...
    async def start_of_run(self) -> list[Chunk]: ...
    async def prepare_step(self, step_number: int, options: CallOptions) -> CallOptions: ...
    async def step_tools(self, step_number: int, tools: dict[str, Tool]) -> dict[str, Tool]: ...
    async def on_model_error(self, step: StepInfo, error: Any) -> bool: ...
    async def after_model(self, step: StepInfo) -> None: ...
    async def execute_tool(
        self, call: PendingToolCall, tool: Tool, context: ToolContext, default: Callable[[], Awaitable[Any]]
    ) -> Any: ...
    async def after_tools(self, step: StepInfo, results: list[Any]) -> None: ...
    async def end_of_step(self, step: StepInfo) -> bool | StepDecision | None: ...
    async def end_of_run(self, steps: list[StepInfo]) -> list[Chunk]: ...


SEAMS: tuple[str, ...] = (
    *LoopSeams.__annotations__,
    *(name for name, value in vars(LoopSeams).items() if not name.startswith("_") and callable(value)),
)
"""The names of the loop's seams, in `LoopSeams`' order."""


class ChainedHooks(LoopHooks):
    """One link of a run's hooks chain (a middleware): it wraps ``inner`` and overrides the seams
    its concern needs; every other seam of `LoopSeams` is ``inner``'s own (bound) method, set here
    once, so forwarding costs nothing per call and no seam can be left out. An override reaches
    the rest of the chain through ``self.inner``."""

    def __init__(self, inner: LoopHooks) -> None:
        self.inner = inner
        cls = type(self)
        for name in SEAMS:
            if name == "process_chunk" or getattr(cls, name) is getattr(ChainedHooks, name):
                setattr(self, name, getattr(inner, name))


def _forwarder(name: str) -> Callable[..., Awaitable[Any]]:
    async def forward(self: ChainedHooks, *args: Any) -> Any:
        return await getattr(self.inner, name)(*args)

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = f"``inner.{name}`` (what an override reaches with ``super().{name}(...)``)."
    return forward


# ``super().<seam>(...)`` in an override forwards too: one method per declared seam, made here
for _name in SEAMS:
    if _name != "process_chunk":
        setattr(ChainedHooks, _name, _forwarder(_name))


Layer = Callable[[LoopHooks], LoopHooks]
"""One concern of a run as a middleware: given the chain so far (inside it), the chain with the
concern around it (usually a `ChainedHooks`)."""


def compose_hooks(base: LoopHooks, layers: Sequence[tuple[str, Layer | None]]) -> LoopHooks:
    """The run's one chain: ``base`` (the agent's hooks) wrapped by each ``(name, layer)`` in order,
    innermost first; a ``None`` layer (a concern the run does not have) is left out."""
    hooks = base
    for _, layer in layers:
        if layer is not None:
            hooks = layer(hooks)
    return hooks


@dataclass
class RunSetup:
    """What one run of an agent uses instead of its own tools, instructions and hooks."""

    tools: dict[str, Tool]
    instructions: str
    hooks: LoopHooks


@runtime_checkable
class BackgroundSeam(Protocol):
    """What an agent needs from background tasks (implemented by ``agentstream.background``).

    The agent package owns this seam so that it never imports the background package (which sits
    above it and imports ``Agent``). A ``Mastra`` with background tasks gives each registered agent
    one (``agentstream.background.AgentBackground``).
    """

    @property
    def enabled(self) -> bool:
        """``False``: runs are plain (tools inline, no until-idle stream)."""
        ...

    def prepare_run(self, agent: Agent, *, thread_id: str | None, resource_id: str | None) -> RunSetup:
        """The tools, instructions and hooks of one run whose tasks belong to (thread, resource)."""
        ...

    def stream_until_idle(
        self, agent: Agent, messages: MessageInput, *, max_idle_ms: float | None, options: dict[str, Any]
    ) -> UntilIdleOutput | ModelOutput:
        """The until-idle stream: the first turn, the tasks' chunks and the continuation turns."""
        ...
