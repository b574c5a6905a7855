"""Chat turns run elsewhere: the `ChatTurn` a server hands to a `ChatRunner`.

The server claims the chat's stream, validates the request, dispatches the turn and answers the
client by following the stream; the runner (e.g. ``agentstream.durable.DurableChat``) gets the
turn to a process that calls ``agentstream.ai_sdk.run_chat_turn``, which writes the UI chunks
*positionally*, so a re-run after a crash writes none twice. A turn is JSON only: callables
(transforms, ``on_error``, message metadata, default options) are the worker's own configuration.
"""

from __future__ import annotations

from typing import Any, NotRequired, Protocol, TypedDict, runtime_checkable

__all__ = ["ChatRunner", "ChatTurn", "ChatTurnOptions"]


class ChatTurnOptions(TypedDict):
    """The route's JSON-able settings for `handle_chat_stream` (keyword arguments of the same name)."""

    version: str
    send_start: bool
    send_finish: bool
    send_reasoning: bool
    send_sources: bool
    send_goals: bool
    include_sub_agent_metadata: bool
    allow_system_messages: bool


class ChatTurn(TypedDict):
    """One chat answer to produce: everything a worker needs, JSON only.

    ``owner`` is the principal's owner key (who may resume a run this turn suspends), not the
    stream owner digest; ``traceparent`` (W3C) continues the caller's trace on the worker;
    ``request_context`` is the run's `RequestContext` the server built (``chat_route``'s hook), as
    JSON: the worker's run sees the same context the server would have given it."""

    agent_id: str
    body: dict[str, Any]
    chat_id: str
    stream_id: str
    owner: str | None
    traceparent: str | None
    options: ChatTurnOptions
    request_context: NotRequired[dict[str, Any]]


@runtime_checkable
class ChatRunner(Protocol):
    """Runs chat turns somewhere else (`chat_route(..., runner=...)`); the turn's chunks arrive
    through the shared stream store under ``turn["stream_id"]``."""

    async def dispatch(self, turn: ChatTurn) -> None:
        """Have the turn run (it may start later); returns once it is durably handed over."""
        ...

    async def cancel(self, stream_id: str) -> bool:
        """Stop the turn writing ``stream_id`` (a new answer for the chat replaces it); idempotent.
        Returns whether the turn had started: one that had ends its own stream; one that had not
        never will run, and the caller ends the stream (`end_cancelled`)."""
        ...
