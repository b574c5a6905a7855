"""Elicitation shown in a chat as a suspension (``MCPClient(on_elicitation="suspend")``).

A server's question during a tool call suspends the agent's run: the step ends with
``tool-call-suspended`` (the question as ``suspendPayload``), the chat shows it, and
``agent.resume_stream(answer, run_id=...)`` runs the tool again: the MCP call is made again, and
the server's question is answered with ``answer`` this time. The calling tool is found through a
context variable: on a 2026-07-28 server the question arrives inside the call (the SDK answers
``InputRequiredResult`` in the caller's task), which is what makes this possible; a 2025-11-25
server's question arrives on the session's own task, outside any call, and is declined.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from mcp_types import INVALID_PARAMS, ElicitResult, ErrorData

from ..tools import ToolContext, ToolSuspended

__all__ = ["SUSPEND", "calling_tool", "reset_calling", "suspend_or_answer"]

SUSPEND = "suspend"
"""``on_elicitation=SUSPEND``: questions suspend the calling agent run."""


@dataclass
class _Call:
    context: ToolContext
    answered: bool = False


_CALLING: ContextVar[_Call | None] = ContextVar("agentstream_mcp_calling_tool", default=None)


def calling_tool(context: ToolContext | None) -> Any:
    """Mark the current task as running ``context``'s MCP call (a token for `reset_calling`)."""
    return _CALLING.set(None if context is None else _Call(context))


def reset_calling(token: Any) -> None:
    _CALLING.reset(token)


def suspend_or_answer(server_name: str, request: dict[str, Any]) -> ElicitResult | ErrorData:
    """The resumed run's answer to the server's question, or a suspension of the run."""
    call = _CALLING.get()
    if call is None:
        return ErrorData(
            code=INVALID_PARAMS,
            message="elicitation declined: the question did not come from a tool call in an agent run",
        )
    if call.context.resume_data is not None and not call.answered:
        call.answered = True  # one answer per resume: a second question suspends again
        try:
            return ElicitResult.model_validate(call.context.resume_data)
        except ValueError as exc:
            return ErrorData(
                code=INVALID_PARAMS,
                message=(
                    "resume data for an MCP elicitation must be {'action': 'accept' | 'decline' | "
                    f"'cancel', 'content'?: {{...}}}}: {exc}"
                ),
            )
    raise ToolSuspended({"type": "mcp-elicitation", "serverName": server_name, **request})
