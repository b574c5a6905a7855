"""Answering a chat turn into a stream store: `run_chat_turn` (what a worker runs for a
``ChatTurn``) and `write_chunks` (UI chunks written positionally, in batches)."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

from .._abort import AbortSignal
from ..resumable import ChatTurn, ChatTurnOptions, StreamExpiredError, StreamStore
from ..tracing import incoming_trace
from ._chat import ChatRequestError, handle_chat_stream
from ._sse import encode_ui_chunk

__all__ = ["end_cancelled", "end_cancelled_turn", "run_chat_turn", "write_chunks"]

logger = logging.getLogger("agentstream.ai_sdk")
_RUN_IDS = uuid.UUID("5b0c6f9e-3f4e-4f7a-9a51-2f1d7c0e8a11")  # namespace of turn run ids


async def write_chunks(store: StreamStore, stream_id: str, chunks: AsyncIterator[Any], *, at: int = 0) -> int:
    """Write the UI chunks as they come, chunk *i* at number ``at + i`` (numbers already written
    are skipped); those produced while a write is in flight go in the next one (one round trip to
    Redis per batch, not per chunk). Returns how many chunks were produced."""
    pending: list[bytes] = []
    ready = asyncio.Event()
    ended = False
    written = at

    async def pull() -> None:
        nonlocal ended
        try:
            async for chunk in chunks:
                pending.append(encode_ui_chunk(chunk))
                ready.set()
        finally:
            ended = True
            ready.set()

    async def push() -> None:
        nonlocal written
        while True:
            await ready.wait()
            ready.clear()
            if pending:
                batch = pending.copy()
                pending.clear()
                await store.append(stream_id, *batch, at=written)
                written += len(batch)
            if ended and not pending:
                return

    async with asyncio.TaskGroup() as group:
        group.create_task(pull())
        group.create_task(push())
    return written - at


async def end_cancelled(store: StreamStore, stream_id: str, *ending: Mapping[str, Any]) -> None:
    """End the stream of a run cancelled before it started (no process will ever write it):
    ``start`` (unless a chunk is there already, from an attempt before a crash), the ``ending``
    chunks, and the end. Written at the stream's length: nothing else writes it any more."""
    written = await store.length(stream_id)
    chunks = ([] if written else [{"type": "start"}]) + list(ending)
    try:
        await store.append(stream_id, *(_encode(chunk) for chunk in chunks), at=written)
        await store.finish(stream_id)
    except StreamExpiredError:
        logger.info("stream %s finished or expired before its cancelled run was ended", stream_id)


async def end_cancelled_turn(store: StreamStore, stream_id: str) -> None:
    """End the stream of a chat turn cancelled before it started, as a cancelled running turn's
    stream ends (``abort``, ``finish``)."""
    await end_cancelled(store, stream_id, {"type": "abort"}, {"type": "finish"})


async def run_chat_turn(
    mastra: Any,
    store: StreamStore,
    turn: ChatTurn,
    *,
    abort_signal: AbortSignal | None = None,
    chat_options: Mapping[str, Any] | None = None,
) -> None:
    """Answer ``turn`` with ``mastra``'s agent into ``store`` (from chunk 0, positionally), then
    finish the stream. ``chat_options`` are `handle_chat_stream`'s callables and defaults
    (``default_options``, ``experimental_transform``, ``on_error``, ``message_metadata``).

    A request the worker refuses (its Mastra lacks the agent, ...) becomes one ``error`` chunk. A
    stream that finished or expired meanwhile (another worker completed the turn, or the chat
    moved on) stops the run quietly, leaving the stream as it is."""
    stream_id = turn["stream_id"]
    options = dict(chat_options or {})
    # A re-run after a crash names its run as the first attempt did: the run id travels in chunks
    # already written (approvals, suspensions) and keys the run's snapshot.
    defaults = {
        "run_id": str(uuid.uuid5(_RUN_IDS, stream_id)),
        **(options.pop("default_options", None) or {}),
    }
    gone = False
    headers = {"traceparent": turn["traceparent"]} if turn["traceparent"] else {}
    try:
        try:
            with incoming_trace(headers):
                chunks = await handle_chat_stream(
                    mastra=mastra,
                    agent_id=turn["agent_id"],
                    params=turn["body"],
                    owner=turn["owner"],
                    abort_signal=abort_signal,
                    default_options=defaults,
                    request_context=turn.get("request_context"),
                    **_options(turn["options"]),
                    **options,
                )
        except ChatRequestError as exc:
            await store.append(stream_id, _encode({"type": "error", "errorText": str(exc)}), at=0)
        else:
            try:
                await write_chunks(store, stream_id, chunks)
            finally:
                await chunks.aclose()  # type: ignore[attr-defined]
    except* StreamExpiredError:
        gone = True
    if gone:
        logger.info("stream %s finished or expired before this turn did; stopped", stream_id)
    else:
        await store.finish(stream_id)


def _options(options: ChatTurnOptions) -> dict[str, Any]:
    known = ChatTurnOptions.__required_keys__
    return {key: value for key, value in options.items() if key in known}


def _encode(chunk: Mapping[str, Any]) -> bytes:
    return encode_ui_chunk(chunk)
