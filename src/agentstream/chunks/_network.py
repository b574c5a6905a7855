"""Agent-network chunks (Mastra's ``NetworkChunkType``, all ``from: NETWORK``), spec §1.4.

Routing decisions and primitive executions carry many loosely typed values (results, usage,
arguments); those are JSON values here. Fields the spec names are typed; anything else rides in
``extra``.
"""

from __future__ import annotations

from typing import Any

from ._base import UNSET, BaseChunk, Payload

__all__ = [
    "AgentExecutionAbort",
    "AgentExecutionApproval",
    "AgentExecutionEnd",
    "AgentExecutionEndPayload",
    "AgentExecutionStart",
    "AgentExecutionStartPayload",
    "AgentExecutionSuspended",
    "ExecutionAbortPayload",
    "NetworkExecutionEventFinish",
    "NetworkExecutionEventFinishPayload",
    "NetworkExecutionEventStepFinish",
    "NetworkExecutionEventStepFinishPayload",
    "NetworkObject",
    "NetworkObjectResult",
    "NetworkPrimitivePayload",
    "NetworkValidationEnd",
    "NetworkValidationEndPayload",
    "NetworkValidationStart",
    "NetworkValidationStartPayload",
    "RoutingAgentAbort",
    "RoutingAgentEnd",
    "RoutingAgentEndPayload",
    "RoutingAgentStart",
    "RoutingAgentStartPayload",
    "RoutingAgentTextDelta",
    "RoutingAgentTextDeltaPayload",
    "RoutingAgentTextStart",
    "RoutingAgentTextStartPayload",
    "ToolExecutionAbort",
    "ToolExecutionApproval",
    "ToolExecutionEnd",
    "ToolExecutionEndPayload",
    "ToolExecutionStart",
    "ToolExecutionStartPayload",
    "ToolExecutionSuspended",
    "WorkflowExecutionAbort",
    "WorkflowExecutionEnd",
    "WorkflowExecutionEndPayload",
    "WorkflowExecutionStart",
    "WorkflowExecutionStartPayload",
    "WorkflowExecutionSuspended",
]


class RoutingAgentStartPayload(Payload, frozen=True):
    agent_id: str
    network_id: str
    run_id: str
    input_data: dict[str, Any]
    """``{task, primitiveId, primitiveType, result?, iteration, threadId?, ...}``"""


class RoutingAgentStart(BaseChunk, tag="routing-agent-start", frozen=True):
    payload: RoutingAgentStartPayload


class RoutingAgentTextDeltaPayload(Payload, frozen=True):
    text: str


class RoutingAgentTextDelta(BaseChunk, tag="routing-agent-text-delta", frozen=True):
    payload: RoutingAgentTextDeltaPayload


class RoutingAgentTextStartPayload(Payload, frozen=True):
    run_id: str


class RoutingAgentTextStart(BaseChunk, tag="routing-agent-text-start", frozen=True):
    payload: RoutingAgentTextStartPayload


class RoutingAgentEndPayload(Payload, frozen=True):
    task: str
    primitive_id: str
    primitive_type: str
    prompt: str
    result: Any
    selection_reason: str
    iteration: int
    run_id: str
    usage: Any = UNSET
    is_complete: bool | None = None


class RoutingAgentEnd(BaseChunk, tag="routing-agent-end", frozen=True):
    payload: RoutingAgentEndPayload


class ExecutionAbortPayload(Payload, frozen=True):
    primitive_type: str
    primitive_id: str


class RoutingAgentAbort(BaseChunk, tag="routing-agent-abort", frozen=True):
    payload: ExecutionAbortPayload


class AgentExecutionStartPayload(Payload, frozen=True):
    agent_id: str
    args: dict[str, Any]
    run_id: str


class AgentExecutionStart(BaseChunk, tag="agent-execution-start", frozen=True):
    payload: AgentExecutionStartPayload


class NetworkPrimitivePayload(Payload, frozen=True):
    """Approval / suspension payloads of a primitive run inside a network (tool-call payload plus ids)."""

    tool_call_id: str | None = None
    tool_name: str | None = None
    args: Any = UNSET
    run_id: str | None = None
    selection_reason: str | None = None
    usage: Any = UNSET
    suspend_payload: Any = UNSET
    resume_schema: str | None = None


class AgentExecutionApproval(BaseChunk, tag="agent-execution-approval", frozen=True):
    payload: NetworkPrimitivePayload


class AgentExecutionSuspended(BaseChunk, tag="agent-execution-suspended", frozen=True):
    payload: NetworkPrimitivePayload


class AgentExecutionEndPayload(Payload, frozen=True):
    task: str
    agent_id: str
    result: Any
    is_complete: bool
    iteration: int
    run_id: str
    usage: Any = UNSET


class AgentExecutionEnd(BaseChunk, tag="agent-execution-end", frozen=True):
    payload: AgentExecutionEndPayload


class AgentExecutionAbort(BaseChunk, tag="agent-execution-abort", frozen=True):
    payload: ExecutionAbortPayload


class WorkflowExecutionStartPayload(Payload, frozen=True):
    name: str
    workflow_id: str
    args: dict[str, Any]
    run_id: str


class WorkflowExecutionStart(BaseChunk, tag="workflow-execution-start", frozen=True):
    payload: WorkflowExecutionStartPayload


class WorkflowExecutionEndPayload(Payload, frozen=True):
    name: str
    workflow_id: str
    task: str
    primitive_id: str
    primitive_type: str
    result: Any
    is_complete: bool
    iteration: int
    run_id: str
    usage: Any = UNSET


class WorkflowExecutionEnd(BaseChunk, tag="workflow-execution-end", frozen=True):
    payload: WorkflowExecutionEndPayload


class WorkflowExecutionSuspended(BaseChunk, tag="workflow-execution-suspended", frozen=True):
    payload: NetworkPrimitivePayload


class WorkflowExecutionAbort(BaseChunk, tag="workflow-execution-abort", frozen=True):
    payload: ExecutionAbortPayload


class ToolExecutionStartPayload(Payload, frozen=True):
    args: dict[str, Any]
    """``{toolName?, toolCallId?, args?, selectionReason?, ...}``"""
    run_id: str


class ToolExecutionStart(BaseChunk, tag="tool-execution-start", frozen=True):
    payload: ToolExecutionStartPayload


class ToolExecutionEndPayload(Payload, frozen=True):
    task: str
    primitive_id: str
    primitive_type: str
    result: Any
    is_complete: bool
    iteration: int
    tool_call_id: str
    tool_name: str


class ToolExecutionEnd(BaseChunk, tag="tool-execution-end", frozen=True):
    payload: ToolExecutionEndPayload


class ToolExecutionApproval(BaseChunk, tag="tool-execution-approval", frozen=True):
    payload: NetworkPrimitivePayload


class ToolExecutionSuspended(BaseChunk, tag="tool-execution-suspended", frozen=True):
    payload: NetworkPrimitivePayload


class ToolExecutionAbort(BaseChunk, tag="tool-execution-abort", frozen=True):
    payload: ExecutionAbortPayload


class NetworkExecutionEventStepFinishPayload(Payload, frozen=True):
    task: str
    result: Any
    is_complete: bool
    iteration: int
    run_id: str


class NetworkExecutionEventStepFinish(BaseChunk, tag="network-execution-event-step-finish", frozen=True):
    payload: NetworkExecutionEventStepFinishPayload


class NetworkExecutionEventFinishPayload(Payload, frozen=True):
    task: str
    primitive_id: str
    primitive_type: str
    prompt: str
    result: Any
    completion_reason: str
    iteration: int
    is_one_off: bool
    usage: Any = UNSET
    object: Any = UNSET
    is_complete: bool | None = None
    thread_id: str | None = None
    thread_resource_id: str | None = None


class NetworkExecutionEventFinish(BaseChunk, tag="network-execution-event-finish", frozen=True):
    payload: NetworkExecutionEventFinishPayload


class NetworkValidationStartPayload(Payload, frozen=True):
    run_id: str
    iteration: int
    checks_count: int


class NetworkValidationStart(BaseChunk, tag="network-validation-start", frozen=True):
    payload: NetworkValidationStartPayload


class NetworkValidationEndPayload(Payload, frozen=True):
    run_id: str
    iteration: int
    passed: bool
    results: list[Any]
    duration: float
    timed_out: bool
    max_iteration_reached: bool
    suppress_feedback: bool
    reason: str | None = None


class NetworkValidationEnd(BaseChunk, tag="network-validation-end", frozen=True):
    payload: NetworkValidationEndPayload


class NetworkObject(BaseChunk, tag="network-object", frozen=True):
    """Network structured output, partial; carried in ``payload.object`` per the spec's shape."""

    payload: dict[str, Any]


class NetworkObjectResult(BaseChunk, tag="network-object-result", frozen=True):
    payload: dict[str, Any]
