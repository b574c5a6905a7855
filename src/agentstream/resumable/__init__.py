"""Stream stores: each active chat response's UI chunks, kept so a reconnecting client can resume.

The AI SDK's resumable-stream pattern (``useChat({resume: true})``): the chat route records every
chunk of a running response under the chat's id, and ``GET <api>/<chat id>/stream`` replays the
active one from its start and follows it to the end. `MemoryStreamStore` keeps them in this
process (the default); `RedisStreamStore` keeps them in Redis Streams, so a reconnect to another
server process gets the rest. Chunks are stored as their JSON bytes (`encode_ui_chunk`).

A `ChatRunner` runs chat turns in other processes (workers): the server dispatches a `ChatTurn`
and follows its stream; the worker calls ``agentstream.ai_sdk.run_chat_turn``, which writes the
chunks positionally.
"""

from __future__ import annotations

from ._base import ActiveStream, StreamExpiredError, StreamOwnerError, StreamStore, check_at, check_ttl
from ._keys import STREAM_KEY_KINDS, chat_stream_key, mastra_workflow_stream_key, workflow_stream_key
from ._memory import DEFAULT_MAX_BYTES, MemoryStreamStore
from ._redis import RedisStreamStore, stream_store_from_url
from ._turn import ChatRunner, ChatTurn, ChatTurnOptions
from ._workflow_run import WorkflowJob, WorkflowRunner

__all__ = [
    "DEFAULT_MAX_BYTES",
    "STREAM_KEY_KINDS",
    "ActiveStream",
    "ChatRunner",
    "ChatTurn",
    "ChatTurnOptions",
    "MemoryStreamStore",
    "RedisStreamStore",
    "StreamExpiredError",
    "StreamOwnerError",
    "StreamStore",
    "WorkflowJob",
    "WorkflowRunner",
    "chat_stream_key",
    "check_at",
    "check_ttl",
    "mastra_workflow_stream_key",
    "stream_store_from_url",
    "workflow_stream_key",
]
