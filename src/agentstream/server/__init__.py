"""ASGI pieces for serving agents and workflows to the AI SDK UI: `chat_route`, `resume_route`,
`stop_route`, `workflow_route`, `workflow_stream_route`, `workflow_cancel_route` (Starlette / FastAPI),
and `Jobs` (from `agentstream.ai_sdk`), the job service the routes of one app share.

`RequestGuard` holds the request checks (host, origin, CORS, auth, size, JSON depth),
`SSEStreamResponse` (from `agentstream.ai_sdk`) the streaming answer, `serving_config` the uvicorn
configuration with `ConnectionLimits` (head and body deadlines, a connection cap). Needs the ``server`` extra
(starlette).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..ai_sdk import HEARTBEAT_FRAME, Jobs, SSEStreamResponse, assert_valid_heartbeat_ms
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
from ._memory_routes import memory_routes, message_json, thread_json
from ._owner import owner_key, stream_owner
from ._resume import ANSWER_LOST, STORE_UNAVAILABLE, resume_route
from ._route import chat_route
from ._stop import stop_route
from ._workflow_cancel import cancel_workflow_run, workflow_cancel_route
from ._workflow_route import workflow_route, workflow_stream_route

if TYPE_CHECKING:
    from .._mastra import Mastra

__all__ = [
    "ANSWER_LOST",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_BUFFERED_BYTES",
    "HEARTBEAT_FRAME",
    "STORE_UNAVAILABLE",
    "AuthError",
    "AuthHook",
    "ConnectionLimits",
    "InternalServerError",
    "Jobs",
    "RequestGuard",
    "SSEStreamResponse",
    "assert_valid_heartbeat_ms",
    "bearer_token_auth",
    "cancel_workflow_run",
    "chat_route",
    "create_app",
    "default_max_connections",
    "error_response",
    "memory_routes",
    "message_json",
    "owner_key",
    "resume_route",
    "serving_config",
    "stop_route",
    "stream_owner",
    "thread_json",
    "workflow_cancel_route",
    "workflow_route",
    "workflow_stream_route",
]


def create_app(mastra: Mastra | None = None, **options: Any) -> Any:
    """The app `agentstream serve` serves, for your own ``uvicorn`` or ASGI host: the chat page at
    ``/``, ``/api/chat/info``, the chat, resume and stop routes, the workflow routes and Mastra's
    API (``/api/agents``, …: `agentstream.mastra_api`), for ``mastra``
    (the demo's when ``None``). ``options``: ``default_agent``, ``smooth``, ``delay_in_ms``,
    ``heartbeat_ms``, ``send_reasoning`` / ``send_sources`` / ``send_goals``, ``guard``,
    ``stream_store``, ``runner``, ``workflow_runner``, ``mastra_api`` (see docs/serving.md)."""
    # the app sits above this layer (it loads apps and the demo): imported when called
    from .._app import create_app as build

    return build(mastra, **options)
