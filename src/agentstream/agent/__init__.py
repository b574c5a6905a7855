"""Agents: ``Agent.stream()`` / ``generate()``, the step loop, structured output, continuation rules."""

from __future__ import annotations

from ._agent import Agent, has_tool_call, step_count_is
from ._checkpoints import CheckpointSeam, RunCheckpoint, set_checkpoint_seam
from ._delegation import SubAgentError, WorkflowToolError, usage_with_sub_runs
from ._goal import DEFAULT_GOAL_MAX_RUNS, GoalConfig
from ._goal_judge import DEFAULT_GOAL_JUDGE_PROMPT, GoalScoreContext, GoalScorer
from ._goal_record import GoalObjective
from ._hooks import (
    BackgroundSeam,
    ChainedHooks,
    LoopHooks,
    PendingToolCall,
    RunSetup,
    StepDecision,
    StepInfo,
    StopCondition,
)
from ._loop import AgentStreamError
from ._messages import MessageInput
from ._options import StreamOptions, TurnOptions, UntilIdleOptions
from ._processors import Processor, ProcessorHooks, ProcessorWriter
from ._settings import ModelSettings, TimeoutSettings
from ._structured import StructuredOutputConfig, StructuredOutputError
from ._suspension import APPROVAL_RESUME_SCHEMA, SNAPSHOT_WORKFLOW, ApprovalPolicy, ResumeError
from ._task_complete import CompletionContext, CompletionScorer, IsTaskCompleteConfig
from ._tool_runner import ToolNotFoundError
from ._tripwire import Tripwire

__all__ = [
    "APPROVAL_RESUME_SCHEMA",
    "DEFAULT_GOAL_JUDGE_PROMPT",
    "DEFAULT_GOAL_MAX_RUNS",
    "SNAPSHOT_WORKFLOW",
    "Agent",
    "AgentStreamError",
    "ApprovalPolicy",
    "BackgroundSeam",
    "ChainedHooks",
    "CheckpointSeam",
    "CompletionContext",
    "CompletionScorer",
    "GoalConfig",
    "GoalObjective",
    "GoalScoreContext",
    "GoalScorer",
    "IsTaskCompleteConfig",
    "LoopHooks",
    "MessageInput",
    "ModelSettings",
    "PendingToolCall",
    "Processor",
    "ProcessorHooks",
    "ProcessorWriter",
    "ResumeError",
    "RunCheckpoint",
    "RunSetup",
    "StepDecision",
    "StepInfo",
    "StopCondition",
    "StreamOptions",
    "StructuredOutputConfig",
    "StructuredOutputError",
    "SubAgentError",
    "TimeoutSettings",
    "ToolNotFoundError",
    "Tripwire",
    "TurnOptions",
    "UntilIdleOptions",
    "WorkflowToolError",
    "has_tool_call",
    "set_checkpoint_seam",
    "step_count_is",
    "usage_with_sub_runs",
]
