"""The chat turn producer: a ``ChatTurn``'s UI chunks (`turn_chunks`), and `run_chat_turn`, what a
worker runs for one (the job service's `write_job` with this producer). `TURN_CANCELLED` is how the
stream of a turn cancelled before it started ends."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

from .._abort import AbortSignal
from ..resumable import WORKER_LEASE_S, ChatTurn, ChatTurnOptions, StreamStore
from ..tracing import incoming_trace
from ._chat import ChatRequestError, handle_chat_stream
from ._jobs import end_cancelled, write_job

__all__ = ["TURN_CANCELLED", "end_cancelled_turn", "run_chat_turn", "turn_chunks"]

TURN_CANCELLED: tuple[Mapping[str, Any], ...] = ({"type": "abort"}, {"type": "finish"})
"""The last chunks of a chat turn cancelled before it started, as a cancelled running turn's end."""
_RUN_IDS = uuid.UUID("5b0c6f9e-3f4e-4f7a-9a51-2f1d7c0e8a11")  # namespace of turn run ids


async def end_cancelled_turn(store: StreamStore, stream_id: str) -> None:
    """End the stream of a chat turn cancelled before it started, as a cancelled running turn's
    stream ends (``abort``, ``finish``)."""
    await end_cancelled(store, stream_id, *TURN_CANCELLED)


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
    chunk (``STORE_FAILED``); only when even that cannot be written does the failure propagate (the
    stream is then left open, and its readers end when the writer lease, ``writer_lease_s``, that
    this turn holds while it runs, runs out)."""
    chunks = turn_chunks(mastra, turn, abort_signal=abort_signal, chat_options=chat_options)
    # A cancelled turn (its worker shutting down) is not a dead answer: the durable runner may run
    # it again elsewhere before the lease runs out.
    await write_job(
        store, turn["stream_id"], chunks, lease_s=writer_lease_s, on_worker=True, what="chat turn"
    )


async def turn_chunks(
    mastra: Any,
    turn: ChatTurn,
    *,
    abort_signal: AbortSignal | None = None,
    chat_options: Mapping[str, Any] | None = None,
) -> AsyncIterator[Any]:
    """The turn's answer as UI chunks (the chat producer); a request this process refuses (its
    Mastra lacks the agent, ...) is one ``error`` chunk."""
    options = dict(chat_options or {})
    # A re-run after a crash names its run as the first attempt did: the run id travels in chunks
    # already written (approvals, suspensions) and keys the run's snapshot.
    defaults = {
        "run_id": str(uuid.uuid5(_RUN_IDS, turn["stream_id"])),
        **(options.pop("default_options", None) or {}),
    }
    headers = {"traceparent": turn["traceparent"]} if turn["traceparent"] else {}
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
        yield {"type": "error", "errorText": str(exc)}
        return
    try:
        async for chunk in chunks:
            yield chunk
    finally:
        await chunks.aclose()  # type: ignore[attr-defined]


def _options(options: ChatTurnOptions) -> dict[str, Any]:
    known = ChatTurnOptions.__required_keys__
    return {key: value for key, value in options.items() if key in known}
