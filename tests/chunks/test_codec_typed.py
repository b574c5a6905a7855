"""`decode_chunk` on JSON decodes in one typed pass; whatever that pass cannot keep goes the dict way.

The one-pass decoder and the dict path (`chunk_from_dict` on the parsed JSON) must agree on every
input: the same chunk (class and fields, extras included) or the same `ChunkDecodeError` message.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agentstream.chunks import ChunkDecodeError, chunk_from_dict, decode_chunk, encode_chunk
from tests.chunks.test_codec import _vector_chunks

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from bench_chunks import realistic_mix

BASE = {"runId": "r", "from": "AGENT"}


def _both(raw: Any) -> tuple[Any, Any]:
    """(typed pass on the JSON bytes, dict path on the parsed JSON): a chunk or an error message."""
    text = json.dumps(raw).encode()
    try:
        typed: Any = decode_chunk(text)
    except ChunkDecodeError as exc:
        typed = str(exc)
    try:
        via_dict: Any = chunk_from_dict(json.loads(text))
    except ChunkDecodeError as exc:
        via_dict = str(exc)
    return typed, via_dict


@pytest.mark.parametrize(("where", "raw"), _vector_chunks())
def test_vector_chunks_decode_alike(where: str, raw: dict[str, Any]) -> None:
    typed, via_dict = _both(raw)
    assert typed == via_dict
    assert type(typed) is type(via_dict)


def test_the_realistic_mix_decodes_alike_and_round_trips() -> None:
    for raw in realistic_mix(80):
        typed, via_dict = _both(raw)
        assert typed == via_dict
        assert json.loads(encode_chunk(typed)) == raw


@pytest.mark.parametrize(
    "raw",
    [
        {"type": "text-delta", **BASE, "payload": {"id": "t", "text": "x", "future": 1}, "trace": {"a": 1}},
        {"type": "tool-call", **BASE, "payload": {"toolCallId": "c", "toolName": "w", "args": {}, "x": [1]}},
        {"type": "text-delta", **BASE, "~extra": {"a": 1}, "payload": {"id": "t", "text": "x"}},
        {"type": "text-delta", **BASE, "payload": {"id": "t", "text": "x", "~extra": {"b": 2}}},
        {"type": "data-progress", "data": {"pct": 5}, "more": True},
        {"type": "object", **BASE, "object": {"a": 1}, "late": 2},
    ],
)
def test_keys_no_class_models_survive_the_bytes_path(raw: dict[str, Any]) -> None:
    typed, via_dict = _both(raw)
    assert typed == via_dict
    assert json.loads(encode_chunk(typed)) == raw


@pytest.mark.parametrize(
    "raw",
    [
        {"type": "text-delta", **BASE, "payload": {"id": "t", "text": 3}},
        {"type": "text-delta", **BASE, "payload": {"text": "x"}},
        {"type": "text-delta", "runId": "r", "from": "agent", "payload": {"id": "t", "text": "x"}},
        {"type": "text-delta", **BASE, "payload": None},
        {"type": "text-delta", **BASE, "payload": [1]},
        {"type": "tool-call", **BASE, "payload": {"toolCallId": 1, "toolName": "w", "args": {}}},
        {"type": "future-thing", **BASE},
        {**BASE, "payload": {}},
        {"type": 5},
        [1, 2],
        "text-delta",
    ],
)
def test_errors_are_worded_as_by_the_dict_path(raw: Any) -> None:
    typed, via_dict = _both(raw)
    assert isinstance(typed, str)
    assert typed == via_dict


def test_lone_surrogates_and_bad_json_still_decode_or_fail_clearly() -> None:
    chunk = decode_chunk(
        b'{"type":"text-delta","runId":"r","from":"AGENT","payload":{"id":"t","text":"\\ud83d"}}'
    )
    assert chunk.payload.text == "\ud83d"  # type: ignore[union-attr]
    with pytest.raises(ChunkDecodeError, match="expected valid JSON"):
        decode_chunk(b'{"type": "text-delta",')
