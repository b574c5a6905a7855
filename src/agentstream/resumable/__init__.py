"""Stream stores: each active chat response's UI chunks, kept so a reconnecting client can resume.

The AI SDK's resumable-stream pattern (``useChat({resume: true})``): the chat route records every
chunk of a running response under the chat's id, and ``GET <api>/<chat id>/stream`` replays the
active one from its start and follows it to the end. `MemoryStreamStore` keeps them in this
process (the default); `RedisStreamStore` keeps them in Redis Streams, so a reconnect to another
server process gets the rest. Chunks are stored as their JSON bytes (`encode_ui_chunk`).

A `ChatRunner` runs chat turns in other processes (workers): the server dispatches a `ChatTurn`
and follows its stream; the worker calls ``agentstream.ai_sdk.run_chat_turn``, which writes the
chunks positionally.

Store faults: `RedisStreamStore.from_url`'s client retries on connection errors (every write is
positional or idempotent) and raises `StreamStoreUnavailableError` past its retries; a writer holds
`writing` (a lease on the store's clock) so readers using `read_checked` get `StreamLostError`
within seconds of its death instead of waiting for the stream's TTL.
"""

from __future__ import annotations

from ._base import (
    ActiveStream,
    StreamExpiredError,
    StreamLostError,
    StreamOwnerError,
    StreamStore,
    StreamStoreUnavailableError,
    check_at,
    check_ttl,
)
from ._keys import STREAM_KEY_KINDS, chat_stream_key, mastra_workflow_stream_key, workflow_stream_key
from ._liveness import IN_PROCESS_LEASE_S, WORKER_LEASE_S, WriterLiveness, read_checked, writing
from ._memory import DEFAULT_MAX_BYTES, MemoryStreamStore, in_process_appender
from ._redis import RedisStreamStore, batched_sink, stream_store_from_url
from ._redis_writes import RedisStreamSink
from ._turn import ChatRunner, ChatTurn, ChatTurnOptions
from ._workflow_run import WorkflowJob, WorkflowRunner

__all__ = [
    "DEFAULT_MAX_BYTES",
    "IN_PROCESS_LEASE_S",
    "STREAM_KEY_KINDS",
    "WORKER_LEASE_S",
    "ActiveStream",
    "ChatRunner",
    "ChatTurn",
    "ChatTurnOptions",
    "MemoryStreamStore",
    "RedisStreamSink",
    "RedisStreamStore",
    "StreamExpiredError",
    "StreamLostError",
    "StreamOwnerError",
    "StreamStore",
    "StreamStoreUnavailableError",
    "WorkflowJob",
    "WorkflowRunner",
    "WriterLiveness",
    "batched_sink",
    "chat_stream_key",
    "check_at",
    "check_ttl",
    "in_process_appender",
    "mastra_workflow_stream_key",
    "read_checked",
    "stream_store_from_url",
    "workflow_stream_key",
    "writing",
]
