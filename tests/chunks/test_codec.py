from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agentstream.chunks import (
    CHUNK_CLASSES,
    BackgroundTaskCompleted,
    BackgroundTaskCompletedPayload,
    ChunkDecodeError,
    ChunkFrom,
    DataChunk,
    Error,
    ErrorPayload,
    File,
    FilePayload,
    ObjectResult,
    TextDelta,
    TextDeltaPayload,
    ToolResult,
    ToolResultPayload,
    UnknownChunk,
    chunk_from_dict,
    chunk_to_dict,
    decode_chunk,
    encode_chunk,
)
from tests.conformance import load, to_wire, vector_files


def _vector_chunks() -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for kind, keys in (("smooth", ("input", "expected")), ("aisdk", ("input",))):
        for path in vector_files(kind):
            vector = load(path)
            for key in keys:
                for i, raw in enumerate(vector.get(key) or []):
                    out.append((f"{kind}/{path.stem}:{key}[{i}]", to_wire(raw)))
    return out


def _well_formed(raw: dict[str, Any]) -> bool:
    payload = raw.get("payload")
    if raw.get("type", "").startswith("data-"):
        return True
    if raw.get("type") in ("object", "object-result"):
        return True
    if not isinstance(payload, dict):
        return False
    if raw.get("type") in ("text-delta", "reasoning-delta"):
        return isinstance(payload.get("text"), str) and isinstance(payload.get("id"), str)
    if raw.get("type") in ("step-finish", "finish"):
        return all(isinstance(payload.get(k), dict) for k in ("stepResult", "output", "metadata"))
    return True


VECTOR_CHUNKS = _vector_chunks()


@pytest.mark.parametrize(("where", "raw"), VECTOR_CHUNKS, ids=[w for w, _ in VECTOR_CHUNKS])
def test_vector_chunks_round_trip_or_fail_clearly(where: str, raw: dict[str, Any]) -> None:
    if _well_formed(raw):
        chunk = decode_chunk(json.dumps(raw))
        assert json.loads(encode_chunk(chunk)) == raw
        assert chunk_to_dict(chunk) == raw
        assert chunk_from_dict(raw) == chunk
    else:
        with pytest.raises(ChunkDecodeError) as info:
            decode_chunk(raw)
        assert info.value.path.startswith("payload")


def test_every_agent_chunk_type_of_the_spec_has_a_class() -> None:
    spec = Path(__file__).resolve().parents[1] / "data" / "docs" / "mastra-spec.md"
    table = spec.read_text(encoding="utf-8").split("### 1.2")[1].split("### 1.3")[0]
    types = {line.split("`")[1] for line in table.splitlines() if line.startswith("| `")}
    types -= {"data-*", "type"}
    assert types - set(CHUNK_CLASSES) == set()


def test_error_names_path_expected_and_found() -> None:
    bad = {"type": "text-delta", "runId": "r", "from": "AGENT", "payload": {"id": "t", "text": 5}}
    with pytest.raises(ChunkDecodeError, match=r"^payload\.text: expected str, got int$"):
        decode_chunk(bad)


def test_missing_field_and_bad_from_and_bad_json() -> None:
    with pytest.raises(ChunkDecodeError, match=r"payload\.id: expected a value"):
        decode_chunk({"type": "text-delta", "runId": "r", "from": "AGENT", "payload": {"text": "x"}})
    with pytest.raises(ChunkDecodeError, match=r"^from: expected one of 'AGENT'.*got 'agent'"):
        decode_chunk({"type": "abort", "runId": "r", "from": "agent", "payload": {}})
    with pytest.raises(ChunkDecodeError, match=r"expected valid JSON"):
        decode_chunk(b'{"type": ')
    with pytest.raises(ChunkDecodeError, match=r"^type: expected str, got nothing"):
        decode_chunk({"payload": {}})
    with pytest.raises(ChunkDecodeError, match=r"^payload: expected an object, got null"):
        decode_chunk({"type": "abort", "runId": "r", "from": "AGENT", "payload": None})


def test_unknown_type_raises_or_is_kept_verbatim() -> None:
    raw = {"type": "future-thing", "runId": "r", "from": "AGENT", "payload": {"x": [1, None]}, "z": None}
    with pytest.raises(ChunkDecodeError, match=r"^type: expected a known chunk type, got 'future-thing'"):
        decode_chunk(raw)
    chunk = decode_chunk(json.dumps(raw), unknown="keep")
    assert isinstance(chunk, UnknownChunk) and chunk.type == "future-thing"
    assert json.loads(encode_chunk(chunk)) == raw


def test_optional_keys_are_absent_not_null_and_from_is_spelled_from() -> None:
    chunk = TextDelta(run_id="r", from_=ChunkFrom.AGENT, payload=TextDeltaPayload(id="t", text="hi"))
    assert (
        encode_chunk(chunk)
        == b'{"type":"text-delta","payload":{"id":"t","text":"hi"},"runId":"r","from":"AGENT"}'
    )


def test_null_results_survive_and_unset_any_is_absent() -> None:
    chunk = ToolResult(
        run_id="r",
        from_=ChunkFrom.AGENT,
        payload=ToolResultPayload(tool_call_id="c", tool_name="t", result=None),
    )
    assert json.loads(encode_chunk(chunk))["payload"] == {"toolCallId": "c", "toolName": "t", "result": None}


def test_dates_bytes_and_exceptions_on_the_wire() -> None:
    done = BackgroundTaskCompleted(
        payload=BackgroundTaskCompletedPayload(
            task_id="t1",
            tool_name="research",
            tool_call_id="c1",
            agent_id="a",
            result={"ok": True},
            run_id="r",
            completed_at=datetime(2024, 1, 1, 0, 0, 1, 234567, tzinfo=UTC),
        )
    )
    wire = json.loads(encode_chunk(done))
    assert wire["payload"]["completedAt"] == "2024-01-01T00:00:01.234Z"
    assert "runId" not in wire and "from" not in wire
    back = decode_chunk(json.dumps(wire))
    assert isinstance(back, BackgroundTaskCompleted)
    assert back.payload.completed_at == datetime(2024, 1, 1, 0, 0, 1, 234000, tzinfo=UTC)

    file = File(run_id="r", from_=ChunkFrom.AGENT, payload=FilePayload(data=b"hello", mime_type="text/plain"))
    assert json.loads(encode_chunk(file))["payload"]["data"] == "aGVsbG8="

    err = Error(run_id="r", from_=ChunkFrom.AGENT, payload=ErrorPayload(error=TimeoutError("too slow")))
    assert json.loads(encode_chunk(err))["payload"]["error"] == {
        "name": "TimeoutError",
        "message": "too slow",
    }


def test_data_and_object_chunks() -> None:
    data = decode_chunk({"type": "data-progress", "data": {"pct": 50}, "transient": True})
    assert data == DataChunk(type="data-progress", data={"pct": 50}, transient=True)
    with pytest.raises(ValueError, match="must start with 'data-'"):
        DataChunk(type="progress", data=1)
    obj = decode_chunk({"type": "object-result", "runId": "r", "from": "AGENT", "object": {"a": 1}})
    assert isinstance(obj, ObjectResult) and obj.object == {"a": 1}


def test_chunks_are_immutable_and_matchable() -> None:
    chunk = decode_chunk(
        {"type": "text-delta", "runId": "r", "from": "AGENT", "payload": {"id": "t", "text": "a"}}
    )
    with pytest.raises(AttributeError):
        chunk.run_id = "x"  # type: ignore[misc, union-attr]
    match chunk:
        case TextDelta(payload=TextDeltaPayload(text=text)):
            assert text == "a"
        case _:
            pytest.fail("not matched")
