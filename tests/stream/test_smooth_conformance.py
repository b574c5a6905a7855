"""Every recorded Mastra ``smoothStream`` vector (``tests/data/conformance/smooth``), run through ``smooth_stream``."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from agentstream.chunks import ChunkDecodeError, chunk_to_dict, decode_chunk
from agentstream.stream import Segmenter, js_regex, smooth_stream
from agentstream.stream._chunkers import INVALID_CHUNKING
from tests.conformance import load, to_wire, vector_files

# The Python equivalent of every detector function (`{"fn": JS_SOURCE}`) the vectors use.
DETECTORS: dict[str, Callable[[str], str | None]] = {
    "(buffer) => buffer.slice(0, 2)": lambda b: b[:2],
    "(buffer) => (buffer.length >= 3 ? buffer.slice(0, 3) : null)": lambda b: b[:3] if len(b) >= 3 else None,
    "(buffer) => buffer.slice(0, 4)": lambda b: b[:4],
    '(buffer) => (buffer.length >= 3 ? "xyz" : null)': lambda b: "xyz" if len(b) >= 3 else None,
    '(buffer) => (buffer.includes("|") ? buffer.slice(0, buffer.indexOf("|") + 1) : undefined)': (
        lambda b: b[: b.index("|") + 1] if "|" in b else None
    ),
}

VECTORS = vector_files("smooth")


def chunking_option(options: dict[str, Any]) -> Any:
    if "chunking" not in options:
        return "word"
    value = options["chunking"]
    if isinstance(value, dict):
        if "regex" in value:
            return js_regex(value["regex"], value["flags"])
        if "segmenter" in value:
            return Segmenter(value["segmenter"]["locale"], value["segmenter"]["granularity"])
        if "fn" in value:
            return DETECTORS[value["fn"]]
        if "raw" in value:
            return value["raw"]
    return value


def make_kwargs(options: dict[str, Any], trace: list[str]) -> dict[str, Any]:
    async def recording_sleep(seconds: float) -> None:
        ms = seconds * 1000
        trace.append(f"wait:{round(ms) if abs(ms - round(ms)) < 1e-9 else ms}")

    delay = options["delayInMs"] if "delayInMs" in options else 10
    return {"delay_in_ms": delay, "chunking": chunking_option(options), "sleep": recording_sleep}


async def run(
    inputs: list[Any], kwargs: dict[str, Any], trace: list[str]
) -> tuple[list[Any], BaseException | None]:
    async def source() -> AsyncIterator[Any]:
        for item in inputs:
            yield decode_chunk(item) if isinstance(item, dict) else item

    out: list[Any] = []
    error: BaseException | None = None
    try:
        async for chunk in smooth_stream(**kwargs)(source()):
            trace.append("emit")
            out.append(chunk)
    except Exception as exc:
        error = exc
    return out, error


@pytest.mark.parametrize("path", VECTORS, ids=[p.stem for p in VECTORS])
async def test_vector(path: Path) -> None:
    vector = load(path)
    trace: list[str] = []
    inputs = [to_wire(c) for c in vector["input"]]
    expected_error = vector.get("expectedError")
    if vector["options"].get("chunking", "word") is None:
        # Mastra crashes on `"segment" in null` with V8's own message; we give Mastra's friendly one.
        with pytest.raises(TypeError, match=re.escape(INVALID_CHUNKING)):
            smooth_stream(**make_kwargs(vector["options"], trace))
        return
    if expected_error and expected_error["phase"] == "construct":
        with pytest.raises(TypeError, match=re.escape(expected_error["message"])):
            smooth_stream(**make_kwargs(vector["options"], trace))
        return
    if vector.get("quirk"):
        await check_quirk(vector, inputs)
        return
    decoded = [decode_chunk(c) for c in inputs]
    out, error = await run(decoded, make_kwargs(vector["options"], trace), trace)
    assert [chunk_to_dict(c) for c in out] == [to_wire(c) for c in vector["expected"]]
    assert trace == vector["expectedTrace"]
    if expected_error:
        assert isinstance(error, TypeError), error
        assert str(error) == expected_error["message"]
    else:
        assert error is None
    # Non-text chunks are passed on as the very same objects.
    identities = {id(c) for c in decoded}
    for chunk in out:
        if chunk.type not in ("text-delta", "reasoning-delta"):
            assert id(chunk) in identities


def _texts(chunks: list[Any]) -> str:
    return "".join(c.payload.text for c in chunks if c.type in ("text-delta", "reasoning-delta"))


async def check_quirk(vector: dict[str, Any], inputs: list[dict[str, Any]]) -> None:
    """Malformed input: a clear error naming the field, raised after everything received before it."""
    bad = next(i for i, c in enumerate(inputs) if not _well_formed(c))
    good_text = "".join(c["payload"]["text"] for c in inputs[:bad])
    field = "payload" if "payload" not in inputs[bad] else "payload.text"
    # 1. Through the codec: decoding the bad line fails, naming the field.
    trace: list[str] = []
    out, error = await run(inputs, make_kwargs(vector["options"], trace), trace)
    assert isinstance(error, ChunkDecodeError)
    assert str(error).startswith(field + ":"), str(error)
    assert _texts(out) == good_text
    # 2. A malformed struct built without validation reaches the transform itself.
    from agentstream.chunks import TextDelta, TextDeltaPayload

    raw = inputs[bad]
    if "payload" not in raw:
        broken = TextDelta(run_id=raw["runId"], payload=None)  # type: ignore[arg-type]
    else:
        broken = TextDelta(
            run_id=raw["runId"],
            payload=TextDeltaPayload(id=raw["payload"]["id"], text=raw["payload"].get("text")),
        )
    trace = []
    structs = [decode_chunk(c) for c in inputs[:bad]] + [broken]
    out, error = await run(structs, make_kwargs(vector["options"], trace), trace)
    assert isinstance(error, TypeError)
    assert f"'{field}'" in str(error), str(error)
    assert _texts(out) == good_text


def _well_formed(chunk: dict[str, Any]) -> bool:
    return isinstance(chunk.get("payload"), dict) and isinstance(chunk["payload"].get("text"), str)


def test_every_detector_source_is_in_the_table() -> None:
    for path in VECTORS:
        chunking = load(path)["options"].get("chunking")
        if isinstance(chunking, dict) and "fn" in chunking:
            assert chunking["fn"] in DETECTORS, path.name
