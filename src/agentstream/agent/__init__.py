"""Agents: ``Agent.stream()`` / ``generate()``, the step loop, structured output, continuation rules."""

from __future__ import annotations

from ._agent import Agent, has_tool_call, step_count_is
from ._loop import (
    AgentStreamError,
    LoopHooks,
    PendingToolCall,
    RunConfig,
    StepInfo,
    ToolNotFoundError,
    run_loop,
)
from ._structured import StructuredOutputConfig, StructuredOutputError


def _register_demo() -> None:
    from ..models import register_model_factory
    from ..models._demo import DemoModel

    register_model_factory("demo", lambda model_id="demo", **kw: DemoModel(model_id=model_id or "demo", **kw))


_register_demo()

__all__ = [
    "Agent",
    "AgentStreamError",
    "LoopHooks",
    "PendingToolCall",
    "RunConfig",
    "StepInfo",
    "StructuredOutputConfig",
    "StructuredOutputError",
    "ToolNotFoundError",
    "has_tool_call",
    "run_loop",
    "step_count_is",
]
