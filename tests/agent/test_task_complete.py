"""``is_task_complete``: scorers after each answer, the ``is-task-complete`` chunk, the feedback message."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from agentstream.agent import Agent, CompletionContext
from agentstream.chunks import Goal, IsTaskComplete, chunk_to_dict
from agentstream.memory import Memory
from agentstream.models import StreamPart
from agentstream.storage import InMemoryStore
from agentstream.testing import ScriptedModel


def _text(text: str) -> list[StreamPart]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-delta", "id": "t", "delta": text},
        {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1, "outputTokens": 1}},
    ]


class Contains:
    """Passes when the answer contains ``word``."""

    def __init__(self, word: str, *, name: str | None = None) -> None:
        self.id = f"contains-{word}"
        if name:
            self.name = name
        self.word = word
        self.seen: list[CompletionContext] = []

    async def run(self, context: CompletionContext) -> dict[str, Any]:
        self.seen.append(context)
        ok = self.word in context.current_text
        return {"score": 1 if ok else 0, "reason": f"{'has' if ok else 'lacks'} {self.word}"}


class Broken:
    id = "broken"
    name = "Broken"

    async def run(self, context: CompletionContext) -> dict[str, Any]:
        raise RuntimeError("no disk")


class Forever:
    id = "forever"

    def __init__(self) -> None:
        self.never = asyncio.Event()

    async def run(self, context: CompletionContext) -> dict[str, Any]:
        await self.never.wait()
        return {"score": 1}


def _agent(model: ScriptedModel) -> Agent:
    return Agent(id="a", model=model, default_options={"clock": lambda: 0})


def _checks(chunks: list[Any]) -> list[dict[str, Any]]:
    return [chunk_to_dict(c)["payload"] for c in chunks if isinstance(c, IsTaskComplete)]


async def test_not_complete_feeds_back_and_continues_until_it_is() -> None:
    model = ScriptedModel([_text("a draft"), _text("the final answer")])
    scorer = Contains("final", name="Final?")
    output = _agent(model).stream("Answer me", is_task_complete={"scorers": [scorer]})
    chunks = [c async for c in output.full_stream]
    checks = _checks(chunks)
    assert [(c["iteration"], c["passed"]) for c in checks] == [(1, False), (2, True)]
    assert checks[0]["results"] == [
        {
            "score": 0,
            "passed": False,
            "reason": "lacks final",
            "scorerId": "contains-final",
            "scorerName": "Final?",
            "duration": 0,
        }
    ]
    assert checks[1]["reason"] == "has final" and checks[0]["maxIterationReached"] is False
    feedback = model.calls[1].prompt[-1]
    assert feedback["role"] == "assistant"
    assert feedback["content"][0]["text"] == (
        "#### Completion Check Results\n\nOverall: ❌ NOT COMPLETE\nDuration: 0ms\n\n"
        "**Final?** (contains-final)\nScore: 0 ❌\nReason: lacks final\n\n"
        "🔄 The task is not yet complete. Please continue working based on the feedback above."
    )
    assert scorer.seen[0].original_task == "Answer me" and scorer.seen[1].iteration == 2
    assert await output.text == "a draftthe final answer"
    assert len(model.calls) == 2


async def test_strategy_any_needs_one() -> None:
    model = ScriptedModel([_text("final")])
    chunks = [
        c
        async for c in _agent(model)
        .stream("x", is_task_complete={"scorers": [Contains("nope"), Contains("final")], "strategy": "any"})
        .full_stream
    ]
    (check,) = _checks(chunks)
    assert check["passed"] is True and check["reason"] == "has final" and len(check["results"]) == 2


async def test_a_throwing_scorer_fails_its_check() -> None:
    model = ScriptedModel([_text("a"), _text("b")])
    output = _agent(model).stream("x", is_task_complete={"scorers": [Broken()]}, max_steps=2)
    checks = _checks([c async for c in output.full_stream])
    assert checks[0]["results"][0]["reason"] == "Scorer threw an error: no disk"
    assert checks[-1]["maxIterationReached"] is True
    assert "⚠️ Max iterations reached." not in json.dumps(model.calls[1].prompt)  # said after the last step


async def test_sequential_all_short_circuits() -> None:
    second = Contains("a")
    model = ScriptedModel([_text("a")])
    config = {"scorers": [Contains("zzz"), second], "parallel": False}
    chunks = [c async for c in _agent(model).stream("x", is_task_complete=config, max_steps=1).full_stream]
    (check,) = _checks(chunks)
    assert check["passed"] is False and len(check["results"]) == 1 and second.seen == []


async def test_timeout_reports_timed_out() -> None:
    model = ScriptedModel([_text("a")])
    config = {"scorers": [Forever(), Contains("a")], "timeout": 20}
    chunks = [c async for c in _agent(model).stream("x", is_task_complete=config, max_steps=1).full_stream]
    (check,) = _checks(chunks)
    assert check["timedOut"] is True and check["passed"] is False
    assert [r["scorerId"] for r in check["results"]] == ["contains-a"]


async def test_on_complete_sees_the_result() -> None:
    seen: list[dict[str, Any]] = []

    async def on_complete(result: dict[str, Any]) -> None:
        seen.append(result)

    model = ScriptedModel([_text("a")])
    config = {"scorers": [Contains("a")], "on_complete": on_complete, "suppress_feedback": True}
    chunks = [c async for c in _agent(model).stream("x", is_task_complete=config).full_stream]
    assert seen[0]["complete"] is True and _checks(chunks)[0]["suppressFeedback"] is True


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"scorers": [object()]}, r"is_task_complete.scorers\[0\] must have an id"),
        ({"scorers": [], "strategy": "most"}, "is_task_complete.strategy must be 'all' or 'any'"),
        ({"scorers": [], "timeout": 0}, "is_task_complete.timeout must be a positive number"),
        ({"scorerz": []}, "unknown is_task_complete option"),
    ],
)
async def test_bad_config_is_named(config: dict[str, Any], message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        _agent(ScriptedModel([_text("a")])).stream("x", is_task_complete=config)


async def test_the_goal_is_judged_once_the_task_is_complete() -> None:
    judge = ScriptedModel(
        [
            [
                {"type": "stream-start", "warnings": []},
                {"type": "text-delta", "id": "j", "delta": '{"decision":"done","reason":"ok"}'},
                {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1, "outputTokens": 1}},
            ]
        ]
    )
    model = ScriptedModel([_text("draft"), _text("final")])
    agent = Agent(id="a", model=model, memory=Memory(InMemoryStore()), goal={"judge": judge})
    await agent.set_objective("Finish", thread_id="t")
    output = agent.stream(
        "x", memory={"thread": "t", "resource": "r"}, is_task_complete={"scorers": [Contains("final")]}
    )
    chunks = [c async for c in output.full_stream]
    kinds = [c.type for c in chunks if isinstance(c, IsTaskComplete | Goal)]
    assert kinds == ["is-task-complete", "is-task-complete", "goal", "goal", "goal"]
    assert len(judge.calls) == 1
