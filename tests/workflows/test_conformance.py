"""Every recorded ``@mastra/core`` workflow run (``conformance/workflow/*.json``) replayed through ``run.stream``.

Compared as recorded, every key: every chunk (agent chunks forwarded by an agent step: type, content,
reasons and usage), the awaited result, status and usage, what a late subscriber replays, the resume
leg, and the AI SDK UI chunks of ``to_ai_sdk_stream(output, from_="workflow")`` (also for the resume
leg). The few deliberate divergences are listed in `DIVERGENCES`, each tested by `test_divergence`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from agentstream.ai_sdk import to_ai_sdk_stream
from agentstream.chunks import chunk_to_dict
from agentstream.stream import Usage
from agentstream.workflows import Run, WorkflowRunOutput
from tests.conformance import load, params, to_wire, vector_files

from .vector_workflows import FROZEN_MS, Harness, build

VECTORS = vector_files("workflow")
_ID = re.compile(r"^<id:\d+>$")
_CONTENT = {
    "text-start",
    "text-delta",
    "text-end",
    "tool-call",
    "tool-result",
    "tool-error",
    "tool-call-input-streaming-start",
    "tool-call-delta",
    "tool-call-input-streaming-end",
}


def _matches(expected: Any, actual: Any, path: str = "") -> None:
    """``actual`` equals ``expected`` modulo normalised ids (``<id:N>`` in the recording); every key,
    errors included."""
    if isinstance(expected, str) and _ID.match(expected):
        assert isinstance(actual, str) and actual, path
        return
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{path}: expected a dict, got {actual!r}"
        assert set(expected) == set(actual), f"{path}: keys {sorted(expected)} != {sorted(actual)}"
        for key in expected:
            _matches(expected[key], actual[key], f"{path}.{key}")
        return
    if isinstance(expected, list):
        assert isinstance(actual, list) and len(expected) == len(actual), (
            f"{path}: {expected!r} != {actual!r}"
        )
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            _matches(e, a, f"{path}[{i}]")
        return
    assert expected == actual, f"{path}: {expected!r} != {actual!r}"


def _agent_chunk_matches(expected: dict[str, Any], actual: dict[str, Any], where: str) -> None:
    """A chunk of the agent inside an agent step: type, content, reasons and usage (its bookkeeping,
    ids and timestamps may differ, as in the agent vectors)."""
    assert actual["type"] == expected["type"], where
    kind = expected["type"]
    if kind in ("step-finish", "finish"):
        for key in ("reason", "isContinued"):
            assert actual["payload"]["stepResult"].get(key) == expected["payload"]["stepResult"].get(key), (
                where
            )
        assert actual["payload"]["output"]["usage"] == expected["payload"]["output"]["usage"], where
    elif kind in _CONTENT:
        _matches(expected["payload"], actual["payload"], where)


def _chunks_match(expected: list[dict[str, Any]], actual: list[dict[str, Any]], leg: str) -> None:
    assert [c["type"] for c in actual] == [c["type"] for c in expected], leg
    for i, (exp, act) in enumerate(zip(expected, actual, strict=True)):
        where = f"{leg} chunk[{i}] {exp['type']}"
        inner = exp.get("payload", {}).get("output") if exp["type"] == "workflow-step-output" else None
        if isinstance(inner, dict) and inner.get("from") == "AGENT":
            outer_exp = {k: v for k, v in exp["payload"].items() if k != "output"}
            outer_act = {k: v for k, v in act["payload"].items() if k != "output"}
            _matches(outer_exp, outer_act, where)
            _agent_chunk_matches(inner, act["payload"]["output"], where)
        else:
            _matches(exp, act, where)


# ------------------------------------------------------------------------------------- divergences
# The deliberate divergences from the recordings, each argued in docs/decisions/issue-23-divergences.md.
# Every other expectation is compared as recorded. A divergence is the one edit of a recording it
# names: `test_divergence` runs the vector with exactly that edit and must pass, and the vector as
# recorded is an expected failure (strict) where the edit touches it, so a divergence that stops
# being one fails the run.


def _late_subscribers_see_finish(vector: dict[str, Any]) -> None:
    """Mastra's replay leaves out ``workflow-finish`` (its WorkflowRunOutput emits the finish without
    buffering it); ours replays it: a late subscriber needs to know how the run ended."""
    vector["lateSubscriberChunkTypes"].append("workflow-finish")
    if vector.get("resume"):
        vector["resume"]["lateSubscriberChunkTypes"].append("workflow-finish")


def _branch_output_without_undefined(vector: dict[str, Any]) -> None:
    """Mastra's branch output has a key (holding ``undefined``) for each branch that did not run, so
    the recorded step's ``Object.keys`` lists them; Python has no ``undefined``: ours holds the
    branches that ran (as the recording's own JSON shows them)."""

    def fix(value: Any) -> None:
        if isinstance(value, dict):
            if value.get("branches") == ["negative", "big", "odd"]:
                value["branches"] = ["big", "odd"]
            for v in value.values():
                fix(v)
        elif isinstance(value, list):
            for v in value:
                fix(v)

    fix(vector)


def _custom_chunks_alike_on_resume(vector: dict[str, Any]) -> None:
    """Inside Mastra's ``resumeStream`` a ``writer.custom`` chunk arrives bare (no runId, no from),
    unlike the first stream's; ours carry them in both legs."""
    for chunk in vector["resume"]["expectedChunks"]:
        if chunk["type"].startswith("data-"):
            chunk["runId"] = "run-1"
            chunk["from"] = "WORKFLOW"


@dataclass(frozen=True)
class Divergence:
    edit: Callable[[dict[str, Any]], None]
    vectors: frozenset[str] | None
    """The vectors it edits (None: every one)."""
    checks: frozenset[str]
    """What the edit changes: ``chunks`` (the run's chunks and result), ``aisdk`` (the UI chunks),
    ``late`` (what a late subscriber replays)."""


DIVERGENCES: dict[str, Divergence] = {
    "late-subscriber-sees-finish": Divergence(_late_subscribers_see_finish, None, frozenset({"late"})),
    "branch-output-without-undefined": Divergence(
        _branch_output_without_undefined, frozenset({"branch"}), frozenset({"chunks", "aisdk"})
    ),
    "custom-chunks-alike-on-resume": Divergence(
        _custom_chunks_alike_on_resume, frozenset({"suspend-resume"}), frozenset({"chunks"})
    ),
}


def _diverges(name: str, check: str) -> list[str]:
    return [
        key
        for key, d in DIVERGENCES.items()
        if check in d.checks and (d.vectors is None or name in d.vectors)
    ]


def _as_recorded(check: str) -> list[Any]:
    """The vectors, each an expected failure where a divergence edits what ``check`` compares."""
    out = []
    for param in params("workflow", VECTORS):
        (path,) = param.values
        diverging = _diverges(path.stem, check)
        marks = (
            [pytest.mark.xfail(reason=f"divergence {', '.join(diverging)}", strict=True)] if diverging else []
        )
        out.append(pytest.param(path, id=path.stem, marks=[*param.marks, *marks]))
    return out


# ------------------------------------------------------------------------------------- running


async def _start(vector: dict[str, Any]) -> tuple[Harness, Run]:
    harness = build(vector)

    async def sleep(seconds: float) -> None:
        harness.sleeps.append(seconds)

    run = await harness.workflow.create_run("run-1", clock=lambda: FROZEN_MS, sleep=sleep)
    return harness, run


async def _read(harness: Harness, run: Run, output: WorkflowRunOutput) -> list[dict[str, Any]]:
    cancel: asyncio.Task[None] | None = None
    if harness.cancel_when_running:

        async def cancel_once_running() -> None:
            await harness.running.wait()
            await run.cancel()

        cancel = asyncio.get_running_loop().create_task(cancel_once_running())
    chunks = [chunk_to_dict(c) async for c in output.full_stream]
    if cancel is not None:
        await cancel
    return chunks


async def _check_leg(
    output: WorkflowRunOutput,
    chunks: list[dict[str, Any]],
    expected: dict[str, Any],
    leg: str,
    *,
    run: bool = True,
    late: bool = False,
) -> None:
    if run:
        _chunks_match(to_wire(expected["expectedChunks"]), chunks, leg)
        results = to_wire(expected["results"])
        result = await output.result
        _matches(results["result"], result.to_dict(), f"{leg} results.result")
        assert output.status == results["status"], leg
        assert result.status == results["status"], leg
        usage = await output.usage
        assert isinstance(usage, Usage) and usage.to_wire() == results["usage"], leg
    if late:
        replayed = [c.type async for c in output.full_stream]
        assert replayed == expected["lateSubscriberChunkTypes"], f"{leg} late subscriber"


async def _run_vector(vector: dict[str, Any], *, chunks: bool = True, late: bool = False) -> None:
    """Run the vector; compare its chunks, result, status and usage (``chunks``) and what a late
    subscriber replays (``late``), in both legs."""
    harness, run = await _start(vector)
    output = run.stream(input_data=vector["inputData"])
    read = await _read(harness, run, output)
    await _check_leg(output, read, vector, "first stream", run=chunks, late=late)
    if vector["name"] == "step-retries":
        assert harness.sleeps == [0.005, 0.005]
    resume = vector.get("resume")
    if resume:
        args = resume["resumeArgs"]
        leg = run.resume_stream(step=args["step"], resume_data=args["resumeData"])
        legs = [chunk_to_dict(c) async for c in leg.full_stream]
        await _check_leg(leg, legs, resume, "resume", run=chunks, late=late)


async def _ai_sdk_parts(vector: dict[str, Any]) -> None:
    harness, run = await _start(vector)
    output = run.stream(input_data=vector["inputData"])
    cancel: asyncio.Task[None] | None = None
    if harness.cancel_when_running:

        async def cancel_once_running() -> None:
            await harness.running.wait()
            await run.cancel()

        cancel = asyncio.get_running_loop().create_task(cancel_once_running())
    parts = [p async for p in to_ai_sdk_stream(output, from_="workflow")]
    if cancel is not None:
        await cancel
    _matches(to_wire(vector["aiSdk"]["expectedUiChunks"]), parts, "aiSdk")
    resume = vector["aiSdk"].get("resume")
    if resume:
        args = vector["resume"]["resumeArgs"]
        leg = run.resume_stream(step=args["step"], resume_data=args["resumeData"])
        parts = [p async for p in to_ai_sdk_stream(leg, from_="workflow")]
        _matches(to_wire(resume["expectedUiChunks"]), parts, "aiSdk resume")


@pytest.mark.parametrize("path", _as_recorded("chunks"))
async def test_vector(path: Any) -> None:
    """The run's chunks, result, status, usage and late-subscriber replay (both legs), as recorded
    (the replay is left to `test_divergence` where a divergence edits it)."""
    await _run_vector(load(path), late=not _diverges(path.stem, "late"))


@pytest.mark.parametrize("path", _as_recorded("aisdk"))
async def test_ai_sdk_conversion(path: Any) -> None:
    """``to_ai_sdk_stream(output, from_="workflow")`` of the run (both legs), as recorded."""
    await _ai_sdk_parts(load(path))


def _divergence_cases() -> list[Any]:
    out = []
    for key, d in DIVERGENCES.items():
        for path in VECTORS:
            if d.vectors is None or path.stem in d.vectors:
                out.append(pytest.param(key, path, id=f"{key}-{path.stem}"))
    return out


@pytest.mark.parametrize(("divergence", "path"), _divergence_cases())
async def test_divergence(divergence: str, path: Any) -> None:
    """What the divergence edits, compared with the vector with exactly that edit and nothing else."""
    vector = load(path)
    d = DIVERGENCES[divergence]
    d.edit(vector)
    if "late" in d.checks or "chunks" in d.checks:
        await _run_vector(vector, chunks="chunks" in d.checks, late="late" in d.checks)
    if "aisdk" in d.checks:
        await _ai_sdk_parts(vector)
