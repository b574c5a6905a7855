"""The demo model as a goal judge and as an agent sent round again by one (all offline)."""

from __future__ import annotations

import json
from typing import Any

from agentstream.agent import DEFAULT_GOAL_JUDGE_PROMPT
from agentstream.models._demo import DemoModel


async def _text(model: DemoModel, prompt: list[dict[str, Any]]) -> str:
    parts = [p async for p in model.do_stream({"prompt": prompt})]
    assert parts[0]["type"] == "stream-start" and parts[-1]["type"] == "finish"
    return "".join(p["delta"] for p in parts if p["type"] == "text-delta")


def _judge_prompt(objective: str, answer: str) -> list[dict[str, Any]]:
    question = f"Goal: {objective}\n\nLatest assistant message:\n{answer}"
    return [
        {"role": "system", "content": DEFAULT_GOAL_JUDGE_PROMPT},
        {"role": "user", "content": [{"type": "text", "text": question}]},
    ]


async def test_the_demo_judge_names_what_is_missing() -> None:
    model = DemoModel(delay_ms=0)
    verdict = json.loads(
        await _text(model, _judge_prompt("Describe rainbows with a haiku", "A rainbow is light."))
    )
    assert verdict == {"decision": "continue", "reason": "Cover what is still missing: describe, haiku."}
    done = json.loads(await _text(model, _judge_prompt("rainbows and haiku", "A rainbow haiku.")))
    assert done["decision"] == "done"


async def test_a_reminder_gets_a_completed_answer_and_goal_messages_are_not_questions() -> None:
    model = DemoModel(delay_ms=0)
    reminder = (
        '<system-reminder type="goal-judge">[Goal attempt 1/5] The goal is not yet complete. Judge feedback: '
        "Cover what is still missing: haiku.\n\nContinue working toward the goal: x</system-reminder>"
    )
    prompt = [
        {"role": "user", "content": [{"type": "text", "text": "How do rainbows form?"}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": '<current-objective status="active">\n  x\n</current-objective>'}
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "First attempt."}]},
        {"role": "user", "content": [{"type": "text", "text": reminder}]},
    ]
    text = await _text(model, prompt)
    assert text.startswith("First attempt.\n\nOn haiku:")
    first = await _text(model, prompt[:2])
    assert "refracts" in first  # the objective message is not taken for the question
