"""ASGI pieces for serving agents to the AI SDK UI: :func:`chat_route` (Starlette / FastAPI).

Needs the ``server`` extra (starlette).
"""

from __future__ import annotations

from ._route import SSEStreamResponse, assert_valid_heartbeat_ms, chat_route

__all__ = ["SSEStreamResponse", "assert_valid_heartbeat_ms", "chat_route"]
