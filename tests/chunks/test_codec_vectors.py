"""``encode_chunk`` against every chunk the real Mastra recorded: same JSON, key for key.

The other conformance tests compare ``to_jsonable`` / ``chunk_to_dict`` output, which rebuilds
what ``omit_defaults`` dropped (an empty ``payload``); this one compares the bytes a server sends.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from agentstream.chunks import CHUNK_CLASSES, decode_chunk, encode_chunk
from tests.conformance import load, to_wire, vector_files

_KEYS = {
    "agent": ("expectedChunks",),
    "workflow": ("expectedChunks",),
    "aisdk": ("input",),
    "smooth": ("input",),
}


def _recorded(kind: str, path: Path) -> list[dict[str, Any]]:
    data = load(path)
    chunks: list[dict[str, Any]] = []
    for key in _KEYS[kind]:
        for item in data.get(key) or []:
            wire = to_wire(item)
            if isinstance(wire, dict) and wire.get("type") in CHUNK_CLASSES:
                chunks.append(wire)
    return chunks


def _as_built(value: Any) -> Any:
    """The struct as our producers build it: fields equal to their default are left to the default.

    A decoded struct holds fresh objects, which ``omit_defaults`` keeps; a built one holds the
    class's default object itself, which it drops. Only the built form shows that difference."""
    if not isinstance(value, msgspec.Struct):
        return value
    given: dict[str, Any] = {}
    for field in msgspec.structs.fields(value):
        current = getattr(value, field.name)
        required = field.default is msgspec.NODEFAULT and field.default_factory is msgspec.NODEFAULT
        default = field.default_factory() if field.default_factory is not msgspec.NODEFAULT else field.default
        if required or current != default:
            given[field.name] = _as_built(current)
    return type(value)(**given)


_CASES = [pytest.param(kind, path, id=f"{kind}/{path.stem}") for kind in _KEYS for path in vector_files(kind)]


@pytest.mark.parametrize(("kind", "path"), _CASES)
def test_encode_chunk_matches_the_recorded_wire(kind: str, path: Path) -> None:
    for index, wire in enumerate(_recorded(kind, path)):
        try:
            chunk = decode_chunk(wire)
        except ValueError:
            continue  # a malformed recorded input (smooth quirks): the decode tests cover those
        assert json.loads(encode_chunk(chunk)) == wire, f"chunk {index} ({wire['type']}), decoded"
        assert json.loads(encode_chunk(_as_built(chunk))) == wire, f"chunk {index} ({wire['type']}), built"


@pytest.mark.parametrize("chunk_type", ["abort", "workflow-canceled", "workflow-paused"])
def test_an_empty_payload_is_sent(chunk_type: str) -> None:
    # Mastra sends ``"payload": {}`` for these; ``omit_defaults`` once dropped it.
    chunk = CHUNK_CLASSES[chunk_type](run_id="r")
    assert json.loads(encode_chunk(chunk)) == {"type": chunk_type, "runId": "r", "payload": {}}


def test_the_vectors_hold_the_empty_payload_chunks() -> None:
    # The comparison above covers the empty payloads only if the recordings have them.
    seen = {
        w["type"] for kind in ("agent", "workflow") for p in vector_files(kind) for w in _recorded(kind, p)
    }
    assert {"abort", "workflow-canceled"} <= seen
