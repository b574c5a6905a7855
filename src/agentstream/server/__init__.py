"""ASGI pieces for serving agents and workflows to the AI SDK UI: `chat_route`, `resume_route`,
`stop_route`, `workflow_route`, `workflow_stream_route`, `workflow_cancel_route` (Starlette / FastAPI).

`RequestGuard` holds the request checks (host, origin, CORS, auth, size, JSON depth),
`SSEStreamResponse` (from `agentstream.ai_sdk`) the streaming answer, `serving_config` the uvicorn
configuration with `ConnectionLimits` (head and body deadlines, a connection cap). Needs the ``server`` extra
(starlette).
"""

from __future__ import annotations

from ..ai_sdk import HEARTBEAT_FRAME, SSEStreamResponse, assert_valid_heartbeat_ms
from ._connections import ConnectionLimits, default_max_connections, serving_config
from ._errors import InternalServerError, error_response
from ._guard import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_BUFFERED_BYTES,
    AuthError,
    AuthHook,
    RequestGuard,
    bearer_token_auth,
)
from ._owner import owner_key
from ._resume import resume_route
from ._route import chat_route
from ._stop import stop_route
from ._workflow_cancel import workflow_cancel_route
from ._workflow_route import workflow_route, workflow_stream_route

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_BUFFERED_BYTES",
    "HEARTBEAT_FRAME",
    "AuthError",
    "AuthHook",
    "ConnectionLimits",
    "InternalServerError",
    "RequestGuard",
    "SSEStreamResponse",
    "assert_valid_heartbeat_ms",
    "bearer_token_auth",
    "chat_route",
    "default_max_connections",
    "error_response",
    "owner_key",
    "resume_route",
    "serving_config",
    "stop_route",
    "workflow_cancel_route",
    "workflow_route",
    "workflow_stream_route",
]
