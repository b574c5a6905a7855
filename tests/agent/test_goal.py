"""Goals beyond the two recordings: the objective API, every judge decision, judge failures, the
budget, custom scorers, tools and aborts (each storage backend: tests/storage/test_goal_records.py)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from agentstream._abort import AbortController
from agentstream.agent import Agent, GoalScoreContext
from agentstream.chunks import DataChunk, Goal, chunk_to_dict
from agentstream.memory import Memory
from agentstream.models import StreamPart
from agentstream.storage import InMemoryStore, Storage
from agentstream.testing import ScriptedModel
from agentstream.tools import tool

NOW = 946684800000
THREAD = "thread-1"
MEMORY = {"thread": THREAD, "resource": "user-1"}


def _text(text: str, usage: int = 1) -> list[StreamPart]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": text},
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": usage, "outputTokens": 1}},
    ]


def _verdict(decision: str, reason: str, *, split: int | None = None) -> list[StreamPart]:
    answer = json.dumps({"decision": decision, "reason": reason})
    pieces = [answer] if split is None else [answer[i : i + split] for i in range(0, len(answer), split)]
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "j"},
        *({"type": "text-delta", "id": "j", "delta": p} for p in pieces),
        {"type": "text-end", "id": "j"},
        {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 5, "outputTokens": 5}},
    ]


def _raw(text: str) -> list[StreamPart]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-delta", "id": "j", "delta": text},
        {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1, "outputTokens": 1}},
    ]


def _agent(model: Any, judge: Any = None, storage: Storage | None = None, **goal: Any) -> Agent:
    return Agent(
        id="writer",
        instructions="You write.",
        model=model,
        memory=Memory(storage or InMemoryStore()),
        goal={"judge": judge, **goal},
        default_options={"clock": lambda: NOW},
    )


async def _chunks(agent: Agent, prompt: str = "Write a haiku", **options: Any) -> list[Any]:
    output = agent.stream(prompt, memory=MEMORY, **options)
    return [c async for c in output.full_stream]


def _goals(chunks: list[Any]) -> list[dict[str, Any]]:
    return [chunk_to_dict(c)["payload"] for c in chunks if isinstance(c, Goal)]


def _reminders(chunks: list[Any]) -> list[str]:
    return [
        c.data["contents"]
        for c in chunks
        if isinstance(c, DataChunk) and c.type == "data-signal" and c.data["tagName"] == "system-reminder"
    ]


# ------------------------------------------------------------------------------- objective API


async def test_objective_record_round_trip_in_mastra_json() -> None:
    storage = InMemoryStore()
    agent = _agent(ScriptedModel([]), ScriptedModel([]), storage)
    record = await agent.set_objective(
        "Ship it", thread_id=THREAD, resource_id="user-1", max_runs=3, judge_model_id="demo", prompt="Judge."
    )
    assert record.status == "active" and record.runs_used == 0 and record.max_runs == 3 and record.id
    stored = await storage.get_thread_state(THREAD, "goal")
    assert stored == {
        "id": record.id,
        "objective": "Ship it",
        "status": "active",
        "runsUsed": 0,
        "activeDurationMs": 0,
        "startedAt": NOW,
        "updatedAt": NOW,
        "maxRuns": 3,
        "judgeModelId": "demo",
        "prompt": "Judge.",
    }
    assert await storage.find_thread(THREAD) is not None  # resource_id creates the thread
    assert await agent.get_objective(thread_id=THREAD) == record

    paused = await agent.update_objective_options(thread_id=THREAD, status="paused", max_runs=9)
    assert paused is not None and paused.status == "paused" and paused.max_runs == 9
    assert await agent.clear_objective(thread_id=THREAD) is True
    assert await agent.get_objective(thread_id=THREAD) is None
    assert await agent.clear_objective(thread_id=THREAD) is False
    assert await agent.update_objective_options(thread_id=THREAD, status="active") is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"objective": ""}, "objective must be a non-empty string"),
        ({"max_runs": 0}, "max_runs must be a positive integer, got 0"),
        ({"max_runs": True}, "max_runs must be a positive integer, got True"),
    ],
)
async def test_set_objective_rejects_bad_input(kwargs: dict[str, Any], message: str) -> None:
    agent = _agent(ScriptedModel([]), ScriptedModel([]))
    args = {"objective": "Ship it", "thread_id": THREAD, **kwargs}
    objective = args.pop("objective")
    with pytest.raises(ValueError, match=message):
        await agent.set_objective(objective, **args)


@pytest.mark.parametrize(
    ("goal", "message"),
    [
        ({"judje": "x"}, "unknown goal option"),
        ({"max_runs": -1}, "goal.max_runs must be a positive integer"),
        ({"prompt": 3}, "goal.prompt must be a string"),
        ({"scorer": object()}, "goal.scorer must have id, name"),
        ({"judge": 42}, "goal.judge must be a LanguageModel"),
        ({"max_steps": 0}, "goal.max_steps must be a positive integer"),
        ({"tools": {}}, r"goal.tools \(read-only tools for the judge\) is not supported"),
    ],
)
def test_goal_config_names_the_bad_field(goal: dict[str, Any], message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        Agent(id="a", model=ScriptedModel([]), goal=goal)


async def test_objectives_need_storage() -> None:
    agent = Agent(id="a", model=ScriptedModel([]), memory=Memory(), goal={"judge": ScriptedModel([])})
    with pytest.raises(ValueError, match="goals need storage"):
        await agent.set_objective("x", thread_id=THREAD)


async def test_a_corrupt_stored_record_is_named() -> None:
    storage = InMemoryStore()
    await storage.set_thread_state(THREAD, "goal", {"objective": "x", "status": "sleeping"})
    agent = _agent(ScriptedModel([]), ScriptedModel([]), storage)
    with pytest.raises(ValueError, match="stored goal objective is invalid"):
        await agent.get_objective(thread_id=THREAD)


# ---------------------------------------------------------------------------------- decisions


async def test_continue_then_done_in_one_stream() -> None:
    model = ScriptedModel([_text("Rain"), _text("Rain on the roof")])
    judge = ScriptedModel([_verdict("continue", "Too short."), _verdict("done", "A haiku.")])
    agent = _agent(model, judge)
    await agent.set_objective("Write a haiku", thread_id=THREAD, id="g")
    output = agent.stream("Write a haiku", memory=MEMORY)
    chunks = [c async for c in output.full_stream]

    finals = [g for g in _goals(chunks) if "shouldContinue" in g]
    assert [(g["iteration"], g["status"], g["shouldContinue"]) for g in finals] == [
        (1, "active", True),
        (2, "done", False),
    ]
    reminder = (
        "[Goal attempt 1/50] The goal is not yet complete. Judge feedback: Too short.\n\n"
        "Continue working toward the goal: Write a haiku"
    )
    assert _reminders(chunks) == [reminder, "done (2/50)\nA haiku."]
    second_prompt = model.calls[1].prompt
    assert (
        second_prompt[-1]["content"][0]["text"]
        == f'<system-reminder type="goal-judge">{reminder}</system-reminder>'
    )
    assert second_prompt[-2]["role"] == "assistant" and second_prompt[-2]["content"][0]["text"] == "Rain"
    assert await output.text == "Rain on the roof"  # the continued attempt replaced the first
    record = await agent.get_objective(thread_id=THREAD)
    assert record is not None and (record.status, record.runs_used) == ("done", 2)
    # the judge remembers its first verdict when judging the second attempt
    texts = [
        m["content"] if isinstance(m["content"], str) else m["content"][0]["text"]
        for m in judge.calls[1].prompt
    ]
    assert '{"decision": "continue", "reason": "Too short."}' in texts
    assert texts[-1].endswith(
        "Assistant steps since that user message: 2\n\nLatest assistant message:\nRain on the roof"
    )


async def test_waiting_hands_control_back_and_stays_active() -> None:
    model = ScriptedModel([_text("Which city?")])
    judge = ScriptedModel([_verdict("waiting", "Needs the user's city.")])
    agent = _agent(model, judge)
    await agent.set_objective("Plan a trip", thread_id=THREAD)
    chunks = await _chunks(agent)
    final = _goals(chunks)[-1]
    assert (
        final["waitingForUser"] is True and final["shouldContinue"] is False and final["status"] == "active"
    )
    assert final["results"][0]["score"] == 0.5 and final["passed"] is False
    assert _reminders(chunks) == ["active (1/50)\nNeeds the user's city."]
    record = await agent.get_objective(thread_id=THREAD)
    assert record is not None and (record.status, record.runs_used, record.paused_reason) == (
        "active",
        1,
        None,
    )
    assert len(model.calls) == 1


async def test_activity_follows_the_reason_as_it_streams() -> None:
    judge = ScriptedModel([_verdict("done", "All five lines.", split=7)])
    agent = _agent(ScriptedModel([_text("poem")]), judge)
    await agent.set_objective("Write", thread_id=THREAD)
    goals = _goals(await _chunks(agent))
    activity = [g["activity"][0]["message"] for g in goals if "activity" in g]
    assert activity and activity[-1] == "All five lines."
    assert len(activity) > 1 and all(b.startswith(a) for a, b in itertools.pairwise(activity))
    assert all(g["pending"] and g["suppressFeedback"] for g in goals[:-1])


@pytest.mark.parametrize(
    ("judge_step", "reason"),
    [
        (_raw("I think it is fine"), "Goal evaluation failed: the judge did not answer JSON"),
        (_raw('{"decision": "maybe", "reason": "x"}'), "judge answer .decision: expected 'done'"),
        ({"throws": {"$error": {"name": "APICallError", "message": "judge down"}}}, "judge down"),
    ],
)
async def test_a_failing_judge_pauses_the_goal_not_the_run(judge_step: Any, reason: str) -> None:
    agent = _agent(ScriptedModel([_text("poem")]), ScriptedModel([judge_step]))
    await agent.set_objective("Write", thread_id=THREAD)
    output = agent.stream("Write", memory=MEMORY)
    chunks = [c async for c in output.full_stream]
    final = _goals(chunks)[-1]
    assert final["judgeFailed"] is True and final["status"] == "paused" and final["shouldContinue"] is False
    assert reason in final["pausedReason"] and final["results"][0]["errored"] is True
    assert output.status == "success" and await output.text == "poem"
    record = await agent.get_objective(thread_id=THREAD)
    assert record is not None and record.status == "paused" and reason in (record.paused_reason or "")


async def test_budget_guard_then_resume() -> None:
    storage = InMemoryStore()
    judge = ScriptedModel([_verdict("continue", "More."), _verdict("done", "Good.")])
    model = ScriptedModel([_text("a"), _text("b")])
    agent = _agent(model, judge, storage)
    await agent.set_objective("Write", thread_id=THREAD, max_runs=2)
    await agent.update_objective_options(thread_id=THREAD, max_runs=1)  # before any run: 1 judged turn
    first = _goals(await _chunks(agent))
    assert first[-1]["maxRunsReached"] is True and first[-1]["status"] == "paused"
    record = await agent.get_objective(thread_id=THREAD)
    assert record is not None and record.paused_reason == (
        "Ran out of evaluation budget (1 runs) before reaching the goal \u2014 raise maxRuns to resume."
    )
    # paused: the next run is plain (no objective shown, nobody judges)
    plain = await _chunks(agent)
    assert _goals(plain) == [] and len(judge.calls) == 1
    assert "<current-objective" not in json.dumps(model.calls[1].prompt)
    # active again but with the budget still spent: the guard pauses without asking the judge
    await agent.update_objective_options(thread_id=THREAD, status="active")
    agent = _agent(ScriptedModel([_text("c")]), judge, storage)
    guarded = _goals(await _chunks(agent))
    assert len(guarded) == 1 and guarded[0]["iteration"] == 1 and guarded[0]["maxRunsReached"] is True
    assert guarded[0]["results"] == [] and len(judge.calls) == 1
    # resumed with a bigger budget: judged again
    await agent.update_objective_options(thread_id=THREAD, status="active", max_runs=3)
    agent = _agent(ScriptedModel([_text("d")]), judge, storage)
    resumed = _goals(await _chunks(agent))
    assert resumed[-1]["status"] == "done" and resumed[-1]["iteration"] == 2


async def test_max_steps_caps_goal_iterations() -> None:
    judge = ScriptedModel([_verdict("continue", "More.")] * 2)
    model = ScriptedModel([_text("a"), _text("b")])
    agent = _agent(model, judge)
    await agent.set_objective("Write", thread_id=THREAD)
    output = agent.stream("Write", memory=MEMORY, max_steps=2)
    chunks = [c async for c in output.full_stream]
    assert len(model.calls) == 2 and len(judge.calls) == 2
    finish = chunk_to_dict(chunks[-1])
    assert finish["type"] == "finish" and finish["payload"]["stepResult"]["isContinued"] is False


async def test_tool_steps_are_not_judged_mid_loop() -> None:
    @tool(description="look something up")
    def lookup(q: str) -> str:
        return q.upper()

    tool_step: list[StreamPart] = [
        {"type": "stream-start", "warnings": []},
        {"type": "tool-call", "toolCallId": "c1", "toolName": "lookup", "input": '{"q": "x"}'},
        {"type": "finish", "finishReason": "tool-calls", "usage": {"inputTokens": 1, "outputTokens": 1}},
    ]
    judge = ScriptedModel([_verdict("done", "Found it.")])
    agent = Agent(
        id="a",
        model=ScriptedModel([tool_step, _text("X it is")]),
        tools=[lookup],
        memory=Memory(InMemoryStore()),
        goal={"judge": judge},
    )
    await agent.set_objective("Find x", thread_id=THREAD)
    goals = _goals(await _chunks(agent))
    assert len(judge.calls) == 1 and goals[-1]["status"] == "done"
    assert "Latest assistant message:\nX it is" in judge.calls[0].prompt[1]["content"][0]["text"]


class _Scorer:
    id = "length"
    name = "Long enough"

    def __init__(self, score: Any) -> None:
        self.score = score
        self.seen: list[GoalScoreContext] = []

    async def run(self, context: GoalScoreContext) -> dict[str, Any]:
        self.seen.append(context)
        return {"score": self.score, "reason": f"{len(context.assistant_text)} chars"}


async def test_custom_scorer_decides() -> None:
    scorer = _Scorer(1)
    agent = _agent(ScriptedModel([_text("long enough")]), None, scorer=scorer)
    await agent.set_objective("Write", thread_id=THREAD)
    final = _goals(await _chunks(agent))[-1]
    assert final["status"] == "done" and final["results"][0]["scorerId"] == "length"
    assert final["reason"] == "11 chars" and scorer.seen[0].user_text == "Write a haiku"


async def test_custom_scorer_half_score_is_not_waiting() -> None:
    agent = _agent(ScriptedModel([_text("a"), _text("b")]), None, scorer=_Scorer(0.5), max_runs=2)
    await agent.set_objective("Write", thread_id=THREAD)
    finals = [g for g in _goals(await _chunks(agent)) if "shouldContinue" in g]
    assert [g["waitingForUser"] for g in finals] == [False, False]
    assert finals[-1]["status"] == "paused"


async def test_custom_scorer_with_a_bad_answer_pauses() -> None:
    agent = _agent(ScriptedModel([_text("a")]), None, scorer=_Scorer("high"))
    await agent.set_objective("Write", thread_id=THREAD)
    final = _goals(await _chunks(agent))[-1]
    assert final["judgeFailed"] is True
    assert (
        final["pausedReason"]
        == "Goal evaluation failed: the goal scorer's answer .score: expected a number, got 'high'"
    )


async def test_abort_while_judging_ends_the_run_and_keeps_the_record() -> None:
    controller = AbortController()
    judge = ScriptedModel([[{"type": "stream-start", "warnings": []}, {"$waitForAbort": True}]])
    agent = _agent(ScriptedModel([_text("a")]), judge)
    await agent.set_objective("Write", thread_id=THREAD)
    output = agent.stream("Write", memory=MEMORY, abort_signal=controller.signal)
    types = []
    async for chunk in output.full_stream:
        types.append(chunk.type)
        if isinstance(chunk, Goal) and chunk.payload.pending:
            controller.abort()
    assert types[-2:] == ["abort", "finish"] and "step-finish" not in types
    record = await agent.get_objective(thread_id=THREAD)
    assert record is not None and (record.status, record.runs_used) == ("active", 0)


async def test_no_objective_no_goal_step() -> None:
    judge = ScriptedModel([])
    model = ScriptedModel([_text("hi")])
    chunks = await _chunks(_agent(model, judge))
    assert _goals(chunks) == [] and judge.calls == [] and len(model.calls) == 1
    assert not any(isinstance(c, DataChunk) for c in chunks)


async def test_no_memory_no_goal_step() -> None:
    judge = ScriptedModel([])
    agent = _agent(ScriptedModel([_text("hi")]), judge)
    chunks = [c async for c in agent.stream("hi").full_stream]
    assert _goals(chunks) == [] and judge.calls == []


async def test_the_objective_and_reminders_are_not_stored_in_the_thread() -> None:
    storage = InMemoryStore()
    judge = ScriptedModel([_verdict("continue", "More."), _verdict("done", "Ok.")])
    agent = _agent(ScriptedModel([_text("a"), _text("b")]), judge, storage)
    await agent.set_objective("Write", thread_id=THREAD)
    await _chunks(agent)
    page = await storage.list_messages(THREAD)
    stored = json.dumps([m.content for m in page.messages])
    assert "current-objective" not in stored and "system-reminder" not in stored
    assert "Write a haiku" in stored


async def test_active_duration_counts_the_time_worked() -> None:
    clock = iter(range(NOW, NOW + 10_000, 100))  # every reading of the clock is 100 ms later
    judge = ScriptedModel([_verdict("continue", "More."), _verdict("done", "Ok.")])
    agent = Agent(
        id="a",
        model=ScriptedModel([_text("a"), _text("b")]),
        memory=Memory(InMemoryStore()),
        goal={"judge": judge},
    )
    await agent.set_objective("Write", thread_id=THREAD)
    await _chunks(agent, clock=lambda: next(clock))
    record = await agent.get_objective(thread_id=THREAD)
    assert record is not None and record.status == "done"
    assert record.active_duration_ms is not None and record.active_duration_ms > 0
    assert record.active_duration_ms % 100 == 0


# ------------------------------------------------------------------------- resumed legs


def _approval_agent(judge: Any, model: ScriptedModel, executions: list[str]) -> Agent:
    @tool(description="send it", require_approval=True)
    def send(to: str) -> str:
        executions.append(to)
        return f"sent to {to}"

    return Agent(
        id="mailer",
        model=model,
        tools=[send],
        memory=Memory(InMemoryStore()),
        goal={"judge": judge},
        default_options={"clock": lambda: NOW},
    )


def _send_step() -> list[StreamPart]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "tool-call", "toolCallId": "c1", "toolName": "send", "input": '{"to": "ann"}'},
        {"type": "finish", "finishReason": "tool-calls", "usage": {"inputTokens": 1, "outputTokens": 1}},
    ]


async def test_a_resumed_leg_is_judged() -> None:
    executions: list[str] = []
    judge = ScriptedModel([_verdict("continue", "Say it was sent."), _verdict("done", "Sent.")])
    model = ScriptedModel([_send_step(), _text("done"), _text("It was sent to ann.")])
    agent = _approval_agent(judge, model, executions)
    await agent.set_objective("Mail ann", thread_id=THREAD)
    first = agent.stream("Mail ann please", memory=MEMORY, run_id="r1")
    first_chunks = [c async for c in first.full_stream]
    assert first.status == "suspended" and judge.calls == []  # a suspended step is not judged
    assert [g for g in _goals(first_chunks) if "shouldContinue" in g] == []

    leg = agent.approve_tool_call(run_id="r1")
    chunks = [c async for c in leg.full_stream]
    assert executions == ["ann"] and leg.status == "success"
    finals = [g for g in _goals(chunks) if "shouldContinue" in g]
    assert [(g["iteration"], g["status"], g["shouldContinue"]) for g in finals] == [
        (1, "active", True),
        (2, "done", False),
    ]
    assert all(chunk_to_dict(c)["runId"] == "r1" for c in chunks if isinstance(c, Goal))
    assert await leg.text == "It was sent to ann."
    record = await agent.get_objective(thread_id=THREAD)
    assert record is not None and (record.status, record.runs_used) == ("done", 2)
    # the judge saw the user's own message, not the objective the run showed the model
    judged = judge.calls[0].prompt[-1]["content"][0]["text"]
    assert "Mail ann please" in judged and "Latest assistant message:\ndone" in judged
    # the attempt reminder went to the model in the resumed leg
    assert "[Goal attempt 1/50]" in json.dumps(model.calls[2].prompt)


async def test_a_resumed_leg_is_not_judged_once_the_goal_is_cleared() -> None:
    judge = ScriptedModel([])
    agent = _approval_agent(judge, ScriptedModel([_send_step(), _text("done")]), [])
    await agent.set_objective("Mail ann", thread_id=THREAD)
    first = agent.stream("Mail ann", memory=MEMORY, run_id="r1")
    await first.consume_stream()
    await agent.clear_objective(thread_id=THREAD)
    leg = agent.approve_tool_call(run_id="r1")
    assert _goals([c async for c in leg.full_stream]) == [] and judge.calls == []


async def test_the_judge_answers_in_one_call_within_any_step_budget() -> None:
    # Mastra's judge loops only to call its tools (not supported): one call, whatever max_steps
    judge = ScriptedModel([_verdict("done", "Good.")])
    agent = _agent(ScriptedModel([_text("poem")]), judge, max_steps=1)
    assert agent.goal is not None and agent.goal.max_steps == 1
    await agent.set_objective("Write", thread_id=THREAD)
    final = _goals(await _chunks(agent))[-1]
    assert final["status"] == "done" and len(judge.calls) == 1
