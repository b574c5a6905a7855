"""``Agent``: ``stream()`` returns a :class:`~agentstream.stream.ModelOutput` over the agent loop."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .._abort import AbortController, AbortSignal
from ..models._base import LanguageModel
from ..stream import FullOutput, ModelOutput
from ..tools import Tool
from ._loop import LoopHooks, RunConfig, StopCondition, run_loop
from ._messages import MessageInput, to_prompt
from ._structured import StructuredOutputConfig

__all__ = ["Agent", "has_tool_call", "step_count_is"]

_OPTIONS = frozenset(
    {
        "max_steps",
        "stop_when",
        "on_chunk",
        "on_step_finish",
        "on_finish",
        "on_error",
        "on_abort",
        "abort_signal",
        "structured_output",
        "experimental_transform",
        "include_raw_chunks",
        "tool_choice",
        "active_tools",
        "model_settings",
        "tool_call_concurrency",
        "run_id",
        "clock",
    }
)


def step_count_is(n: int) -> StopCondition:
    """Stop once ``n`` steps ran (``stepCountIs``)."""
    return lambda steps: len(steps) >= n


def has_tool_call(name: str) -> StopCondition:
    """Stop after a step in which the model called tool ``name`` (``hasToolCall``)."""
    return lambda steps: bool(steps) and any(c["toolName"] == name for c in steps[-1].tool_calls)


def _now_ms() -> float:
    return time.time() * 1000.0


class Agent:
    """An agent: a model, instructions and tools, run step by step (Mastra's ``Agent``).

    ``model`` is a :class:`~agentstream.models.LanguageModel` or a router string (``"openai/gpt-4o-mini"``,
    ``"demo"``). ``tools`` is a list of :class:`~agentstream.tools.Tool` or a ``{id: Tool}`` mapping.
    ``default_options`` are merged under the options of every ``stream()`` call.
    """

    def __init__(
        self,
        *,
        id: str,
        name: str | None = None,
        instructions: str = "",
        model: LanguageModel | str,
        tools: Iterable[Tool] | Mapping[str, Tool] | None = None,
        default_options: Mapping[str, Any] | None = None,
        hooks: LoopHooks | None = None,
    ) -> None:
        if not id:
            raise ValueError("an agent needs a non-empty id")
        self.id = id
        self.name = name or id
        self.instructions = instructions
        self._model_spec = model
        self._model: LanguageModel | None = None if isinstance(model, str) else model
        if tools is None:
            self.tools: dict[str, Tool] = {}
        elif isinstance(tools, Mapping):
            self.tools = dict(tools)
        else:
            self.tools = {}
            for t in tools:
                if not isinstance(t, Tool):
                    raise TypeError(
                        f"agent {id!r}: tools must be Tool objects (use @tool), got {type(t).__name__}"
                    )
                self.tools[t.id] = t
        self.default_options = dict(default_options or {})
        _check_options(self.default_options)
        self.hooks = hooks or LoopHooks()

    @property
    def model(self) -> LanguageModel:
        if self._model is None:
            from .. import models

            self._model = models.resolve_model(self._model_spec)
        return self._model

    def stream(self, messages: MessageInput, **options: Any) -> ModelOutput:
        """Start a run (lazily: it begins when the output is first read or awaited)."""
        _check_options(options)
        opts = {**self.default_options, **options}
        now_ms: Callable[[], float] = opts.get("clock") or _now_ms
        run_id = str(opts.get("run_id") or uuid.uuid4())
        message_id = str(uuid.uuid4())
        prompt: list[dict[str, Any]] = []
        if self.instructions:
            prompt.append({"role": "system", "content": self.instructions})
        prompt.extend(to_prompt(messages, created_at=int(now_ms())))

        cancel = AbortController()
        user_signal: AbortSignal | None = opts.get("abort_signal")
        signal = AbortSignal.any([user_signal, cancel.signal]) if user_signal is not None else cancel.signal

        stop_when = opts.get("stop_when")
        conditions: list[StopCondition] = (
            [] if stop_when is None else list(stop_when) if isinstance(stop_when, Sequence) else [stop_when]
        )
        max_steps = opts.get("max_steps")
        structured = opts.get("structured_output")
        so = StructuredOutputConfig.from_option(structured) if structured is not None else None
        concurrency = opts.get("tool_call_concurrency", 10)
        if isinstance(concurrency, Mapping):
            concurrency = concurrency.get("limit", 10)
        config = RunConfig(
            agent_id=self.id,
            run_id=run_id,
            message_id=message_id,
            model=self.model,
            prompt=prompt,
            tools=self.tools,
            signal=signal,
            now_ms=now_ms,
            max_steps=int(max_steps) if max_steps is not None else (5 if not conditions else 10**9),
            stop_when=conditions,
            on_chunk=opts.get("on_chunk"),
            include_raw_chunks=bool(opts.get("include_raw_chunks", False)),
            structured_output=so,
            tool_choice=opts.get("tool_choice"),
            active_tools=opts.get("active_tools"),
            model_settings=dict(opts.get("model_settings") or {}),
            tool_call_concurrency=int(concurrency),
            hooks=self.hooks,
        )
        return ModelOutput(
            run_loop(config),
            run_id=run_id,
            message_id=message_id,
            include_raw_chunks=config.include_raw_chunks,
            on_step_finish=opts.get("on_step_finish"),
            on_finish=opts.get("on_finish"),
            on_error=opts.get("on_error"),
            on_abort=opts.get("on_abort"),
            experimental_transform=opts.get("experimental_transform"),
            has_structured_output=so is not None,
            on_cancel=cancel.abort,
        )

    async def generate(self, messages: MessageInput, **options: Any) -> FullOutput:
        """Run to the end and return every result at once (raises the run's error if it failed)."""
        return await self.stream(messages, **options).get_full_output()

    def __repr__(self) -> str:
        return f"Agent(id={self.id!r}, model={self._model_spec!r}, tools={list(self.tools)})"


def _check_options(options: Mapping[str, Any]) -> None:
    unknown = set(options) - _OPTIONS
    if unknown:
        raise TypeError(
            f"unknown agent option(s): {', '.join(sorted(unknown))} (known: {', '.join(sorted(_OPTIONS))})"
        )
