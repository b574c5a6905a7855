"""Mastra Studio (``mastra studio``, the real page from the ``mastra`` package) in headless
Chromium against the demo app: the agents list, a chat in which the agent calls its weather tool,
and a tool call approved with Studio's own button. Each step's screenshot is kept
(``.cache/e2e/mastra-api/``) and the page's text is checked for what a person would see; no
console error, no failed API call (but those of the route groups still being built, see
`pending_groups`)."""

from __future__ import annotations

import json

from tests.mastra_api.conftest import (
    HERE,
    SHOTS,
    ApiServer,
    chromium,
    pending_groups,
    run_node,
    studio,
    unexplained_failures,
)


def test_studio_lists_the_agents_chats_with_a_tool_call_and_approves_one(demo_api: ApiServer) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    with studio(demo_api.base_url, demo_api.studio_port) as url:
        result = run_node(
            HERE / "studio-chat.mjs",
            *("--studio", url, "--api", demo_api.base_url, "--chromium", chromium(), "--shots", str(SHOTS)),
            *("--approve", "Book a table at Luigi's for 4"),
        )
    assert result.stdout, result.stderr[-2000:]
    report = json.loads(result.stdout)
    steps = report["steps"]
    assert list(steps) == ["agents", "chat", "approval"]
    for name, step in steps.items():
        assert step["ok"], f"{name}: {step.get('error')}\n{step['text'][:1500]}"
        assert (SHOTS / f"studio-{name}.png").stat().st_size > 20_000
    assert "Demo Agent" in steps["agents"]["text"]
    assert "You are a helpful assistant. Use the tools when they help." in steps["agents"]["text"]
    chat = steps["chat"]["text"]
    assert "What's the weather in Paris?" in chat and "Weather" in chat  # the prompt and the tool call
    # once: Studio's pending copy and the thread's stored message are the same message
    assert chat.count("What's the weather in Paris?") == 1, chat
    assert steps["approval"]["text"].count("Book a table at Luigi's for 4") == 1
    assert "In Paris it is currently" in chat
    assert (
        "Book table" in steps["approval"]["text"] and "is booked (confirmation" in steps["approval"]["text"]
    )
    assert "POST /api/agents/demo-agent/send-tool-approval 200" in report["calls"]
    failed, errors = unexplained_failures(report)
    assert not failed, f"failed API calls: {failed} (pending groups: {pending_groups()})"
    assert not errors, f"console errors: {errors}"
