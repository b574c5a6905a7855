"""Agents: ``Agent.stream()`` / ``generate()``, the step loop, structured output, continuation rules."""

from __future__ import annotations

from ._agent import Agent, has_tool_call, step_count_is
from ._hooks import LoopHooks, PendingToolCall, StepInfo, StopCondition
from ._loop import AgentStreamError
from ._settings import ModelSettings, TimeoutSettings
from ._structured import StructuredOutputConfig, StructuredOutputError
from ._tool_runner import ToolNotFoundError


def _register_demo() -> None:
    from ..models import register_model_factory
    from ..models._demo import DemoModel

    register_model_factory("demo", lambda model_id="demo", **kw: DemoModel(model_id=model_id or "demo", **kw))


_register_demo()

__all__ = [
    "Agent",
    "AgentStreamError",
    "LoopHooks",
    "ModelSettings",
    "PendingToolCall",
    "StepInfo",
    "StopCondition",
    "StructuredOutputConfig",
    "StructuredOutputError",
    "TimeoutSettings",
    "ToolNotFoundError",
    "has_tool_call",
    "step_count_is",
]
