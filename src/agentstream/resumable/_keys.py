"""The keys a `StreamStore` keeps active streams under, one namespace per kind of stored thing.

A store's ``chat_id`` argument is a key, not a client's id: every kind derives its keys here (and
``agentstream.background`` its ``task:<task id>``), so no id a client chooses can produce another
kind's key (issue 22: a chat whose id was a workflow run's key took that run's stream). Each key is
``<kind>:`` then the kind's fields; the kind ends at the first ``:`` and never holds one, and a
key of several fields gives every field but the last its length, so two different tuples of ids
never give one key, whatever characters the ids hold (separators, NUL, ``:``, any length).
"""

from __future__ import annotations

__all__ = ["STREAM_KEY_KINDS", "chat_stream_key", "mastra_workflow_stream_key", "workflow_stream_key"]

STREAM_KEY_KINDS = ("chat", "workflow-run", "mastra-workflow-run", "task")
"""Every kind of stream key (``task`` is ``agentstream.background``'s): distinct, none holds ``:``."""


def chat_stream_key(chat_id: str) -> str:
    """The key a chat's active answer is claimed under (what `StreamStore.start` calls ``chat_id``)."""
    return f"chat:{chat_id}"


def workflow_stream_key(workflow_id: str, run_id: str) -> str:
    """The key a workflow run's active leg is claimed under: no chat id and no other
    ``(workflow, run)`` pair gives it."""
    return f"workflow-run:{len(workflow_id)}:{workflow_id}:{run_id}"


def mastra_workflow_stream_key(workflow_id: str, run_id: str) -> str:
    """The key a workflow run's leg streamed by the Mastra API (Mastra's workflow chunks, not UI
    chunks) is claimed under: distinct from `workflow_stream_key`, whose readers expect UI chunks."""
    return f"mastra-workflow-run:{len(workflow_id)}:{workflow_id}:{run_id}"
