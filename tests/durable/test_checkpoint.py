"""Checkpointed agent runs in-process: DBOS on a SQLite system database, a replay made with
``DBOS.fork_workflow`` (the steps before the fork point are copied, as a crash leaves them)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, ClassVar, cast

import pytest
from dbos import DBOS, SetWorkflowID

from agentstream.agent import Agent
from agentstream.agent._checkpoints import begin_checkpointed_run, set_checkpoint_seam
from agentstream.chunks import chunk_to_dict
from agentstream.durable import install_checkpoints
from agentstream.durable._checkpoint import _IDS, DBOSCheckpoints, ModelStep, RunSteps
from agentstream.durable._first_run import first_run
from agentstream.models import APICallError, CallOptions, StreamPart
from agentstream.testing import ScriptedModel
from agentstream.tools import ToolContext, tool

SRC = str(Path(__file__).resolve().parents[2] / "src")

USAGE = {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}


def _calls(*calls: tuple[str, str, dict[str, Any]], metadata: bool = False) -> list[dict[str, Any]]:
    """A model call asking for tools; without ``metadata`` no response id or time (as a provider
    that sends none: a checkpointed call then records ones of its own)."""
    parts: list[dict[str, Any]] = [{"type": "stream-start", "warnings": []}]
    if metadata:
        parts.append(
            {"type": "response-metadata", "id": "resp-1", "timestamp": {"$date": "2024-05-01T10:00:00Z"}}
        )
    for call_id, name, args in calls:
        parts.append(
            {"type": "tool-call", "toolCallId": call_id, "toolName": name, "input": json.dumps(args)}
        )
    return [*parts, {"type": "finish", "finishReason": "tool-calls", "usage": USAGE}]


def _answer(text: str, response_id: str = "resp-2") -> list[dict[str, Any]]:
    return [
        {"type": "stream-start", "warnings": []},
        {
            "type": "response-metadata",
            "id": response_id,
            "modelId": "m",
            "timestamp": {"$date": "2024-05-01T10:00:00.000Z"},
        },
        {"type": "text-start", "id": "t"},
        *({"type": "text-delta", "id": "t", "delta": word} for word in re.findall(r"\S+\s*", text)),
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": USAGE},
    ]


class Env:
    """What the workflows below run: the agent of the test and counters of real executions."""

    agent: Agent
    executed: ClassVar[list[str]] = []
    first: ClassVar[set[str]] = set()


@tool
async def add(a: int, b: int) -> dict[str, int]:
    """Add two numbers."""
    Env.executed.append(f"add {a} {b}")
    return {"sum": a + b}


@tool
async def slow(n: int, context: ToolContext) -> int:
    """Writes progress, then answers after a while."""
    context.writer.write({"slow": n})
    await asyncio.sleep(0.05)
    Env.executed.append("slow")
    return n


@tool
async def fast(n: int) -> int:
    """Answers at once."""
    Env.executed.append("fast")
    return n


@tool
async def ask(question: str, context: ToolContext) -> str:
    """Suspends until answered."""
    Env.executed.append("ask")
    if not context.is_resumed:
        await context.suspend({"question": question})
    return f"answer: {context.resume_data}"


@DBOS.workflow(name="test.checkpoint.run")
async def run_agent(prompt: str) -> list[dict[str, Any]]:
    output = Env.agent.stream(prompt, clock=lambda: 0.0)
    return [chunk_to_dict(c) for c in [c async for c in output.full_stream]]


@DBOS.workflow(name="test.checkpoint.first")
async def run_agent_first(prompt: str) -> list[dict[str, Any]]:
    """`run_agent`, as a chat turn's first execution runs it (`WorkerJobs.start` created the
    workflow); a fork (a re-run) takes the ordinary path."""
    with first_run() if DBOS.workflow_id in Env.first else contextlib.nullcontext():
        output = Env.agent.stream(prompt, clock=lambda: 0.0)
        return [chunk_to_dict(c) for c in [c async for c in output.full_stream]]


@DBOS.workflow(name="test.checkpoint.seam")
async def seam_inside() -> list[bool]:
    in_workflow = begin_checkpointed_run() is not None
    in_step = await DBOS.run_step_async(None, lambda: begin_checkpointed_run() is not None)
    return [in_workflow, in_step]


@pytest.fixture
def dbos(tmp_path: Path) -> Iterator[None]:
    Env.executed = []
    DBOS(
        config={"name": "agentstream-checkpoint-test", "system_database_url": f"sqlite:///{tmp_path}/dbos.db"}
    )
    DBOS.launch()
    install_checkpoints()
    yield
    DBOS.destroy(workflow_completion_timeout_sec=0)
    set_checkpoint_seam(None)


async def _run(prompt: str) -> tuple[str, list[dict[str, Any]]]:
    handle = await DBOS.start_workflow_async(run_agent, prompt)
    return handle.workflow_id, await handle.get_result()


async def _steps(workflow_id: str) -> list[tuple[int, str]]:
    return [(s["function_id"], s["function_name"]) for s in await DBOS.list_workflow_steps_async(workflow_id)]


async def _replay_from(workflow_id: str, step_id: int) -> tuple[str, list[dict[str, Any]]]:
    handle = await DBOS.fork_workflow_async(workflow_id, step_id)
    return handle.workflow_id, await handle.get_result()


def _same_ids(chunks: list[dict[str, Any]]) -> str:
    """The chunks as JSON with the run and message ids (made from the workflow id) named generically."""
    start = chunks[0]
    text = json.dumps(chunks)
    return text.replace(start["runId"], "<run>").replace(start["payload"]["messageId"], "<message>")


def test_importing_the_package_installs_no_checkpoint_seam() -> None:
    # In a fresh interpreter: this one has installed the seam in other tests' fixtures.
    code = (
        "import agentstream.durable\n"
        "from agentstream.agent._checkpoints import _seams\n"
        "assert _seams == [], _seams\n"
        "agentstream.durable.install_checkpoints()\n"
        "assert len(_seams) == 1\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": SRC}
    )
    assert done.returncode == 0, done.stderr


def test_a_run_is_checkpointed_only_in_workflow_code(dbos: None) -> None:
    assert DBOSCheckpoints().begin_run() is None
    assert begin_checkpointed_run() is None


async def test_seam_is_on_in_workflow_code_and_off_inside_a_step(dbos: None) -> None:
    handle = await DBOS.start_workflow_async(seam_inside)
    assert await handle.get_result() == [True, False]


async def test_a_run_outside_a_workflow_streams_as_without_the_seam(dbos: None) -> None:
    script = [_calls(("c1", "add", {"a": 1, "b": 2}), metadata=True), _answer("three")]

    async def chunks() -> list[dict[str, Any]]:
        agent = Agent(id="calc", model=ScriptedModel(script), tools=[add])
        output = agent.stream("1+2?", clock=lambda: 0.0, run_id="r")
        return [chunk_to_dict(c) for c in [c async for c in output.full_stream]]

    with_seam = await chunks()
    set_checkpoint_seam(None)
    try:
        without = await chunks()
    finally:
        set_checkpoint_seam(DBOSCheckpoints())
    mid = [c["payload"].get("messageId") for c in with_seam if c["type"] == "start"]
    assert _same_ids(with_seam) == _same_ids(without) and mid


async def test_each_model_and_tool_call_is_a_step_and_a_replay_calls_neither_again(dbos: None) -> None:
    model = ScriptedModel([_calls(("c1", "add", {"a": 1, "b": 2})), *[_answer("it is three")] * 3])
    Env.agent = Agent(id="calc", model=model, tools=[add])
    workflow_id, first = await _run("1+2?")
    steps = await _steps(workflow_id)
    names = [name for _, name in steps]
    assert names == [
        "agentstream.model:mock-provider:mock-model-id",
        "agentstream.tool:add",
        "agentstream.model:mock-provider:mock-model-id",
    ]
    assert [c["type"] for c in first][-3:] == ["text-end", "step-finish", "finish"]
    assert len(model.calls) == 2 and Env.executed == ["add 1 2"]

    # Replay from the second model call: the first call and the tool are recorded, not made again.
    _, replayed = await _replay_from(workflow_id, steps[2][0])
    assert len(model.calls) == 3 and Env.executed == ["add 1 2"]
    assert _same_ids(replayed) == _same_ids(first)

    # Replay everything after the first model call: the tool runs again, the model is not called.
    model_before = len(model.calls)
    _, again = await _replay_from(workflow_id, steps[1][0])
    assert Env.executed == ["add 1 2", "add 1 2"] and len(model.calls) == model_before + 1
    assert _same_ids(again) == _same_ids(first)


async def test_run_and_message_ids_are_a_function_of_the_workflow_id(dbos: None) -> None:
    # A recovered workflow runs again under its own id, so its run draws the same ids.
    Env.agent = Agent(id="calc", model=ScriptedModel([_answer("hi")]))
    with SetWorkflowID("wf-fixed"):
        handle = await DBOS.start_workflow_async(run_agent, "hello")
    first = await handle.get_result()
    assert first[0]["runId"] == str(uuid.uuid5(_IDS, "wf-fixed/1"))
    assert first[0]["payload"]["messageId"] == str(uuid.uuid5(_IDS, "wf-fixed/2"))


async def test_concurrent_tool_calls_take_step_ids_in_call_order(dbos: None) -> None:
    calls = _calls(("c1", "slow", {"n": 1}), ("c2", "fast", {"n": 2}))
    model = ScriptedModel([calls, _answer("done"), _answer("done")])
    Env.agent = Agent(id="tools", model=model, tools=[slow, fast])
    workflow_id, first = await _run("go")
    assert Env.executed == ["fast", "slow"]  # fast finished first, yet its step id comes second
    steps = await _steps(workflow_id)
    assert [name for _, name in steps][1:3] == ["agentstream.tool:slow", "agentstream.tool:fast"]
    assert steps[1][0] < steps[2][0]
    _, replayed = await _replay_from(workflow_id, steps[3][0])
    assert Env.executed == ["fast", "slow"]
    # The chunk the slow tool wrote is written again from its record.
    assert _same_ids(replayed) == _same_ids(first)
    assert any(c["type"] == "tool-output" and c["payload"]["output"] == {"slow": 1} for c in replayed)


async def test_a_provider_error_is_recorded_and_raised_again_on_a_replay(dbos: None) -> None:
    error = APICallError("overloaded", url="https://api.example/v1", provider="example", status_code=529)

    class Failing:
        specification_version = "v2"
        provider = "example"
        model_id = "flaky"
        calls = 0

        def do_stream(self, options: CallOptions) -> AsyncIterator[StreamPart]:
            Failing.calls += 1
            return self._parts()

        async def _parts(self) -> AsyncIterator[StreamPart]:
            yield {"type": "stream-start", "warnings": []}
            yield {"type": "text-start", "id": "t"}
            yield {"type": "text-delta", "id": "t", "delta": "half an"}
            raise error

    Env.agent = Agent(id="flaky", model=Failing())
    workflow_id, first = await _run("hi")
    assert Failing.calls == 1
    errors = [c for c in first if c["type"] == "error"]
    assert errors and errors[0]["payload"]["error"]["message"] == "example (status 529): overloaded"
    steps = await _steps(workflow_id)
    assert len(steps) == 1
    _, replayed = await _replay_from(workflow_id, steps[0][0] + 1)
    assert Failing.calls == 1
    assert _same_ids(replayed) == _same_ids(first)


async def test_a_suspended_tool_is_recorded_and_the_run_resumes(dbos: None) -> None:
    model = ScriptedModel([_calls(("c1", "ask", {"question": "color?"})), _answer("blue it is")])
    Env.agent = Agent(id="asker", model=model, tools=[ask])
    workflow_id, first = await _run("pick")
    assert first[-1]["type"] == "tool-call-suspended"
    assert first[-1]["payload"]["suspendPayload"] == {"question": "color?"}
    assert Env.executed == ["ask"]
    steps = await _steps(workflow_id)
    _, replayed = await _replay_from(workflow_id, steps[-1][0] + 1)
    assert Env.executed == ["ask"] and _same_ids(replayed) == _same_ids(first)

    resumed = Env.agent.resume_stream("blue", run_id=first[0]["runId"])
    text = await resumed.text
    assert text == "blue it is" and Env.executed == ["ask", "ask"]


async def test_closing_a_model_step_early_records_what_was_read_and_leaks_no_task(dbos: None) -> None:
    Env.executed = []
    handle = await DBOS.start_workflow_async(read_two)
    assert await handle.get_result() == ["stream-start", "text-delta"]
    assert Env.executed == ["closed"]
    (step,) = await DBOS.list_workflow_steps_async(handle.workflow_id)
    assert step["output"]["closed"] is True and step["output"]["parts"][0]["type"] == "stream-start"


class Endless:
    specification_version = "v2"
    provider = "example"
    model_id = "endless"

    def do_stream(self, options: CallOptions) -> AsyncIterator[StreamPart]:
        return self._parts()

    async def _parts(self) -> AsyncIterator[StreamPart]:
        try:
            yield {"type": "stream-start", "warnings": []}
            while True:
                await asyncio.sleep(0.01)
                yield {"type": "text-delta", "id": "t", "delta": "x"}
        finally:
            Env.executed.append("closed")


@DBOS.workflow(name="test.checkpoint.close")
async def read_two() -> list[str]:
    checkpoint = begin_checkpointed_run()
    assert checkpoint is not None
    stream = checkpoint.model(Endless()).do_stream({"prompt": []})
    seen = [(await stream.__anext__())["type"], (await stream.__anext__())["type"]]
    before = len(asyncio.all_tasks())
    await stream.aclose()  # type: ignore[attr-defined]
    assert len(asyncio.all_tasks()) == before - 1
    return seen


class NoLongerOwned(BaseException):
    """As DBOS's fencing error: a `BaseException`, raised by a step of an execution that lost its workflow."""


class FencedStep:
    async def run_async(self, options: Any, func: Any) -> Any:
        raise NoLongerOwned("workflow w is no longer owned by this execution")


async def test_a_model_step_fenced_off_its_workflow_raises_to_the_loop_instead_of_hanging() -> None:
    # Before: the step's task died with the BaseException and the reader waited for ever.
    Env.executed = []
    step = ModelStep(Endless(), {"prompt": []}, cast(Any, FencedStep()), RunSteps())
    with pytest.raises(NoLongerOwned, match="no longer owned"):
        await asyncio.wait_for(step.__anext__(), 30)
    assert Env.executed == []  # the provider was never called


async def _run_first(prompt: str, workflow_id: str) -> list[dict[str, Any]]:
    Env.first.add(workflow_id)
    with SetWorkflowID(workflow_id):
        handle = await DBOS.start_workflow_async(run_agent_first, prompt)
    return await handle.get_result()


async def test_a_first_execution_records_a_model_call_only_once_a_step_follows_it(dbos: None) -> None:
    script = [_calls(("c1", "slow", {"n": 1}), ("c2", "fast", {"n": 2}), metadata=True), _answer("done")]
    Env.agent = Agent(id="tools", model=ScriptedModel([*script, _answer("done")]), tools=[slow, fast])
    with SetWorkflowID("wf-ordinary"):
        ordinary = await (await DBOS.start_workflow_async(run_agent, "go")).get_result()
    Env.executed = []
    model = ScriptedModel([*script, _answer("done"), _answer("done")])
    Env.agent = Agent(id="tools", model=model, tools=[slow, fast])
    first = await _run_first("go", "wf-first")
    # The same chunks and step ids; the last model call, which no step follows, is not recorded.
    assert _same_ids(first) == _same_ids(ordinary)
    ordinary_steps, steps = await _steps("wf-ordinary"), await _steps("wf-first")
    assert steps == ordinary_steps[:-1]
    assert [name for _, name in steps] == [
        "agentstream.model:mock-provider:mock-model-id",
        "agentstream.tool:slow",
        "agentstream.tool:fast",
    ]
    assert len(model.calls) == 2 and Env.executed == ["fast", "slow"]
    # A re-run past the tools (a takeover) replays the recorded call and the tools, calls the model.
    _, replayed = await _replay_from("wf-first", steps[-1][0] + 1)
    assert len(model.calls) == 3 and Env.executed == ["fast", "slow"]
    assert _same_ids(replayed) == _same_ids(first)


async def test_a_first_execution_answering_at_once_records_no_step(dbos: None) -> None:
    model = ScriptedModel([_answer("hi there")])
    Env.agent = Agent(id="calc", model=model)
    with SetWorkflowID("wf-plain"):
        ordinary = await (await DBOS.start_workflow_async(run_agent, "hello")).get_result()
    Env.agent = Agent(id="calc", model=ScriptedModel([_answer("hi there")]))
    first = await _run_first("hello", "wf-plain-first")
    assert _same_ids(first) == _same_ids(ordinary)
    assert await _steps("wf-plain-first") == []
