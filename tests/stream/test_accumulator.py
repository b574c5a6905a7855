"""`RunAccumulator`: the pure fold behind `ModelOutput`, checked against the recorded Mastra runs.

* the accumulator folded by hand (as the loop would read it) agrees with the facade's results;
* a run cut anywhere, encoded (`serialize_state`) and decoded (`restore_state`) into a second
  output that reads the rest, ends with the same results as the uncut run;
* the encoded state is JSON data, and decoding it rejects what is not a state.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import pytest

from agentstream.chunks import (
    Chunk,
    File,
    Goal,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    Source,
    StepFinish,
    StepStart,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallInputStreamingEnd,
    ToolCallInputStreamingStart,
    ToolResult,
    decode_chunk,
    to_jsonable,
)
from agentstream.stream import ModelOutput, RunAccumulator
from tests.conformance import load, to_wire, vector_files

R = "run-1"


def _vector_chunks(path: Path) -> list[Chunk]:
    return [decode_chunk(c) for c in to_wire(load(path)["expectedChunks"])]


_VECTORS = [pytest.param(p, id=p.stem) for p in vector_files("agent")]


async def _source(chunks: Iterable[Chunk]) -> AsyncIterator[Chunk]:
    for chunk in chunks:
        await asyncio.sleep(0)
        yield chunk


async def _settled(delayed: Any) -> tuple[bool, Any]:
    try:
        return True, to_jsonable(await delayed)
    except Exception as exc:
        return False, type(exc).__name__


_RESULTS = ("text", "usage", "total_usage", "tool_calls", "tool_results", "sources", "files", "finish_reason")


async def _results(output: ModelOutput) -> dict[str, Any]:
    await output.consume_stream()
    out = {name: await _settled(getattr(output, name)) for name in _RESULTS}
    ok, steps = await _settled(output.steps)
    out["steps"] = (ok, steps if not ok else [(s["text"], s["usage"], s["finish_reason"]) for s in steps])
    return out


def _fold_by_hand(chunks: Iterable[Chunk]) -> RunAccumulator:
    """The accumulator's API driven directly, without the facade (what the loop can do)."""
    acc = RunAccumulator(run_id=R)
    log = acc.text.log
    for chunk in chunks:
        if isinstance(chunk, (Source, File, ToolResult, ToolCallInputStreamingStart)):
            {Source: acc.fold_source, File: acc.fold_file, ToolResult: acc.fold_tool_result}.get(
                type(chunk), acc.fold_tool_input_start
            )(chunk)  # type: ignore[operator]
        elif isinstance(chunk, (ReasoningStart, ReasoningDelta, ReasoningEnd)):
            acc.fold_reasoning(chunk)
        elif isinstance(chunk, ToolCallDelta):
            chunk = acc.fold_tool_delta(chunk)
        elif isinstance(chunk, ToolCallInputStreamingEnd):
            log.append(chunk)
            synthetic = acc.fold_tool_input_end(chunk)
            if synthetic is not None:
                log.append(synthetic)
            continue
        elif isinstance(chunk, ToolCall):
            if not acc.fold_tool_call(chunk):
                continue
        elif isinstance(chunk, Goal):
            log.append(chunk)
            acc.fold_goal(chunk, len(log))
            continue
        elif isinstance(chunk, StepStart):
            acc.fold_step_start(chunk.payload.request)
        elif isinstance(chunk, StepFinish):
            result = acc.fold_step_finish(chunk)
            log.append(chunk)
            acc.close_step(result, len(log))
            continue
        log.append(chunk)
    return acc


@pytest.mark.parametrize("path", _VECTORS)
async def test_the_hand_folded_accumulator_agrees_with_the_facade(path: Path) -> None:
    chunks = _vector_chunks(path)
    output = ModelOutput(_source(chunks), run_id=R)
    await output.consume_stream()
    acc = _fold_by_hand(chunks)
    facade = output.accumulator
    assert acc.usage == facade.usage
    assert to_jsonable(acc.steps) == to_jsonable(facade.steps)
    assert to_jsonable(acc.tool_calls) == to_jsonable(facade.tool_calls)
    assert to_jsonable(acc.tool_results) == to_jsonable(facade.tool_results)
    assert acc.run_text() == facade.run_text()
    assert acc.reasoning_details() == facade.reasoning_details()
    assert to_jsonable(acc.sources) == to_jsonable(facade.sources)


@pytest.mark.parametrize("path", _VECTORS)
async def test_a_run_cut_anywhere_and_restored_ends_as_the_uncut_run(path: Path) -> None:
    chunks = _vector_chunks(path)
    whole = await _results(ModelOutput(_source(chunks), run_id=R))
    for cut in range(1, len(chunks)):
        first = ModelOutput(_source(chunks[:cut]), run_id=R)
        await first.consume_stream()
        state = json.loads(json.dumps(first.serialize_state()))  # JSON data, as a store keeps it
        if first.status != "running" or first.error is not None:
            continue  # that part ended the run (tripwire, error, suspension): nothing to continue
        second = ModelOutput(_source(chunks[cut:]), run_id=R)
        second.restore_state(state)
        assert await _results(second) == whole, f"cut after chunk {cut}"


async def test_the_loop_reads_the_step_in_flight() -> None:
    chunks = _vector_chunks(next(p for p in vector_files("agent") if p.stem == "tool-call-then-text"))
    end = next(i for i, c in enumerate(chunks) if isinstance(c, StepFinish))
    output = ModelOutput(_source(chunks[:end]), run_id=R)
    await output.consume_stream()
    acc = output.accumulator
    texts = "".join(c.payload.text for c in chunks[:end] if isinstance(c, TextDelta))
    assert acc.step_text == texts
    assert [c.payload.tool_call_id for c in acc.step_tool_calls] == [
        c.payload.tool_call_id for c in chunks[:end] if isinstance(c, ToolCall)
    ]
    assert acc.steps == [] and not acc.usage  # no step has finished: nothing counted yet


def test_the_step_text_read_chunk_by_chunk_is_the_text_read_at_once() -> None:
    """The loop reads the step's text while the step streams (each read scans only what was logged
    since the last): at every point, and across steps, it is the step's deltas joined."""
    acc = RunAccumulator(run_id=R)
    log = acc.text.log

    def delta(text: str) -> TextDelta:
        return decode_chunk(
            {"type": "text-delta", "runId": R, "from": "AGENT", "payload": {"id": "t", "text": text}}
        )  # type: ignore[return-value]

    seen: list[str] = []
    for step, words in enumerate([["a", "b", "c"], ["d", "", "e"]]):
        for word in words:
            log.append(delta(word))
            log.append(
                decode_chunk({"type": "abort", "runId": R, "from": "AGENT", "payload": {}})
            )  # not text
            seen.append(word)
            assert acc.step_text == "".join(seen)
            assert acc.step_text == "".join(seen)  # read twice, nothing new
        acc.text.close_step(len(log))
        seen = []
        assert acc.step_text == "", step
    acc.text.prior_step = "resumed "
    log.append(delta("f"))
    assert acc.step_text == "resumed f"


def test_restore_state_names_a_state_it_cannot_read() -> None:
    output = ModelOutput(_source([]), run_id=R)
    with pytest.raises(ValueError, match=r"restore_state: not a state written by serialize_state\(\).*steps"):
        output.restore_state({"steps": "not a list"})


async def test_a_state_written_by_the_old_serialize_state_still_resumes() -> None:
    # tests/data/legacy-output-state.json: serialize_state() of the hand-written format (before the
    # accumulator) after chunk ``cut`` of a recorded run. A run suspended before an upgrade resumes.
    legacy = json.loads((Path(__file__).parents[1] / "data" / "legacy-output-state.json").read_text())
    assert isinstance(legacy["state"]["text"], str)  # the old format indeed
    chunks = _vector_chunks(next(p for p in vector_files("agent") if p.stem == legacy["vector"]))
    whole = await _results(ModelOutput(_source(chunks), run_id=R))
    resumed = ModelOutput(_source(chunks[legacy["cut"] :]), run_id=R)
    resumed.restore_state(legacy["state"])
    assert await _results(resumed) == whole
