"""Agents and workflows as tools: ``Agent(agents={...}, workflows={...})`` (Mastra's ``listAgentTools``).

Each sub-agent ``name`` becomes the tool ``agent-<name>``. Its run streams into the parent as it
happens: every chunk of the sub-run's ``full_stream`` goes through the tool's writer, wrapped as
``tool-output {output: <chunk>, toolCallId, toolName}`` (``data-*`` chunks pass through unwrapped),
ending with the sub-run's ``finish`` and its usage. The tool's result is
``{text, subAgentThreadId, subAgentResourceId, subAgentToolResults}``; the parent model is shown
only the text (``to_model_output``).

No loop change: the sub-run is an ordinary tool call, so the parent's abort signal, tool
concurrency, error masking and ``on_chunk`` rules apply to it as to any tool.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..chunks import Chunk, DataChunk, TextDelta, ToolOutput, to_jsonable
from ..stream import ModelOutput, Usage, add_usage, total_usage
from ..tools import Tool, ToolContext, json_schema_of

if TYPE_CHECKING:
    from ._agent import Agent

__all__ = [
    "AGENT_TOOL_INPUT_SCHEMA",
    "DelegationRun",
    "SubAgentError",
    "WorkflowToolError",
    "agent_tool",
    "check_sub_agents",
    "check_workflows",
    "delegation_tools",
    "strip_parent_tool_parts",
    "usage_with_sub_runs",
    "workflow_input_schema",
    "workflow_tool",
]


def _nullable(kind: list[str] | str, description: str) -> dict[str, Any]:
    kinds = [kind] if isinstance(kind, str) else kind
    return {"description": description, "type": [*kinds, "null"]}


# What Mastra's CoreToolBuilder adds to the input of a resumable tool (a sub-agent's or a
# workflow's: packages/core/src/tools/tool-builder/builder.ts), as the sub-agent-tool recording shows
# it sent to the model.
_RESUME_PROPERTIES: dict[str, Any] = {
    "suspendedToolCallId": {
        "anyOf": [
            {"type": "string", "description": "The toolCallId of the suspended tool to resume"},
            {"type": "null"},
        ]
    },
    "suspendedToolRunId": {
        "anyOf": [{"type": "string", "description": "The runId of the suspended tool"}, {"type": "null"}]
    },
    "resumeData": _nullable(
        ["string", "number", "integer", "boolean", "object"],
        "The resumeData object created from the resumeSchema of suspended tool",
    ),
}

AGENT_TOOL_INPUT_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "prompt": {"type": "string", "description": "The prompt to send to the agent"},
        "threadId": _nullable("string", "Thread ID for conversation continuity for memory messages"),
        "resourceId": _nullable("string", "Resource/user identifier for memory messages"),
        "instructions": _nullable(
            "string",
            "Additional instructions to append to the agent instructions. Only provide if you have "
            "specific guidance beyond what the agent already knows. Leave empty in most cases.",
        ),
        "maxSteps": _nullable(
            ["number", "string"], "Maximum number of execution steps for the sub-agent (integer, minimum 3)"
        ),
        **_RESUME_PROPERTIES,
    },
    "required": ["prompt"],
    "additionalProperties": False,
}
"""The ``agent-<name>`` tool's input, as Mastra sends it to the model."""


class SubAgentError(Exception):
    """A sub-agent's run failed; the parent sees it as the ``agent-<name>`` tool's error.

    ``__cause__`` is the sub-run's own error.
    """

    name = "SubAgentError"


@dataclass(frozen=True, slots=True)
class DelegationRun:
    """What one parent run hands down to the sub-runs its tools start."""

    agent: Agent
    clock: Callable[[], float]
    sleep: Callable[[float], Awaitable[None]]


def strip_parent_tool_parts(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The parent's prompt without its tool calls and results: the sub-agent has none of those
    tools, and providers reject a history that names unknown ones (Mastra's ``stripParentToolParts``)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            continue
        content = message.get("content")
        if role == "assistant" and isinstance(content, list):
            kept = [p for p in content if not (isinstance(p, Mapping) and p.get("type") == "tool-call")]
            if not kept:
                continue
            message = {**message, "content": kept}
        out.append(message)
    return out


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _max_steps(value: Any) -> int | None:
    if value is None:
        return None
    try:
        steps = int(value) if not isinstance(value, bool) else -1
    except (TypeError, ValueError):
        steps = -1
    if steps < 3 or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(f"maxSteps: expected an integer of at least 3, got {value!r}")
    return steps


def _ids(run: DelegationRun, name: str, args: Mapping[str, Any]) -> tuple[str, str]:
    """The sub-run's thread and resource ids (fresh per delegation, as in Mastra)."""
    thread = args.get("threadId")
    resource = args.get("resourceId")
    thread_id = f"{thread}-{uuid.uuid4()}" if thread else str(uuid.uuid4())
    if resource:
        resource_id = f"{resource}-{name}"
    elif run.agent._mastra is not None:
        resource_id = str(uuid.uuid4())
    else:
        resource_id = f"{_slug(run.agent.id)}-{name}"
    return thread_id, resource_id


def _forward(context: ToolContext, chunk: Chunk) -> None:
    if isinstance(chunk, DataChunk):
        context.writer.custom(chunk)  # data parts reach the parent's UI as they are
    else:
        context.writer.write(chunk)


def _tool_result_entry(chunk: Any) -> dict[str, Any]:
    p = chunk.payload
    entry = {"toolName": p.tool_name, "toolCallId": p.tool_call_id, "result": p.result, "args": p.args}
    if p.is_error is not None:
        entry["isError"] = p.is_error
    return to_jsonable(entry)  # type: ignore[no-any-return]


def agent_tool(run: DelegationRun, name: str, sub: Agent) -> Tool:
    """The ``agent-<name>`` tool of one parent run."""
    parent = run.agent
    tool_name = f"agent-{name}"

    async def execute(args: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        if args.get("resumeData") is not None:
            raise ValueError(f"{tool_name}: resumeData: resuming a suspended sub-agent is not available yet")
        options: dict[str, Any] = {
            "abort_signal": context.abort_signal,
            "clock": run.clock,
            "sleep": run.sleep,
            "request_context": context.request_context,  # the parent run's, as in Mastra
        }
        extra = args.get("instructions")
        if extra:
            options["instructions"] = f"{sub.instructions}\n\n{extra}" if sub.instructions else extra
        steps = _max_steps(args.get("maxSteps"))
        if steps is not None:
            options["max_steps"] = steps
        thread_id, resource_id = _ids(run, name, args)
        messages = [*strip_parent_tool_parts(context.messages), {"role": "user", "content": args["prompt"]}]
        output = sub.stream(messages, **options)
        text: list[str] = []
        try:
            async for chunk in output.full_stream:
                _forward(context, chunk)
                if isinstance(chunk, TextDelta):
                    text.append(chunk.payload.text)
        finally:
            await output.aclose()  # a cancelled parent stops the sub-run, no task is left behind
        if output.error is not None:
            raise SubAgentError(
                f"[Agent:{parent.name}] - Failed agent tool execution for {name}: {output.error}"
            ) from output.error
        results = [_tool_result_entry(r) for r in await output.tool_results]
        return {
            "text": "".join(text),
            "subAgentThreadId": thread_id,
            "subAgentResourceId": resource_id,
            "subAgentToolResults": results,
        }

    return Tool(
        id=tool_name,
        description=sub.description or f"Agent: {name}",
        input_schema=AGENT_TOOL_INPUT_SCHEMA,
        execute=execute,
        to_model_output=lambda result: {"type": "text", "value": result["text"]},
    )


def check_sub_agents(parent: Agent, agents: Mapping[str, Agent] | None) -> dict[str, Agent]:
    """``Agent(agents=...)`` validated: names are non-empty strings, values agents, no tool clash."""
    from ._agent import Agent

    out: dict[str, Agent] = {}
    for name, sub in (agents or {}).items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"agent {parent.id!r}: agents: names must be non-empty strings, got {name!r}")
        if not isinstance(sub, Agent):
            raise TypeError(
                f"agent {parent.id!r}: agents[{name!r}]: expected an Agent, got {type(sub).__name__}"
            )
        if sub is parent:
            raise ValueError(f"agent {parent.id!r}: agents[{name!r}]: an agent cannot be its own sub-agent")
        _check_clash(parent, f"agent-{name}")
        out[name] = sub
    return out


def check_workflows(parent: Agent, workflows: Mapping[str, Any] | None) -> dict[str, Any]:
    """``Agent(workflows=...)`` validated: names are non-empty strings, values have ``create_run``."""
    out: dict[str, Any] = {}
    for name, workflow in (workflows or {}).items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"agent {parent.id!r}: workflows: names must be non-empty strings, got {name!r}")
        if not callable(getattr(workflow, "create_run", None)):
            raise TypeError(
                f"agent {parent.id!r}: workflows[{name!r}]: expected a workflow (create_workflow(...)), "
                f"got {type(workflow).__name__}"
            )
        _check_clash(parent, f"workflow-{name}")
        out[name] = workflow
    return out


def _check_clash(parent: Agent, tool_name: str) -> None:
    if tool_name in parent.tools:
        raise ValueError(
            f"agent {parent.id!r}: the tool {tool_name!r} clashes with the sub-agent/workflow tool of "
            "the same name; rename one of them"
        )


def delegation_tools(run: DelegationRun) -> dict[str, Tool]:
    """The ``agent-<name>`` and ``workflow-<name>`` tools of one run of ``run.agent``."""
    tools: dict[str, Tool] = {}
    for name, sub in run.agent.agents.items():
        tools[f"agent-{name}"] = agent_tool(run, name, sub)
    for name, workflow in run.agent.workflows.items():
        tools[f"workflow-{name}"] = workflow_tool(run, name, workflow)
    return tools


def _schema_part(schema: Any) -> dict[str, Any]:
    out = dict(json_schema_of(schema))
    out.pop("$schema", None)  # a property's schema, not a document
    return out


def workflow_input_schema(workflow: Any) -> dict[str, Any]:
    """The ``workflow-<name>`` tool's input as Mastra offers it to the model: ``{inputData,
    initialState?}`` (packages/core/src/agent/agent.ts, listWorkflowTools) plus the resume fields
    every resumable tool gets (``suspendedToolCallId``, ``suspendedToolRunId``, ``resumeData``)."""
    properties: dict[str, Any] = {
        "inputData": _schema_part(workflow.input_schema)
        if workflow.input_schema is not None
        else {"type": "object", "additionalProperties": True}
    }
    if getattr(workflow, "state_schema", None) is not None:
        properties["initialState"] = _schema_part(workflow.state_schema)
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {**properties, **_RESUME_PROPERTIES},
        "required": ["inputData"],
        "additionalProperties": False,
    }


class WorkflowToolError(Exception):
    """A workflow run as a tool could not give a result (it suspended, or could not start)."""

    name = "WorkflowToolError"


def _workflow_outcome(name: str, run_id: str, result: Any) -> dict[str, Any]:
    status = result.status
    if status == "success":
        # Mastra returns the whole run result when the output is empty (``result || run result``).
        value = result.result if result.result is not None else result.to_dict()
        return {"result": value, "runId": run_id}
    if status == "failed":
        error = result.error
        return {"error": str(error) if error is not None else "Workflow execution failed", "runId": run_id}
    if status == "suspended":
        steps = ", ".join(".".join(path) for path in result.suspended) or "?"
        raise WorkflowToolError(
            f"workflow-{name}: the run {run_id} suspended at step {steps}; resuming a workflow through "
            "an agent's tool call is not available yet (resume it with workflow.create_run(run_id=...))"
        )
    return {"error": f"Workflow run ended with status {status!r}", "runId": run_id}


def workflow_tool(run: DelegationRun, name: str, workflow: Any) -> Tool:
    """The ``workflow-<name>`` tool of one parent run: the workflow's chunks stream into the parent
    as ``tool-output``; the result is ``{result, runId}`` or ``{error, runId}``."""
    parent = run.agent

    async def execute(args: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        if args.get("resumeData") is not None:
            raise ValueError(
                f"workflow-{name}: resumeData: resuming a suspended workflow through a tool call is not "
                "available yet (resume it with workflow.create_run(run_id=...))"
            )
        try:
            wf_run = await workflow.create_run(clock=run.clock, sleep=run.sleep)
            # checked first, as Mastra's start() throws for it: the tool fails, nothing streams
            wf_run.check_input(args.get("inputData"))
            output = wf_run.stream(
                input_data=args.get("inputData"),
                initial_state=args.get("initialState"),
                request_context=context.request_context,
            )
        except Exception as exc:
            raise WorkflowToolError(f"[Agent:{parent.name}] - Failed workflow tool execution: {exc}") from exc
        try:
            async for chunk in output.full_stream:
                context.writer.write(chunk)
        finally:
            await output.aclose()  # cancels the run if it is still going (the parent was cancelled)
        return _workflow_outcome(name, wf_run.run_id, await output.result)

    return Tool(
        id=f"workflow-{name}",
        description=workflow.description or f"Workflow: {name}",
        input_schema=workflow_input_schema(workflow),
        execute=execute,
    )


_ENVELOPES = ("tool-output", "workflow-step-output")


def _nested_leaf(output: Any) -> Any:
    """The chunk inside ``tool-output`` / ``workflow-step-output`` envelopes (sub-sub-runs too)."""
    while isinstance(output, Mapping) and output.get("type") in _ENVELOPES:
        payload = output.get("payload")
        output = payload.get("output") if isinstance(payload, Mapping) else None
    return output


async def usage_with_sub_runs(output: ModelOutput) -> Usage:
    """The run's total usage plus that of every sub-agent it ran through a tool, at any depth.

    ``await output.total_usage`` is Mastra's: the parent's own model calls only (a recorded run
    shows the sub-agent's tokens left out). Each sub-agent run ends with a nested ``finish`` chunk
    carrying its usage (inside ``tool-output``, or ``workflow-step-output`` for an agent step of a
    workflow run as a tool); this adds them up, so a budget or a bill sees every token the run
    spent. Awaiting it runs the output to the end.
    """
    own = await output.total_usage
    total = Usage.from_wire({k: v for k, v in own.to_wire().items() if k != "raw"})
    async for chunk in output.full_stream:
        if not isinstance(chunk, ToolOutput):
            continue
        leaf = _nested_leaf(chunk.payload.output)
        if isinstance(leaf, Mapping) and leaf.get("type") == "finish" and leaf.get("from") == "AGENT":
            payload = leaf.get("payload")
            inner = payload.get("output") if isinstance(payload, Mapping) else None
            usage = inner.get("usage") if isinstance(inner, Mapping) else None
            if isinstance(usage, Mapping):
                total = add_usage(total, {k: v for k, v in usage.items() if k != "raw"})
    return total_usage(total)
