"""Chat turns on workers: `DurableChat` (a server's `ChatRunner`) and the worker's DBOS workflow.

One DBOS workflow per turn, its id the turn's stream id (so enqueueing twice runs it once), on the
``agentstream-chat`` queue. The worker runs `run_chat_turn`, which writes the UI chunks to the
stream store positionally from chunk 0: after a crash, the lease takeover re-enqueues the
workflow, it runs again from the start on another worker, and the store skips every chunk number
already written. Turns and results are stored as JSON (DBOS's portable serialization), not pickle.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dbos import DBOS, SetWorkflowID, WorkflowSerializationFormat

from ..ai_sdk import run_chat_turn
from ..resumable import ChatTurn, StreamStore
from ._cancel import watched
from ._queued import QueuedRunner

__all__ = [
    "CHAT_OPTIONS",
    "CHAT_QUEUE_NAME",
    "CHAT_WORKFLOW_NAME",
    "ChatSetup",
    "DurableChat",
    "chat_setup",
    "enqueue_chat_turn",
    "start_chat_turn",
]

_log = logging.getLogger("agentstream.durable")

CHAT_WORKFLOW_NAME = "agentstream.chat_turn"
CHAT_QUEUE_NAME = "agentstream-chat"
CHAT_OPTIONS = frozenset({"default_options", "experimental_transform", "on_error", "message_metadata"})
"""The `handle_chat_stream` settings a worker may set for the turns it runs (callables stay here)."""

_PORTABLE = WorkflowSerializationFormat.PORTABLE


class DurableChat(QueuedRunner):
    """A `ChatRunner` running each chat turn on an `agentstream worker` sharing ``database_url``.

        runner = DurableChat("postgresql://postgres@127.0.0.1:54329/postgres")
        create_app(mastra, stream_store=RedisStreamStore.from_url("redis://…"), runner=runner)

    ``dispatch`` enqueues the turn (idempotently: the workflow id is the stream id) and returns;
    the workers write the answer to the stream store the route follows. ``cancel`` stops a turn,
    queued or running (a running one stops within about half a second and ends its stream).
    """

    kind = "chat"
    queue_name = CHAT_QUEUE_NAME
    workflow_name = CHAT_WORKFLOW_NAME
    what = "this chat turn"

    async def dispatch(self, turn: ChatTurn) -> None:
        """Enqueue the turn (a turn already enqueued is not enqueued again)."""
        await self._enqueue(turn)


@dataclass
class ChatSetup:
    """What a worker answers chat turns with: its agents, the shared store, its chat settings."""

    mastra: Any
    store: StreamStore
    options: Mapping[str, Any]
    finished: Callable[[str], None] | None = None
    """Called with the stream id when a turn ends on this worker (the inbox gives its slot back)."""


_setup: list[ChatSetup] = []


def chat_setup(mastra: Any, store: StreamStore, options: Mapping[str, Any] | None) -> ChatSetup:
    """Check ``options`` (keys of `CHAT_OPTIONS` only) and make this process answer chat turns."""
    unknown = set(options or {}) - CHAT_OPTIONS
    if unknown:
        raise ValueError(
            f"chat_options: unknown key(s) {', '.join(sorted(unknown))} (known: {', '.join(sorted(CHAT_OPTIONS))})"
        )
    if not callable(getattr(mastra, "get_agent", None)):
        raise TypeError(f"mastra: expected a Mastra (with get_agent), got {type(mastra).__name__}")
    setup = ChatSetup(mastra, store, dict(options or {}))
    _setup[:] = [setup]
    return setup


@DBOS.workflow(name=CHAT_WORKFLOW_NAME, serialization_type=_PORTABLE)
async def _chat_turn(turn: ChatTurn) -> None:
    if not _setup:
        raise RuntimeError("this worker was started without a Mastra and stream store for chat turns")
    setup = _setup[0]
    try:
        async with watched(turn["stream_id"]) as controller:
            await run_chat_turn(
                setup.mastra, setup.store, turn, abort_signal=controller.signal, chat_options=setup.options
            )
    finally:
        if setup.finished is not None:
            setup.finished(turn["stream_id"])


def start_chat_turn(stream_id: str, turn: dict[str, Any]) -> None:
    """Start a claimed turn's workflow here now (its id the stream id: a second start attaches)."""
    with SetWorkflowID(stream_id):
        DBOS.start_workflow(_chat_turn, turn)  # type: ignore[arg-type]


def enqueue_chat_turn(stream_id: str, turn: dict[str, Any]) -> None:
    """Put a claimed turn on the chat queue, whose limits hold across all workers."""
    with SetWorkflowID(stream_id):
        DBOS.enqueue_workflow(CHAT_QUEUE_NAME, _chat_turn, turn)  # type: ignore[arg-type]
