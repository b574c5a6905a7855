"""Every recorded ``@mastra/core`` workflow run (``conformance/workflow/*.json``) replayed through ``run.stream``.

Compared: every chunk (agent chunks forwarded by an agent step: type, content, reasons and usage), the
awaited result, status and usage, what a late subscriber replays, the resume leg, and the AI SDK UI
chunks of ``to_ai_sdk_stream(output, from_="workflow")`` (also for the resume leg).
"""

from __future__ import annotations

import asyncio
import copy
import re
from collections.abc import Callable
from typing import Any

import pytest

from agentstream.ai_sdk import to_ai_sdk_stream
from agentstream.chunks import chunk_to_dict
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
    """``actual`` equals ``expected`` modulo normalised ids; ``error`` values agree on name/message/code."""
    if isinstance(expected, str) and _ID.match(expected):
        assert isinstance(actual, str) and actual, path
        return
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{path}: expected a dict, got {actual!r}"
        assert set(expected) == set(actual), f"{path}: keys {sorted(expected)} != {sorted(actual)}"
        for key in expected:
            if key == "error" and isinstance(expected[key], dict):
                _error_matches(expected[key], actual[key], f"{path}.error")
            else:
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


def _error_matches(expected: dict[str, Any], actual: Any, path: str) -> None:
    assert isinstance(actual, dict), f"{path}: {actual!r}"
    for key in ("name", "message", "code", "domain", "category"):
        if key in expected:
            assert actual.get(key) == expected[key], f"{path}.{key}: {actual.get(key)!r} != {expected[key]!r}"


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


def _late_subscribers_see_finish(vector: dict[str, Any]) -> None:
    """Mastra's replay leaves out ``workflow-finish``; ours replays it (a late subscriber needs to
    know how the run ended). docs/decisions.md, "Workflows"."""
    vector["lateSubscriberChunkTypes"].append("workflow-finish")
    if vector.get("resume"):
        vector["resume"]["lateSubscriberChunkTypes"].append("workflow-finish")


def _branch_output_without_undefined(vector: dict[str, Any]) -> None:
    """Mastra's branch output has a key (holding ``undefined``) for each branch that did not run;
    Python has no ``undefined``, so ours holds the branches that ran."""

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


_OUTPUT_ERROR = {
    "message": "Step output validation failed: \n- value: Invalid input: expected number, received string",
    "name": "Error",
    "domain": "MASTRA_WORKFLOW",
    "category": "USER",
    "code": "WORKFLOW_STEP_OUTPUT_VALIDATION_FAILED",
}


def _step_outputs_are_checked(vector: dict[str, Any]) -> None:
    """Mastra does not check a step's output against its ``output_schema`` (the NEXT step fails on its
    input); ours does, so the step that returned the bad value fails, naming the field."""
    chunks = vector["expectedChunks"]
    result = copy.deepcopy(chunks[2])
    payload = result["payload"]
    payload["status"] = "failed"
    del payload["output"]
    payload["error"] = dict(_OUTPUT_ERROR)
    finish = chunks[-1]
    vector["expectedChunks"] = [chunks[0], chunks[1], result, finish]
    vector["lateSubscriberChunkTypes"] = [
        "workflow-start",
        "workflow-step-start",
        "workflow-step-result",
        "workflow-finish",
    ]
    res = vector["results"]["result"]
    res["steps"] = {
        "input": res["steps"]["input"],
        "sloppy": {
            "startedAt": FROZEN_MS,
            "status": "failed",
            "error": dict(_OUTPUT_ERROR),
            "endedAt": FROZEN_MS,
        },
    }
    res["stepExecutionPath"] = ["sloppy"]
    res["error"] = dict(_OUTPUT_ERROR)
    ui = vector["aiSdk"]["expectedUiChunks"]
    running = copy.deepcopy(ui[3])
    running["data"]["steps"]["sloppy"]["status"] = "failed"
    step = copy.deepcopy(ui[4])
    step["data"]["step"]["status"] = "failed"
    step["data"]["step"]["output"] = None
    final = copy.deepcopy(ui[-2])
    final["data"]["steps"] = {"sloppy": dict(running["data"]["steps"]["sloppy"])}
    vector["aiSdk"]["expectedUiChunks"] = [ui[0], ui[1], ui[2], running, step, final, ui[-1]]


def _custom_chunks_alike_on_resume(vector: dict[str, Any]) -> None:
    """Inside Mastra's ``resumeStream`` a ``writer.custom`` chunk arrives bare (no runId, no from), unlike
    the first stream's; ours are alike in both legs."""
    for chunk in vector["resume"]["expectedChunks"]:
        if chunk["type"].startswith("data-"):
            chunk["runId"] = "run-1"
            chunk["from"] = "WORKFLOW"


BETTER_THAN_MASTRA: dict[str, list[Callable[[dict[str, Any]], None]]] = {
    "branch": [_branch_output_without_undefined],
    "invalid-step-output": [_step_outputs_are_checked],
    "suspend-resume": [_custom_chunks_alike_on_resume],
}

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
    output: WorkflowRunOutput, chunks: list[dict[str, Any]], expected: dict[str, Any], leg: str
) -> None:
    _chunks_match(to_wire(expected["expectedChunks"]), chunks, leg)
    results = to_wire(expected["results"])
    result = await output.result
    _matches(results["result"], result.to_dict(), f"{leg} results.result")
    assert output.status == results["status"], leg
    assert result.status == results["status"], leg
    assert await output.usage == results["usage"], leg
    late = [c.type async for c in output.full_stream]
    assert late == expected["lateSubscriberChunkTypes"], f"{leg} late subscriber"


def _prepared(path: Any) -> dict[str, Any]:
    vector = load(path)
    _late_subscribers_see_finish(vector)
    for fix in BETTER_THAN_MASTRA.get(path.stem, []):
        fix(vector)
    return vector


@pytest.mark.parametrize("path", params("workflow", VECTORS))
async def test_vector(path: Any) -> None:
    vector = _prepared(path)
    harness, run = await _start(vector)
    output = run.stream(input_data=vector["inputData"])
    chunks = await _read(harness, run, output)
    await _check_leg(output, chunks, vector, "first stream")
    if path.stem == "step-retries":
        assert harness.sleeps == [0.005, 0.005]
    resume = vector.get("resume")
    if resume:
        args = resume["resumeArgs"]
        leg = run.resume_stream(step=args["step"], resume_data=args["resumeData"])
        await _check_leg(leg, [chunk_to_dict(c) async for c in leg.full_stream], resume, "resume")


@pytest.mark.parametrize("path", params("workflow", VECTORS))
async def test_ai_sdk_conversion(path: Any) -> None:
    vector = _prepared(path)
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
