"""Every recorded ``@mastra/core`` agent run (``conformance/agent/*.json``) replayed through ``Agent.stream``.

Compared (README "What must match"): the chunk type sequence, every content chunk, step-finish/finish
reasons and usage, the awaited results, the callbacks and the prompts the model received.
"""

from __future__ import annotations

import base64
import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentstream._abort import AbortController
from agentstream.agent import Agent
from agentstream.chunks import TextDelta, chunk_to_dict, to_jsonable
from agentstream.memory import Memory
from agentstream.storage import InMemoryStore
from agentstream.testing import ScriptedModel
from tests.conformance import ABSENT, load, params, to_wire, vector_files

from .vector_processors import processors_for
from .vector_tools import tools_for

FROZEN_MS = 946684800000

# Vectors another test file runs (not a missing feature), so they are not parametrised here (a skip
# would show in a green run): vector -> the test file that loads it.
COVERED_ELSEWHERE = {
    "background-task-until-idle": "tests/background/test_until_idle.py",  # through Mastra(background_tasks=...)
}

# Checks skipped where the recording cannot be matched (none at present).
MODEL_OUTPUT_DIVERGENCES: dict[str, dict[str, str]] = {}

REPAIRED_ARGS = {"city": "Oslo"}
REPAIRED_RESULT = {"city": "Oslo", "temperatureC": 21, "conditions": "sunny"}


def _validation_failure(value: Any) -> bool:
    return isinstance(value, dict) and value.get("error") is True and "validationErrors" in value


@dataclass(frozen=True)
class Divergence:
    """One deliberate difference from a recorded Mastra run: at ``path`` in the vector the recording
    holds ``mastra`` (a value, `ABSENT`, or a check of the value) and we produce ``ours``.

    docs/decisions/issue-23-agent-divergences.md argues each; `test_vector` checks the recording
    still says ``mastra`` there and compares everything else unchanged, and
    `test_a_divergence_is_exactly_its_difference` runs the vector as recorded and asserts the
    divergent chunk differs from Mastra's there and nowhere else."""

    vector: str
    path: str  # e.g. "expectedChunks[2].payload.error.stack"
    mastra: Any
    ours: Any
    reason: str


NO_STACK = "no stack traces on the wire: the client gets the error's message, the log gets the rest"
KEEP_MESSAGE = "JSON.stringify drops a JS Error's own message; we keep it (conformance README)"
NOT_ZOD = "output is validated with JSON Schema, not zod: the cause is our issue summary, not a ZodError"
REPAIRED = (
    "the tool runs with the provider's repaired arguments, not Mastra's {} (docs/decisions/agent-loop.md)"
)
SCHEMA_CAUSE = {
    "name": "ValidationError",
    "message": "- age: Invalid input: expected number, received string",
}

DIVERGENCES: tuple[Divergence, ...] = (
    Divergence("model-throws", "expectedChunks[2].payload.error.stack", "<stack>", ABSENT, NO_STACK),
    Divergence("provider-error-part", "expectedChunks[4].payload.error.stack", "<stack>", ABSENT, NO_STACK),
    Divergence(
        "unknown-tool",
        "expectedChunks[6].payload.error.message",
        ABSENT,
        'Tool "teleport" not found. Available tools: weather. Call tools by their exact name only — never '
        "add prefixes, namespaces, or colons.",
        KEEP_MESSAGE,
    ),
    Divergence(
        "structured-output-invalid",
        "expectedChunks[10].payload.error.cause",
        lambda cause: cause["name"] == "ZodError",
        SCHEMA_CAUSE,
        NOT_ZOD,
    ),
    *(
        Divergence("malformed-tool-json", f"{where}.payload.{key}", mastra, ours, REPAIRED)
        for where in (
            "expectedChunks[7]",
            "callbacks.onChunk[5]",
            "results.toolResults[0]",
            "results.steps[0].toolResults[0]",
            "callbacks.onStepFinish[0].toolResults[0]",
            "callbacks.onFinish[0].toolResults[0]",
            "callbacks.onFinish[0].steps[0].toolResults[0]",
        )
        for key, mastra, ours in (
            ("args", {}, REPAIRED_ARGS),
            ("result", _validation_failure, REPAIRED_RESULT),
        )
    ),
    Divergence("malformed-tool-json", "results.toolCalls[0].payload.args", {}, REPAIRED_ARGS, REPAIRED),
    *(
        Divergence("malformed-tool-json", f"{where}.payload.args", {}, REPAIRED_ARGS, REPAIRED)
        for where in (
            "results.steps[0].toolCalls[0]",
            "callbacks.onStepFinish[0].toolCalls[0]",
            "callbacks.onFinish[0].toolCalls[0]",
            "callbacks.onFinish[0].steps[0].toolCalls[0]",
        )
    ),
    Divergence(
        "malformed-tool-json",
        "modelCalls[1].prompt[3].content[0].output",
        lambda output: _validation_failure(output["value"]),
        {"type": "json", "value": REPAIRED_RESULT},
        REPAIRED,
    ),
)

_STEP = re.compile(r"\.?([A-Za-z_$][\w$]*)|\[(\d+)\]")


def _steps(path: str) -> list[str | int]:
    steps: list[str | int] = []
    for key, index in _STEP.findall(path):
        steps.append(int(index) if index else key)
    return steps


def _at(data: Any, path: str) -> Any:
    for step in _steps(path):
        if isinstance(step, str) and step not in data:
            return ABSENT
        data = data[step]
    return data


def _put(data: Any, path: str, value: Any) -> None:
    *parents, last = _steps(path)
    for step in parents:
        data = data[step]
    if value is ABSENT:
        del data[last]
    else:
        data[last] = copy.deepcopy(value)


def _apply_divergences(vector: dict[str, Any], name: str) -> None:
    """Our values where we deliberately differ, after checking the recording says Mastra's there."""
    for d in DIVERGENCES:
        if d.vector != name:
            continue
        recorded = _at(vector, d.path)
        holds = d.mastra(recorded) if callable(d.mastra) else recorded == d.mastra
        assert holds, f"{name}: the recording changed at {d.path} ({recorded!r}); revisit the divergence"
        _put(vector, d.path, d.ours)


VECTORS = vector_files("agent")
VECTORS_DIR = VECTORS[0].parent


def _params() -> list[Any]:
    out = []
    for param in params("agent", VECTORS):
        (path,) = param.values
        if path.stem not in COVERED_ELSEWHERE:
            out.append(param)
    return out


@pytest.mark.parametrize("name", sorted(COVERED_ELSEWHERE))
def test_a_vector_covered_elsewhere_is_loaded_there(name: str) -> None:
    assert name in {p.stem for p in VECTORS}, f"{name} is no longer recorded"
    test_file = Path(__file__).resolve().parents[2] / COVERED_ELSEWHERE[name]
    assert f"{name}.json" in test_file.read_text(encoding="utf-8"), f"{test_file} does not load {name}"


_ID = re.compile(r"^<id:\d+>$")


def _matches(expected: Any, actual: Any, path: str = "") -> None:
    """``actual`` equals ``expected`` modulo normalised ids."""
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


def _error_matches(expected: Any, actual: Any, path: str) -> None:
    """Errors: every key Mastra serialised, and no other (a missing ``code`` or ``statusCode`` fails)."""
    assert isinstance(actual, dict), f"{path}: expected an error object, got {actual!r}"
    _matches(expected, actual, path)


def _content_matches(expected: dict[str, Any], actual: dict[str, Any], where: str) -> None:
    kind = expected["type"]
    if kind in ("error", "tool-error"):
        exp_payload, act_payload = dict(expected["payload"]), dict(actual["payload"])
        _error_matches(exp_payload.pop("error"), act_payload.pop("error"), where)
        _matches(exp_payload, act_payload, where)
        return
    if kind == "file" and isinstance(expected["payload"].get("data"), dict):
        # Mastra serialises a Uint8Array as {"0": 104, ...}; we keep bytes (base64 on the wire).
        data = expected["payload"]["data"]
        values = bytes(data[str(i)] for i in range(len(data)))
        assert actual["payload"]["data"] == base64.b64encode(values).decode()
        assert actual["payload"]["mimeType"] == expected["payload"]["mimeType"]
        return
    _matches(expected, actual, where)


def _sub_agents(vector: dict[str, Any]) -> tuple[dict[str, Agent], list[ScriptedModel]]:
    """``agent.subAgents``: each with its own scripted model answering ``subAgentSteps``."""
    agents, models = {}, []
    for spec in vector["agent"].get("subAgents", []):
        model = ScriptedModel(
            vector["subAgentSteps"], model_id=spec["model"].split('modelId: "')[1].split('"')[0]
        )
        agents[spec["registeredAs"]] = Agent(
            id=spec["id"],
            name=spec["name"],
            description=spec["description"],
            instructions=spec["instructions"],
            model=model,
        )
        models.append(model)
    return agents, models


class _Goal:
    """A goal vector's setup: the judge model, the storage and the objective set before the run."""

    def __init__(self, vector: dict[str, Any]) -> None:
        self.judge = ScriptedModel(vector["judgeSteps"], model_id="mock-judge-id")
        self.storage = InMemoryStore()
        self.before = vector["goal"]["objectiveBefore"]

    def agent_options(self) -> dict[str, Any]:
        return {
            "goal": {"judge": self.judge},
            "memory": Memory(self.storage),
            "default_options": {"clock": lambda: FROZEN_MS},
        }

    async def set_objective(self, agent: Agent, thread_id: str) -> None:
        before = self.before
        record = await agent.set_objective(
            before["objective"],
            thread_id=thread_id,
            id=before.get("id"),
            max_runs=before.get("maxRuns"),
            judge_model_id=before.get("judgeModelId"),
            prompt=before.get("prompt"),
        )
        assert record.to_json() == self.before


def _recording_callbacks() -> tuple[dict[str, list[Any]], dict[str, Any]]:
    calls: dict[str, list[Any]] = {
        "onChunk": [],
        "onStepFinish": [],
        "onFinish": [],
        "onError": [],
        "onAbort": [],
    }
    options: dict[str, Any] = {
        "clock": lambda: FROZEN_MS,
        "on_chunk": lambda c: calls["onChunk"].append(chunk_to_dict(c)),
        "on_step_finish": lambda e: calls["onStepFinish"].append(e),
        "on_finish": lambda e: calls["onFinish"].append(e),
        "on_error": lambda e: calls["onError"].append(e),
        "on_abort": lambda e: calls["onAbort"].append(e),
    }
    return calls, options


async def _read(output: Any, abort_on_first_delta: AbortController | None = None) -> list[dict[str, Any]]:
    chunks = []
    async for chunk in output.full_stream:
        chunks.append(chunk_to_dict(chunk))
        if abort_on_first_delta is not None and isinstance(chunk, TextDelta):
            abort_on_first_delta.abort()
    return chunks


async def _run(
    vector: dict[str, Any], executions: list[dict[str, Any]] | None = None
) -> tuple[Any, list[dict[str, Any]], dict[str, list[Any]], ScriptedModel, Agent, list[ScriptedModel]]:
    model = ScriptedModel(vector["modelSteps"])
    spec = vector["agent"]
    goal = _Goal(vector) if "goal" in vector else None
    sub_agents, sub_models = _sub_agents(vector)
    agent = Agent(
        id=spec["id"],
        name=spec["name"],
        instructions=spec["instructions"],
        model=model,
        tools=tools_for(vector, executions),
        agents=sub_agents,
        **(goal.agent_options() if goal else {}),
    )
    vector["$goal"] = goal
    calls, options = _recording_callbacks()
    options["run_id"] = "run-1"
    raw_options = spec["options"]
    if "memory" in raw_options:
        thread, resource = raw_options["memory"]["thread"], raw_options["memory"]["resource"]
        options["memory"] = {"thread": thread, "resource": resource}
        if goal is not None:
            await goal.set_objective(agent, thread)
    if raw_options.get("includeRawChunks"):
        options["include_raw_chunks"] = True
    if raw_options.get("requireToolApproval"):
        options["require_tool_approval"] = True
    if "structuredOutput" in raw_options:
        schema = spec.get("structuredOutputJsonSchema") or vector.get("structuredOutputJsonSchema")
        options["structured_output"] = {"schema": schema}
    processor_options, traced = processors_for(vector)
    options.update(processor_options)
    controller = AbortController()
    abort_on_first_delta = "abortSignal" in raw_options
    if abort_on_first_delta:
        options["abort_signal"] = controller.signal
    output = agent.stream(vector["prompt"], **options)
    chunks = await _read(output, controller if abort_on_first_delta else None)
    calls["processorTrace"] = [entry for p in traced for entry in p.trace]
    return output, chunks, calls, model, agent, sub_models


def _start_leg(agent: Agent, leg: dict[str, Any], options: dict[str, Any]) -> Any:
    """``agent.approveToolCall`` / ``declineToolCall`` / ``resumeStream`` as the recording called it."""
    *data, leg_args = leg["args"]
    ids = {"run_id": leg_args["runId"], "tool_call_id": leg_args.get("toolCallId")}
    method = leg["method"]
    if method == "approveToolCall":
        return agent.approve_tool_call(**ids, **options)
    if method == "declineToolCall":
        return agent.decline_tool_call(**ids, **options)
    assert method == "resumeStream", method
    return agent.resume_stream(data[0], **ids, **options)


def _chunk_matches(exp: dict[str, Any], act: dict[str, Any], where: str) -> None:
    """One streamed chunk: step-start/step-finish/finish compared on what the scripted model
    reproduces (not the harness's request/response metadata); a sub-run's chunks nested in
    ``tool-output`` by the same rules."""
    kind = exp["type"]
    if kind in ("step-finish", "finish"):
        for key in ("reason", "isContinued"):
            assert act["payload"]["stepResult"].get(key) == exp["payload"]["stepResult"].get(key), where
        if "messageId" in exp["payload"]["stepResult"]:  # the step a resumed leg closes
            assert act["payload"]["stepResult"]["messageId"] == act["payload"]["messageId"], where
        assert act["payload"]["output"]["usage"] == exp["payload"]["output"]["usage"], where
        for key in ("processorRetryCount", "processorRetryFeedback"):  # absent on an aborted finish
            assert act["payload"].get(key, ABSENT) == exp["payload"].get(key, ABSENT), f"{where}.{key}"
        assert act["payload"]["output"].get("text") == exp["payload"]["output"].get("text"), where
        if kind == "finish":
            _response_matches(exp["payload"].get("response"), act["payload"].get("response"), where)
        assert act.get("runId") == exp.get("runId") or _ID.match(exp.get("runId", "")), where
    elif kind in ("start", "step-start"):
        assert act["payload"]["messageId"], where
        if kind == "start":
            assert act["payload"]["id"] == exp["payload"]["id"], where
    elif kind == "tool-output" and isinstance(exp["payload"].get("output"), dict):
        exp_payload, act_payload = dict(exp["payload"]), dict(act["payload"])
        exp_inner, act_inner = exp_payload.pop("output"), act_payload.pop("output")
        _matches({**exp, "payload": exp_payload}, {**act, "payload": act_payload}, where)
        _chunk_matches(exp_inner, act_inner, f"{where} > {exp_inner['type']}")
    else:
        _content_matches(exp, act, where)


def _response_matches(expected: Any, actual: Any, where: str) -> None:
    """``finish.payload.response``: present exactly when Mastra sends it; the response's metadata
    keys, its model messages, and the UI message's parts (ids and ``createdAt`` are MessageList's)."""
    assert (actual is None) == (expected is None), f"{where}.response"
    if expected is None:
        return
    harness = {"headers"}  # the recording harness's HTTP metadata, which a scripted model has not
    assert set(actual) - harness == set(expected) - harness, f"{where}.response keys"
    for key in ("id", "modelId", "modelMetadata", "messages"):
        if key in expected:
            _matches(expected[key], actual[key], f"{where}.response.{key}")
    exp_parts = [part for message in expected["uiMessages"] for part in message["parts"]]
    act_parts = [part for message in actual["uiMessages"] for part in message["parts"]]
    _matches(exp_parts, act_parts, f"{where}.uiMessages")


async def _settle(awaitable: Any) -> tuple[bool, Any]:
    try:
        return True, await awaitable
    except Exception as exc:
        return False, exc


def _check_chunks(expected: list[dict[str, Any]], chunks: list[dict[str, Any]]) -> None:
    # 1. the chunk type sequence
    assert [c["type"] for c in chunks] == [c["type"] for c in expected]

    # 2. content chunks, and reasons + usage of step-finish / finish
    for i, (exp, act) in enumerate(zip(expected, chunks, strict=True)):
        _chunk_matches(exp, act, f"chunk[{i}] {exp['type']}")


async def _check_results(output: Any, raw_results: dict[str, Any], skip: dict[str, str]) -> None:
    results = to_wire(raw_results)
    for name, attr in (
        ("text", "text"),
        ("finishReason", "finish_reason"),
        ("usage", "usage"),
        ("totalUsage", "total_usage"),
        ("toolCalls", "tool_calls"),
        ("toolResults", "tool_results"),
        ("object", "object"),
    ):
        if f"results.{name}" in skip:
            continue
        ok, value = await _settle(getattr(output, attr))
        exp_raw = raw_results.get(name)
        if isinstance(exp_raw, dict) and "$rejected" in exp_raw:
            assert not ok, f"results.{name} should reject"
            continue
        if name not in results:  # undefined
            assert ok and value is None, f"results.{name}: {value!r}"
            continue
        assert ok, f"results.{name} rejected: {value!r}"
        _matches(results[name], to_jsonable(value), f"results.{name}")
    assert output.status == results["status"]
    tripwire = output.tripwire.to_dict() if output.tripwire is not None else None
    assert tripwire == results.get("tripwire"), "results.tripwire"
    if "stepsLength" in results and "results.steps" not in skip:
        steps = await output.steps
        assert len(steps) == results["stepsLength"]
        for i, (exp_step, step) in enumerate(zip(results.get("steps", []), steps, strict=False)):
            assert step.finish_reason == exp_step["finishReason"], f"steps[{i}]"
            assert step.text == exp_step["text"], f"steps[{i}]"
            assert step.usage.to_wire() == exp_step["usage"], f"steps[{i}]"
            _matches(exp_step["toolCalls"], to_jsonable(step.tool_calls), f"steps[{i}].toolCalls")
            _matches(exp_step["toolResults"], to_jsonable(step.tool_results), f"steps[{i}].toolResults")
            wire = step.to_wire()  # the typed step's own JSON: Mastra's keys and values
            for key in (
                "stepType",
                "finishReason",
                "text",
                "reasoningText",
                "toolCalls",
                "toolResults",
                "usage",
            ):
                if key in exp_step:
                    _matches(to_wire(exp_step[key]), wire[key], f"steps[{i}].to_wire().{key}")


def _check_callbacks(cbs: dict[str, Any], calls: dict[str, list[Any]], skip: dict[str, str]) -> None:
    for name in ("onStepFinish", "onFinish", "onError", "onAbort"):
        if f"callbacks.{name}" in skip:
            continue
        assert len(calls[name]) == len(cbs.get(name, [])), name
    _matches(to_wire(cbs.get("onChunk", [])), calls["onChunk"], "onChunk")
    for exp_abort, got in zip(cbs.get("onAbort", []), calls["onAbort"], strict=True):
        assert got.text == exp_abort["text"]
        assert len(got.steps) == len(exp_abort["steps"])
    for exp_step, got in zip(cbs.get("onStepFinish", []), calls["onStepFinish"], strict=False):
        assert got.finish_reason == exp_step["finishReason"]
        assert got.step_type == exp_step["stepType"]
        _wire_keys_match(exp_step, got.to_wire(), "onStepFinish")
    for exp_finish, got in zip(
        cbs.get("onFinish", []), calls["onFinish"], strict="callbacks.onFinish" not in skip
    ):
        assert got.text == exp_finish["text"]
        assert got.finish_reason == exp_finish["finishReason"]
        _wire_keys_match(exp_finish, got.to_wire(), "onFinish")


_WIRE_KEYS = (
    "stepType",
    "finishReason",
    "text",
    "reasoningText",
    "usage",
    "totalUsage",
    "toolCalls",
    "toolResults",
)


def _wire_keys_match(expected: dict[str, Any], wire: dict[str, Any], where: str) -> None:
    """The typed event's own JSON (``to_wire()``) carries Mastra's keys with Mastra's values."""
    for key in _WIRE_KEYS:
        if key in expected:
            _matches(to_wire(expected[key]), wire.get(key), f"{where}.to_wire().{key}")


def _check_prompts(model: ScriptedModel, expected: list[dict[str, Any]]) -> None:
    for exp_call in expected:
        call = model.calls[exp_call["index"]]
        _matches(to_wire(exp_call["prompt"]), to_jsonable(call.prompt), f"modelCalls[{call.index}].prompt")


@pytest.mark.parametrize("path", _params())
async def test_vector(path: Any) -> None:
    vector = load(path)
    _apply_divergences(vector, path.stem)
    executions: list[dict[str, Any]] = []
    output, chunks, calls, model, agent, sub_models = await _run(vector, executions)
    _check_chunks(to_wire(vector["expectedChunks"]), chunks)

    # 3. prompts fed back to the model (and to the sub-agents' models)
    assert len(model.calls) == len(vector["modelCalls"])
    _check_prompts(model, vector["modelCalls"])
    sub_calls = [c for m in sub_models for c in m.calls]
    assert len(sub_calls) == len(vector.get("subAgentCalls", []))
    for call, exp_call in zip(sub_calls, vector.get("subAgentCalls", []), strict=True):
        _matches(to_wire(exp_call["prompt"]), to_jsonable(call.prompt), f"subAgentCalls[{call.index}].prompt")

    # 4. awaited results, 5. callbacks
    skip = MODEL_OUTPUT_DIVERGENCES.get(path.stem, {})
    await _check_results(output, vector["results"], skip)
    if "processorTrace" in vector:
        assert calls["processorTrace"] == vector["processorTrace"]
    _check_callbacks(vector["callbacks"], calls, skip)

    # 6. follow-up legs (approve / decline / resume) on the same agent, continuing the run
    for k, leg in enumerate(vector.get("legs", [])):
        before = len(model.calls)
        leg_calls, leg_options = _recording_callbacks()
        leg_output = _start_leg(agent, leg, leg_options)
        leg_chunks = await _read(leg_output)
        _check_chunks(to_wire(leg["expectedChunks"]), leg_chunks)
        assert len(model.calls) - before == len(leg["modelCalls"]), f"legs[{k}] model calls"
        _check_prompts(model, leg["modelCalls"])
        await _check_results(leg_output, leg["results"], skip)
        _check_callbacks(leg["callbacks"], leg_calls, skip)
    # 7. goals: what the judge was asked, and the objective record after the run
    goal: _Goal | None = vector["$goal"]
    if goal is not None:
        await _check_goal(vector, goal, agent)
    recorded = vector.get("toolExecutions")
    if recorded is not None:
        assert [(e["tool"], e["input"]) for e in executions] == [(e["tool"], e["input"]) for e in recorded]


async def _check_goal(vector: dict[str, Any], goal: _Goal, agent: Agent) -> None:
    calls = goal.judge.calls
    assert len(calls) == len(vector["judgeCalls"])
    _matches(to_wire(vector["judgeCalls"][0]["prompt"]), to_jsonable(calls[0].prompt), "judgeCalls[0].prompt")
    for call, exp_call in zip(calls[1:], vector["judgeCalls"][1:], strict=True):
        _matches(
            _judge_prompt_in_time(to_wire(exp_call["prompt"])),
            _texts(call.prompt),
            f"judgeCalls[{call.index}]",
        )
    thread = vector["agent"]["options"]["memory"]["thread"]
    after = await agent.get_objective(thread_id=thread)
    assert after is not None and after.to_json() == vector["goal"]["objectiveAfter"]


def _texts(prompt: list[dict[str, Any]]) -> list[Any]:
    """Role and text parts of each message (stored history carries no ``providerOptions``)."""
    out: list[Any] = []
    for message in to_jsonable(prompt):
        content = message["content"]
        texts = [content] if isinstance(content, str) else [p["text"] for p in content]
        out.append((message["role"], texts))
    return out


def _judge_prompt_in_time(expected: list[dict[str, Any]]) -> list[Any]:
    """A later judge call as we make it: the judge's history (its earlier questions and verdicts)
    before the new question, which carries the JSON instruction. The recording (a frozen clock:
    every message has the same timestamp) put the new question first, without the instruction;
    with time moving, the new question is the latest message (docs/decisions/goals.md)."""
    system, question, *history = expected
    instruction = history[0]["content"][-1]
    reordered = [system, *history, {**question, "content": [*question["content"], instruction]}]
    return _texts(reordered)


def _differences(expected: Any, actual: Any, path: str = "") -> dict[str, tuple[Any, Any]]:
    """Every path where ``actual`` differs from ``expected`` (ids normalised), with both values."""
    if isinstance(expected, str) and _ID.match(expected) and isinstance(actual, str) and actual:
        return {}
    if isinstance(expected, dict) and isinstance(actual, dict):
        out: dict[str, tuple[Any, Any]] = {}
        for key in [*expected, *(k for k in actual if k not in expected)]:
            where = f"{path}.{key}"
            if key not in expected or key not in actual:
                out[where] = (expected.get(key, ABSENT), actual.get(key, ABSENT))
            else:
                out.update(_differences(expected[key], actual[key], where))
        return out
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        out = {}
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            out.update(_differences(e, a, f"{path}[{i}]"))
        return out
    return {} if expected == actual else {path: (expected, actual)}


_CHUNK_PATH = re.compile(r"^expectedChunks\[(\d+)\]")
ON_THE_STREAM = sorted({(d.vector, int(m.group(1))) for d in DIVERGENCES if (m := _CHUNK_PATH.match(d.path))})


@pytest.mark.parametrize(("name", "index"), ON_THE_STREAM, ids=[f"{n}[{i}]" for n, i in ON_THE_STREAM])
async def test_a_divergence_is_exactly_its_difference(name: str, index: int) -> None:
    """The vector run as recorded: the divergent chunk differs from Mastra's exactly at the listed
    paths, with exactly our listed values, and nowhere else."""
    vector = load(VECTORS_DIR / f"{name}.json")
    _, chunks, *_ = await _run(vector)
    recorded = to_wire(vector["expectedChunks"])[index]
    declared = {
        d.path.removeprefix(f"expectedChunks[{index}]"): d
        for d in DIVERGENCES
        if d.vector == name and d.path.startswith(f"expectedChunks[{index}].")
    }
    found = _differences(recorded, chunks[index])

    def under(found_path: str, declared_path: str) -> bool:
        return found_path == declared_path or found_path.startswith(
            (f"{declared_path}.", f"{declared_path}[")
        )

    undeclared = [f for f in found if not any(under(f, d) for d in declared)]
    assert not undeclared, (
        f"{name} chunk {index}: differs from Mastra where no divergence says so: {undeclared}"
    )
    for where, d in declared.items():
        assert any(under(f, where) for f in found), f"{name} chunk {index}{where}: matches Mastra now"
        assert _at(chunks[index], where.removeprefix(".")) == d.ours, f"{name} chunk {index}{where}"
