"""Goal objective records in every backend's thread-state domain (Mastra's ``GoalObjectiveRecord`` JSON)."""

from __future__ import annotations

import json

from agentstream.agent import Agent
from agentstream.memory import Memory
from agentstream.storage import BaseStore
from agentstream.testing import ScriptedModel

NOW = 946684800000


def _text(text: str) -> list[dict[str, object]]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-delta", "id": "t", "delta": text},
        {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1, "outputTokens": 1}},
    ]


async def test_a_judged_run_updates_the_stored_record(store: BaseStore) -> None:
    judge = ScriptedModel(
        [
            _text(json.dumps({"decision": "continue", "reason": "More."})),
            _text('{"decision":"done","reason":"Ok."}'),
        ]
    )
    agent = Agent(
        id="a",
        model=ScriptedModel([_text("a"), _text("a b")]),
        memory=Memory(store),
        goal={"judge": judge},
        default_options={"clock": lambda: NOW},
    )
    await agent.set_objective("Two words", thread_id="t", resource_id="r", id="g", max_runs=4)
    output = agent.stream("go", memory={"thread": "t", "resource": "r"})
    await output.consume_stream()
    assert await store.get_thread_state("t", "goal") == {
        "id": "g",
        "objective": "Two words",
        "status": "done",
        "runsUsed": 2,
        "activeDurationMs": 0,
        "startedAt": NOW,
        "updatedAt": NOW,
        "maxRuns": 4,
    }
    # the judge's own thread holds its questions and verdicts
    page = await store.list_messages("t-g")
    assert [m.role for m in page.messages] == ["user", "assistant", "user", "assistant"]
    assert await agent.clear_objective(thread_id="t") is True
    assert await store.get_thread_state("t", "goal") is None
