"""Mastra Studio (``mastra studio``, the real page from the ``mastra`` package) in headless
Chromium against the demo app: the agents list, a chat in which the agent calls its weather tool,
a tool call approved with Studio's own button, and one declined with its own button (the agent
goes on with the decline, as Mastra's ``sendToolApproval`` does). Each step's screenshot is
checked in the test's own directory (`studio_shots`, copied to ``.cache/e2e/mastra-api/``) and
the page's text is checked for what a person would see; no console error, no failed API call
(but those of the route groups still being built, see `pending_groups`)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.mastra_api.conftest import (
    HERE,
    ApiServer,
    chromium,
    pending_groups,
    run_node,
    studio,
    unexplained_failures,
)

STEPS = ["agents", "chat", "approval", "decline", "decline-reloaded"]


def test_studio_lists_the_agents_chats_with_a_tool_call_approves_one_and_declines_one(
    demo_api: ApiServer, studio_shots: Path
) -> None:
    with studio(demo_api.base_url, demo_api.studio_port) as url:
        result = run_node(
            HERE / "studio-chat.mjs",
            *(
                "--studio",
                url,
                "--api",
                demo_api.base_url,
                "--chromium",
                chromium(),
                "--shots",
                str(studio_shots),
            ),
            *("--approve", "Book a table at Luigi's for 4", "--decline", "Book a table at Mario's for 2"),
        )
    assert result.stdout, result.stderr[-2000:]
    report = json.loads(result.stdout)
    steps = report["steps"]
    assert list(steps) == STEPS
    for name, step in steps.items():
        assert step["ok"], (
            f"{name}: {step.get('error')}\n{step['text'][:1500]}\n(screenshots: {studio_shots})"
        )
        assert (studio_shots / f"studio-{name}.png").stat().st_size > 20_000, studio_shots
    for asked in ("studio-approval-asked.png", "studio-decline-asked.png"):
        assert (studio_shots / asked).stat().st_size > 20_000, studio_shots
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
    # Studio's decline button sent a decline, and the run went on with it: the tool did not run
    # (no booking at Mario's), the model answered from "not approved"; Studio keeps the call's
    # buttons disabled with the declined one marked, as it does on Mastra's stream
    assert [a["approved"] for a in report["approvals"]] == [True, False], report["approvals"]
    assert all(a["status"] == 200 for a in report["approvals"])
    declined = steps["decline"]["text"]
    assert declined.count("Book a table at Mario's for 2") == 1, declined
    assert "I have not made the booking (Tool call was not approved by the user)" in declined
    assert "at Mario's is booked" not in declined and "Mario's is booked" not in declined
    assert steps["decline"]["declineDisabledAfter"] is True
    # reloaded, the thread as stored: the decline and the answer, once, no approval left to give
    reloaded = steps["decline-reloaded"]["text"]
    assert reloaded.count("Book a table at Mario's for 2") == 1, reloaded
    assert reloaded.count("I have not made the booking (Tool call was not approved by the user)") == 1
    assert "Mario's is booked" not in reloaded
    assert steps["decline-reloaded"]["approvalButtonsLeft"] == 0
    # each call once: a resumed run's answer is stored as the rest of the message it stopped in
    # (Mastra's message list), not as a second message repeating the call without its result
    assert reloaded.count("Book table") == 2, reloaded
    failed, errors = unexplained_failures(report)
    assert not failed, f"failed API calls: {failed} (pending groups: {pending_groups()})"
    assert not errors, f"console errors: {errors}"
