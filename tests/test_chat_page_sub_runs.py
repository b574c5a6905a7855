"""The built-in chat page shows a sub-agent run as a tool while it works (headless Chromium).

The page's routes stream with ``include_sub_agent_metadata``: the ``data-tool-agent`` snapshots
render as a card under the ``agent-<name>`` tool card. Skipped like tests/test_chat_page.py when
the browser tooling is missing.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentstream import Agent, Mastra
from agentstream.testing import ScriptedModel
from tests.test_chat_page import drive, serving


def _text(text: str) -> list[dict[str, object]]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": text},
        {"type": "text-end", "id": "t"},
        {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 7, "outputTokens": 6}},
    ]


def test_the_page_shows_the_sub_agent_run(tmp_path: Path) -> None:
    from agentstream._app import create_app

    researcher = Agent(
        id="researcher-agent",
        description="Researches a topic",
        model=ScriptedModel([_text("Tides follow the moon.")]),
    )
    call = [
        {"type": "stream-start", "warnings": []},
        {
            "type": "tool-call",
            "toolCallId": "call-1",
            "toolName": "agent-researcher",
            "input": json.dumps({"prompt": "Research tides"}),
        },
        {"type": "finish", "finishReason": "tool-calls", "usage": {"inputTokens": 3, "outputTokens": 2}},
    ]
    boss = Agent(id="boss", model=ScriptedModel([call, _text("Done.")]), agents={"researcher": researcher})
    with serving(create_app(Mastra(agents={"boss": boss}), delay_in_ms=None)) as url:
        out = drive(url, tmp_path, "Tell me about tides")
    assert out["consoleErrors"] == [], out["requests"]
    (turn,) = out["turns"]
    cards = [(t["name"], t["state"]) for t in turn["tools"]]
    assert cards == [("tool agent-researcher", "output-available"), ("↳ agent researcher-agent", "finished")]
    assert "Tides follow the moon." in turn["text"] and "Done." in turn["text"]


def test_the_page_shows_the_workflow_run(tmp_path: Path) -> None:
    from agentstream._app import create_app
    from agentstream.workflows import StepContext, create_step, create_workflow

    async def shout(ctx: StepContext) -> dict[str, str]:
        return {"loud": str(ctx.input_data["word"]).upper()}

    workflow = create_workflow(id="shouter").then(create_step(id="shout", execute=shout)).commit()
    call = [
        {"type": "stream-start", "warnings": []},
        {
            "type": "tool-call",
            "toolCallId": "call-1",
            "toolName": "workflow-shout",
            "input": json.dumps({"inputData": {"word": "tide"}}),
        },
        {"type": "finish", "finishReason": "tool-calls", "usage": {"inputTokens": 3, "outputTokens": 2}},
    ]
    boss = Agent(id="boss", model=ScriptedModel([call, _text("Shouted.")]), workflows={"shout": workflow})
    with serving(create_app(Mastra(agents={"boss": boss}), delay_in_ms=None)) as url:
        out = drive(url, tmp_path, "Shout tide")
    assert out["consoleErrors"] == [], out["requests"]
    (turn,) = out["turns"]
    cards = [(t["name"], t["state"]) for t in turn["tools"]]
    assert cards == [("tool workflow-shout", "output-available"), ("↳ workflow shouter", "success")]
    assert any('"loud":"TIDE"' in line for line in turn["tools"][0]["body"])
    assert "Shouted." in turn["text"]
