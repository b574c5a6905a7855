"""``TracingHooks``: the outermost link of a traced run's hooks chain (docs/decisions.md, "Phase 2
seams"). The spans themselves are ``agentstream.tracing``'s; this only puts each tool call in one."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ._hooks import ChainedHooks, LoopHooks, PendingToolCall

if TYPE_CHECKING:
    from ..tools import Tool, ToolContext
    from ..tracing import RunTrace

__all__ = ["TracingHooks"]


class TracingHooks(ChainedHooks):
    """``execute_tool`` inside the run's ``execute_tool`` span; every other seam is ``inner``'s
    (`ChainedHooks`)."""

    def __init__(self, inner: LoopHooks, trace: RunTrace) -> None:
        super().__init__(inner)
        self.trace = trace

    async def execute_tool(
        self,
        call: PendingToolCall,
        tool: Tool,
        context: ToolContext,
        default: Callable[[], Awaitable[Any]],
    ) -> Any:
        """The inner chain's ``execute_tool``, traced."""
        description = getattr(tool, "description", None)
        return await self.trace.tool_call(
            call.name,
            call.call_id,
            call.args,
            lambda: self.inner.execute_tool(call, tool, context, default),
            description=description if isinstance(description, str) else None,
            signal=getattr(context, "abort_signal", None),
        )
