"""Answering a chat turn into a stream store: `run_chat_turn` (what a worker runs for a
``ChatTurn``) and `write_chunks` (UI chunks written positionally, in batches)."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

from .._abort import AbortSignal
from ..resumable import (
    WORKER_LEASE_S,
    ChatTurn,
    ChatTurnOptions,
    StreamExpiredError,
    StreamStore,
    in_process_appender,
    writing,
)
from ..tracing import incoming_trace
from ._chat import ChatRequestError, handle_chat_stream
from ._sse import encode_ui_chunk

__all__ = [
    "STORE_FAILED",
    "end_cancelled",
    "end_cancelled_turn",
    "end_with_error",
    "run_chat_turn",
    "write_chunks",
]

logger = logging.getLogger("agentstream.ai_sdk")
STORE_FAILED = "the answer was interrupted: the server could not record it (details are in the server log)"
"""The ``errorText`` of an answer whose recording failed (the stream store refused or lost it)."""
_RUN_IDS = uuid.UUID("5b0c6f9e-3f4e-4f7a-9a51-2f1d7c0e8a11")  # namespace of turn run ids


async def write_chunks(store: StreamStore, stream_id: str, chunks: AsyncIterator[Any], *, at: int = 0) -> int:
    """Write the UI chunks as they come, chunk *i* at number ``at + i`` (numbers already written
    are skipped); those produced while a write is in flight go in the next one (one round trip to
    Redis per batch, not per chunk). Returns how many chunks were produced.

    A store in this process (`in_process_appender`) is written as each chunk comes, in the
    producer's task: a second task woken per chunk (what batching needs) would cost more than the
    write itself, which is a list append."""
    append_now = in_process_appender(store)
    if append_now is not None:
        written = at
        async for chunk in chunks:
            append_now(stream_id, encode_ui_chunk(chunk), at=written)
            written += 1
        return written - at
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


async def end_with_error(store: StreamStore, stream_id: str, error_text: str) -> None:
    """End a stream whose writer cannot go on: an ``error`` chunk (after a ``start`` if the stream
    has no chunk yet), then the end, so its readers are told instead of left waiting. Written at
    the stream's length (safe to retry); a stream already finished or gone is left as it is."""
    try:
        written = await store.length(stream_id)
        chunks = ([] if written else [{"type": "start"}]) + [{"type": "error", "errorText": error_text}]
        await store.append(stream_id, *(_encode(chunk) for chunk in chunks), at=written)
        await store.finish(stream_id)
    except StreamExpiredError:
        logger.info("stream %s finished or expired before it could be ended with an error", stream_id)


async def run_chat_turn(
    mastra: Any,
    store: StreamStore,
    turn: ChatTurn,
    *,
    abort_signal: AbortSignal | None = None,
    chat_options: Mapping[str, Any] | None = None,
    writer_lease_s: float = WORKER_LEASE_S,
) -> None:
    """Answer ``turn`` with ``mastra``'s agent into ``store`` (from chunk 0, positionally), then
    finish the stream. ``chat_options`` are `handle_chat_stream`'s callables and defaults
    (``default_options``, ``experimental_transform``, ``on_error``, ``message_metadata``).

    A request the worker refuses (its Mastra lacks the agent, ...) becomes one ``error`` chunk. A
    stream that finished or expired meanwhile (another worker completed the turn, or the chat
    moved on) stops the run quietly, leaving the stream as it is. Any other failure (the store
    failed past its retries, or lost chunks already written) ends the stream with an ``error``
    chunk (`STORE_FAILED`); only when even that cannot be written does the failure propagate (the
    stream is then left open, and its readers end when the writer lease, ``writer_lease_s``, that
    this turn holds while it runs, runs out)."""
    stream_id = turn["stream_id"]
    # A cancelled turn (its worker shutting down) is not a dead answer: the durable runner may run
    # it again elsewhere before the lease runs out.
    async with writing(store, stream_id, lease_s=writer_lease_s, dead_on_error=False):
        try:
            gone = await _answer_turn(mastra, store, turn, abort_signal, chat_options)
        except Exception as exc:
            failure = exc.exceptions[0] if isinstance(exc, BaseExceptionGroup) and exc.exceptions else exc
            logger.error("chat turn %s failed while writing its stream", stream_id, exc_info=failure)
            await end_with_error(store, stream_id, STORE_FAILED)
            return
        if gone:
            logger.info("stream %s finished or expired before this turn did; stopped", stream_id)
        else:
            await store.finish(stream_id)


async def _answer_turn(
    mastra: Any,
    store: StreamStore,
    turn: ChatTurn,
    abort_signal: AbortSignal | None,
    chat_options: Mapping[str, Any] | None,
) -> bool:
    """Write the turn's answer; whether the stream was gone (finished or expired) meanwhile."""
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
    return gone


def _options(options: ChatTurnOptions) -> dict[str, Any]:
    known = ChatTurnOptions.__required_keys__
    return {key: value for key, value in options.items() if key in known}


def _encode(chunk: Mapping[str, Any]) -> bytes:
    return encode_ui_chunk(chunk)
