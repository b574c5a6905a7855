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
    """Payload of the `routing-agent-start` chunk (`RoutingAgentStart`): the network and agent ids and the
    routing input.
    """

    agent_id: str
    network_id: str
    run_id: str
    input_data: dict[str, Any]
    """``{task, primitiveId, primitiveType, result?, iteration, threadId?, ...}``"""


class RoutingAgentStart(BaseChunk, tag="routing-agent-start", frozen=True):
    """`routing-agent-start` chunk: a network's routing agent starts choosing the next primitive.

    Payload: `RoutingAgentStartPayload`.
    """

    payload: RoutingAgentStartPayload


class RoutingAgentTextDeltaPayload(Payload, frozen=True):
    """Payload of the `routing-agent-text-delta` chunk (`RoutingAgentTextDelta`): the new text."""

    text: str


class RoutingAgentTextDelta(BaseChunk, tag="routing-agent-text-delta", frozen=True):
    """`routing-agent-text-delta` chunk: text written by a network's routing agent.

    Payload: `RoutingAgentTextDeltaPayload`.
    """

    payload: RoutingAgentTextDeltaPayload


class RoutingAgentTextStartPayload(Payload, frozen=True):
    """Payload of the `routing-agent-text-start` chunk (`RoutingAgentTextStart`): the run id."""

    run_id: str


class RoutingAgentTextStart(BaseChunk, tag="routing-agent-text-start", frozen=True):
    """`routing-agent-text-start` chunk: a network's routing agent begins writing text.

    Payload: `RoutingAgentTextStartPayload`.
    """

    payload: RoutingAgentTextStartPayload


class RoutingAgentEndPayload(Payload, frozen=True):
    """Payload of the `routing-agent-end` chunk (`RoutingAgentEnd`): the task, the chosen primitive, the
    prompt for it and the selection reason.
    """

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
    """`routing-agent-end` chunk: a network's routing agent chose a primitive (agent, workflow or tool) and
    says why.

    Payload: `RoutingAgentEndPayload`.
    """

    payload: RoutingAgentEndPayload


class ExecutionAbortPayload(Payload, frozen=True):
    """Payload shared by `routing-agent-abort`, `agent-execution-abort`, `workflow-execution-abort`,
    `tool-execution-abort` chunks.
    """

    primitive_type: str
    primitive_id: str


class RoutingAgentAbort(BaseChunk, tag="routing-agent-abort", frozen=True):
    """`routing-agent-abort` chunk: a network's routing agent was aborted.

    Payload: `ExecutionAbortPayload`.
    """

    payload: ExecutionAbortPayload


class AgentExecutionStartPayload(Payload, frozen=True):
    """Payload of the `agent-execution-start` chunk (`AgentExecutionStart`): the agent id, arguments and run
    id.
    """

    agent_id: str
    args: dict[str, Any]
    run_id: str


class AgentExecutionStart(BaseChunk, tag="agent-execution-start", frozen=True):
    """`agent-execution-start` chunk: a network starts running one of its agents.

    Payload: `AgentExecutionStartPayload`.
    """

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
    """`agent-execution-approval` chunk: an agent run inside a network waits for a tool approval.

    Payload: `NetworkPrimitivePayload`.
    """

    payload: NetworkPrimitivePayload


class AgentExecutionSuspended(BaseChunk, tag="agent-execution-suspended", frozen=True):
    """`agent-execution-suspended` chunk: an agent run inside a network suspended.

    Payload: `NetworkPrimitivePayload`.
    """

    payload: NetworkPrimitivePayload


class AgentExecutionEndPayload(Payload, frozen=True):
    """Payload of the `agent-execution-end` chunk (`AgentExecutionEnd`): the task, agent id, result and
    whether the task is complete.
    """

    task: str
    agent_id: str
    result: Any
    is_complete: bool
    iteration: int
    run_id: str
    usage: Any = UNSET


class AgentExecutionEnd(BaseChunk, tag="agent-execution-end", frozen=True):
    """`agent-execution-end` chunk: an agent run inside a network ended.

    Payload: `AgentExecutionEndPayload`.
    """

    payload: AgentExecutionEndPayload


class AgentExecutionAbort(BaseChunk, tag="agent-execution-abort", frozen=True):
    """`agent-execution-abort` chunk: an agent run inside a network was aborted.

    Payload: `ExecutionAbortPayload`.
    """

    payload: ExecutionAbortPayload


class WorkflowExecutionStartPayload(Payload, frozen=True):
    """Payload of the `workflow-execution-start` chunk (`WorkflowExecutionStart`): the workflow's name and
    id, arguments and run id.
    """

    name: str
    workflow_id: str
    args: dict[str, Any]
    run_id: str


class WorkflowExecutionStart(BaseChunk, tag="workflow-execution-start", frozen=True):
    """`workflow-execution-start` chunk: a network starts running one of its workflows.

    Payload: `WorkflowExecutionStartPayload`.
    """

    payload: WorkflowExecutionStartPayload


class WorkflowExecutionEndPayload(Payload, frozen=True):
    """Payload of the `workflow-execution-end` chunk (`WorkflowExecutionEnd`): the workflow, task, result and
    whether the task is complete.
    """

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
    """`workflow-execution-end` chunk: a workflow run inside a network ended.

    Payload: `WorkflowExecutionEndPayload`.
    """

    payload: WorkflowExecutionEndPayload


class WorkflowExecutionSuspended(BaseChunk, tag="workflow-execution-suspended", frozen=True):
    """`workflow-execution-suspended` chunk: a workflow run inside a network suspended.

    Payload: `NetworkPrimitivePayload`.
    """

    payload: NetworkPrimitivePayload


class WorkflowExecutionAbort(BaseChunk, tag="workflow-execution-abort", frozen=True):
    """`workflow-execution-abort` chunk: a workflow run inside a network was aborted.

    Payload: `ExecutionAbortPayload`.
    """

    payload: ExecutionAbortPayload


class ToolExecutionStartPayload(Payload, frozen=True):
    """Payload of the `tool-execution-start` chunk (`ToolExecutionStart`): the tool call's arguments and the
    run id.
    """

    args: dict[str, Any]
    """``{toolName?, toolCallId?, args?, selectionReason?, ...}``"""
    run_id: str


class ToolExecutionStart(BaseChunk, tag="tool-execution-start", frozen=True):
    """`tool-execution-start` chunk: a network starts running one of its tools.

    Payload: `ToolExecutionStartPayload`.
    """

    payload: ToolExecutionStartPayload


class ToolExecutionEndPayload(Payload, frozen=True):
    """Payload of the `tool-execution-end` chunk (`ToolExecutionEnd`): the task, tool, result and whether the
    task is complete.
    """

    task: str
    primitive_id: str
    primitive_type: str
    result: Any
    is_complete: bool
    iteration: int
    tool_call_id: str
    tool_name: str


class ToolExecutionEnd(BaseChunk, tag="tool-execution-end", frozen=True):
    """`tool-execution-end` chunk: a tool run inside a network ended.

    Payload: `ToolExecutionEndPayload`.
    """

    payload: ToolExecutionEndPayload


class ToolExecutionApproval(BaseChunk, tag="tool-execution-approval", frozen=True):
    """`tool-execution-approval` chunk: a tool run inside a network waits for approval.

    Payload: `NetworkPrimitivePayload`.
    """

    payload: NetworkPrimitivePayload


class ToolExecutionSuspended(BaseChunk, tag="tool-execution-suspended", frozen=True):
    """`tool-execution-suspended` chunk: a tool run inside a network suspended.

    Payload: `NetworkPrimitivePayload`.
    """

    payload: NetworkPrimitivePayload


class ToolExecutionAbort(BaseChunk, tag="tool-execution-abort", frozen=True):
    """`tool-execution-abort` chunk: a tool run inside a network was aborted.

    Payload: `ExecutionAbortPayload`.
    """

    payload: ExecutionAbortPayload


class NetworkExecutionEventStepFinishPayload(Payload, frozen=True):
    """Payload of the `network-execution-event-step-finish` chunk (`NetworkExecutionEventStepFinish`): the
    task, the iteration's result and whether the task is complete.
    """

    task: str
    result: Any
    is_complete: bool
    iteration: int
    run_id: str


class NetworkExecutionEventStepFinish(BaseChunk, tag="network-execution-event-step-finish", frozen=True):
    """`network-execution-event-step-finish` chunk: one iteration of a network finished.

    Payload: `NetworkExecutionEventStepFinishPayload`.
    """

    payload: NetworkExecutionEventStepFinishPayload


class NetworkExecutionEventFinishPayload(Payload, frozen=True):
    """Payload of the `network-execution-event-finish` chunk (`NetworkExecutionEventFinish`): the task, the
    final result, why it completed and the usage.
    """

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
    """`network-execution-event-finish` chunk: a network run finished.

    Payload: `NetworkExecutionEventFinishPayload`.
    """

    payload: NetworkExecutionEventFinishPayload


class NetworkValidationStartPayload(Payload, frozen=True):
    """Payload of the `network-validation-start` chunk (`NetworkValidationStart`): the run id, iteration and
    how many checks run.
    """

    run_id: str
    iteration: int
    checks_count: int


class NetworkValidationStart(BaseChunk, tag="network-validation-start", frozen=True):
    """`network-validation-start` chunk: a network starts its completion checks.

    Payload: `NetworkValidationStartPayload`.
    """

    payload: NetworkValidationStartPayload


class NetworkValidationEndPayload(Payload, frozen=True):
    """Payload of the `network-validation-end` chunk (`NetworkValidationEnd`): whether the checks passed,
    their results and timing.
    """

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
    """`network-validation-end` chunk: a network's completion checks ended.

    Payload: `NetworkValidationEndPayload`.
    """

    payload: NetworkValidationEndPayload


class NetworkObject(BaseChunk, tag="network-object", frozen=True):
    """Network structured output, partial; carried in ``payload.object`` per the spec's shape."""

    payload: dict[str, Any]


class NetworkObjectResult(BaseChunk, tag="network-object-result", frozen=True):
    """`network-object-result` chunk: the final structured-output value of a network, in `payload`."""

    payload: dict[str, Any]
