"""The tool chunks' half of the UI chunk conversion (``UIChunkConverter`` inherits it): a call's
input, output, error, decline, approval and suspension, and the tool-output chunks that carry a
sub-agent's or a sub-workflow's run."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentstream.chunks import (
    BaseChunk,
    DataChunk,
    ToolCall,
    ToolCallApproval,
    ToolCallDelta,
    ToolCallInputStreamingStart,
    ToolCallPayload,
    ToolCallSuspended,
    ToolError,
    ToolOutput,
    ToolOutputDenied,
    ToolResult,
    ToolResultPayload,
    UnknownChunk,
    chunk_to_dict,
    decode_chunk,
    to_jsonable,
)

from ._errors import UIMessageStreamError
from ._sub_agent import AgentRunTracker

if TYPE_CHECKING:
    from ._convert import OnErrorFn, UIChunk, Version
    from ._workflow import WorkflowUIChunkConverter

__all__ = ["DATA_MISSING", "V5_DECLINED_TEXT", "ToolChunks", "compact", "data_part"]


V5_DECLINED_TEXT = "Tool call was not approved by the user"
"""``errorText`` of a declined call on the v5 protocol (the agent's default decline reason)."""

DATA_MISSING = "UI Messages require a data property when using data- prefixed chunks \n "


def compact(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def _add_provider_fields(out: UIChunk, payload: ToolCallPayload | ToolResultPayload) -> None:
    """``providerExecuted`` then ``providerMetadata``, each only when the payload has it (key order is wire)."""
    if payload.provider_executed is not None:
        out["providerExecuted"] = payload.provider_executed
    if payload.provider_metadata is not None:
        out["providerMetadata"] = payload.provider_metadata


def _chunk_dict(value: Any) -> Any:
    if isinstance(value, (BaseChunk, DataChunk, UnknownChunk)):
        return chunk_to_dict(value)
    return value


def data_part(raw: Mapping[str, Any], original: Any) -> UIChunk:
    if "data" not in raw:
        raise UIMessageStreamError(
            DATA_MISSING + json.dumps(original, separators=(",", ":"), ensure_ascii=False, default=str)
        )
    out: UIChunk = {"type": raw["type"], "data": raw["data"]}
    if raw.get("id") is not None:
        out["id"] = raw["id"]
    return out


def _tool_agent_id(tool_name: Any) -> str | None:
    if isinstance(tool_name, str) and tool_name.startswith("agent-"):
        return tool_name[len("agent-") :]
    return None


class ToolChunks:
    """The tool chunk handlers; the converter that inherits them owns the state they read."""

    version: Version
    on_error: OnErrorFn
    include_sub_agent_metadata: bool
    _agent_runs: AgentRunTracker
    _workflow_runs: WorkflowUIChunkConverter | None

    def _observe(self, chunk: Any, part_type: str | None = None) -> None:
        raise NotImplementedError

    def _tool_input_start(self, chunk: ToolCallInputStreamingStart) -> UIChunk:
        self._observe(chunk, "tool-input-start")
        p = chunk.payload
        out: UIChunk = {"type": "tool-input-start", "toolCallId": p.tool_call_id, "toolName": p.tool_name}
        if p.provider_executed is not None:
            out["providerExecuted"] = p.provider_executed
        out["dynamic"] = bool(p.dynamic)
        return out

    def _tool_call_delta(self, chunk: ToolCallDelta) -> UIChunk:
        self._observe(chunk, "tool-input-delta")
        p = chunk.payload
        return {"type": "tool-input-delta", "toolCallId": p.tool_call_id, "inputTextDelta": p.args_text_delta}

    def _tool_call(self, chunk: ToolCall) -> UIChunk:
        self._observe(chunk)
        p = chunk.payload
        out: UIChunk = {
            "type": "tool-input-available",
            "toolCallId": p.tool_call_id,
            "toolName": p.tool_name,
            "input": to_jsonable(p.args),
        }
        _add_provider_fields(out, p)
        if p.observability is not None and self.version != "v5":
            out["toolMetadata"] = {"__mastraObservability": p.observability}
        return out

    def _tool_result(self, chunk: ToolResult) -> UIChunk:
        self._observe(chunk)
        p = chunk.payload
        out: UIChunk = {
            "type": "tool-output-available",
            "toolCallId": p.tool_call_id,
            "output": to_jsonable(p.result),
        }
        _add_provider_fields(out, p)
        return out

    def _tool_error(self, chunk: ToolError) -> UIChunk:
        self._observe(chunk)
        p = chunk.payload
        out: UIChunk = {
            "type": "tool-output-error",
            "toolCallId": p.tool_call_id,
            "errorText": self.on_error(p.error),
        }
        if p.provider_executed is not None:
            out["providerExecuted"] = p.provider_executed
        return out

    def _tool_output_denied(self, chunk: ToolOutputDenied) -> UIChunk:
        self._observe(chunk)
        p = chunk.payload
        if self.version != "v5":
            return {"type": "tool-output-denied", "toolCallId": p.tool_call_id}
        # ai@5's uiMessageChunkSchema has no tool-output-denied (Mastra sends it anyway and the v5
        # client fails with AI_TypeValidationError): a decline ends the call as the output error v5
        # knows, its text saying it was declined and why (docs/decisions/issue-24-v5-decline.md).
        reason = p.approval.get("reason") if isinstance(p.approval, Mapping) else None
        text = V5_DECLINED_TEXT + (f": {reason}" if isinstance(reason, str) and reason else "")
        return {"type": "tool-output-error", "toolCallId": p.tool_call_id, "errorText": text}

    def _tool_call_approval(self, chunk: ToolCallApproval) -> list[UIChunk]:
        self._observe(chunk)
        p = chunk.payload
        data: UIChunk = {
            "type": "data-tool-call-approval",
            "data": compact(
                {
                    "state": "data-tool-call-approval",
                    "runId": chunk.run_id,
                    "toolCallId": p.tool_call_id,
                    "toolName": p.tool_name,
                    "args": to_jsonable(p.args),
                    "resumeSchema": p.resume_schema,
                }
            ),
            "id": p.tool_call_id,
        }
        if self.version == "v5":
            return [data]
        request: UIChunk = {
            "type": "tool-approval-request",
            "approvalId": f"{chunk.run_id}::{p.tool_call_id}",
            "toolCallId": p.tool_call_id,
        }
        return [request, data]

    def _tool_call_suspended(self, chunk: ToolCallSuspended) -> UIChunk:
        self._observe(chunk)
        p = chunk.payload
        data: dict[str, Any] = {
            "state": "data-tool-call-suspended",
            "runId": chunk.run_id,
            "toolCallId": p.tool_call_id,
            "toolName": p.tool_name,
            "suspendPayload": to_jsonable(p.suspend_payload),
            "resumeSchema": p.resume_schema,
        }
        return {
            "type": "data-tool-call-suspended",
            "data": {k: v for k, v in data.items() if v is not None or k == "suspendPayload"},
            "id": p.tool_call_id,
        }

    def _tool_output(self, chunk: ToolOutput) -> list[UIChunk] | UIChunk | None:
        self._observe(chunk)
        p = chunk.payload
        ancestry: list[dict[str, Any]] = []

        def step(tool_call_id: Any, tool_name: Any) -> None:
            entry: dict[str, Any] = {"toolCallId": tool_call_id}
            if tool_name is not None:
                entry["toolName"] = tool_name
            agent_id = _tool_agent_id(tool_name)
            if agent_id is not None:
                entry["agentId"] = agent_id
            ancestry.append(entry)

        step(p.tool_call_id, p.tool_name)
        leaf = _chunk_dict(p.output)
        while (
            isinstance(leaf, Mapping)
            and leaf.get("type") == "tool-output"
            and isinstance(leaf.get("payload"), Mapping)
        ):
            inner = leaf["payload"]
            step(inner.get("toolCallId"), inner.get("toolName"))
            leaf = _chunk_dict(inner.get("output"))
        if not isinstance(leaf, Mapping):
            return None
        origin = leaf.get("from")
        if origin == "AGENT":
            if self.include_sub_agent_metadata:
                return self._sub_agent(leaf, ancestry)
            return None
        if origin == "WORKFLOW":
            # whatever include_sub_agent_metadata says: in @mastra/ai-sdk that option governs the
            # sub-agent parts only; a workflow tool's tool-output always becomes data-tool-workflow
            # (client-sdks/ai-sdk/src/transformers.ts, the tool-workflow branch)
            return self._sub_workflow(leaf)
        if origin == "NETWORK":
            return None
        leaf_type = leaf.get("type")
        if isinstance(leaf_type, str) and leaf_type.startswith("data-"):
            return data_part(leaf, chunk_to_dict(chunk))
        return None

    def _sub_workflow(self, leaf: Mapping[str, Any]) -> list[UIChunk]:
        """A workflow run as a tool: its snapshots as ``data-tool-workflow`` / ``-step`` parts."""
        if self._workflow_runs is None:
            from ._workflow import WorkflowUIChunkConverter  # the workflow converter builds on this one

            self._workflow_runs = WorkflowUIChunkConverter(include_text_stream_parts=False, nested=True)
        return self._workflow_runs.convert(decode_chunk(dict(leaf), unknown="keep"))

    def _sub_agent(self, leaf: Mapping[str, Any], ancestry: list[dict[str, Any]]) -> list[UIChunk] | None:
        parts = self._agent_runs.update(leaf)
        if not parts:
            return None
        out: list[UIChunk] = []
        for kind, body in parts:
            part: UIChunk = {
                "type": kind,
                **body,
                "ancestry": [dict(a) for a in ancestry],
                "depth": len(ancestry),
            }
            if len(ancestry) > 1 and "agentId" in ancestry[-2]:
                part["parentAgentId"] = ancestry[-2]["agentId"]
            out.append(part)
        return out
