"""``ToolSuspended``: how ``await context.suspend(payload)`` stops a foreground tool call."""

from __future__ import annotations

from typing import Any

__all__ = ["ToolSuspended"]


class ToolSuspended(Exception):
    """Raised by ``ToolContext.suspend(payload)``; the agent loop turns it into ``tool-call-suspended``.

    A tool should not catch it (``return await context.suspend(...)``); if it escapes a tool that
    is not run by an agent loop, the message says what happened.
    """

    def __init__(self, payload: Any = None) -> None:
        super().__init__("the tool suspended the run (context.suspend); resume it with agent.resume_stream")
        self.payload = payload
