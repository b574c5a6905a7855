"""Stream keys: one namespace per kind, so no client-chosen id gives another kind's key (issue 22, item 2)."""

from __future__ import annotations

import itertools

from agentstream.background._shared import task_stream_key
from agentstream.resumable import STREAM_KEY_KINDS, chat_stream_key, workflow_stream_key

HOSTILE = [
    "",
    ":",
    "::",
    "1:",
    "\x1f",
    "\x00",
    "a\x00b",
    "é",
    "𝄞\u202e",
    "a" * 10_000,
    "chat:x",
    "task:x",
    "x",
    "workflow-run:1:w:r",
    "workflow-run\x1fw\x1fr",  # the first round's workflow key
    "1:w:r",
    "w",
    "r",
    "w:r",
]


def test_no_two_things_of_any_kinds_share_a_key() -> None:
    owners: dict[str, object] = {}
    things = [("chat", i) for i in HOSTILE]
    things += [("task", i) for i in HOSTILE]
    things += [("workflow-run", pair) for pair in itertools.product(HOSTILE, repeat=2)]
    for kind, ident in things:
        if kind == "chat":
            key = chat_stream_key(ident)  # type: ignore[arg-type]
        elif kind == "task":
            key = task_stream_key(ident)  # type: ignore[arg-type]
        else:
            key = workflow_stream_key(*ident)  # type: ignore[misc]
        assert key.split(":", 1)[0] == kind
        assert owners.setdefault(key, (kind, ident)) == (kind, ident), f"{(kind, ident)!r} collides"
    assert len(owners) == len(things)


def test_the_kinds_are_distinct_and_end_at_their_first_colon() -> None:
    assert len(set(STREAM_KEY_KINDS)) == len(STREAM_KEY_KINDS)
    assert all(":" not in kind for kind in STREAM_KEY_KINDS)


def test_another_kinds_exact_key_as_a_chat_id_is_still_a_chat_key() -> None:
    run_key = workflow_stream_key("w", "r1")
    assert chat_stream_key(run_key) != run_key
    assert chat_stream_key(task_stream_key("t")) != task_stream_key("t")
