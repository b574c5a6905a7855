"""The chat page answers a run that waits for the user, in headless Chromium: Approve / Deny buttons
on a tool call that needs approval, a form (fields from the resume schema) for a suspended tool.
Screenshots: ``.cache/e2e/approval.png``, ``.cache/e2e/suspended.png``, ``.cache/e2e/empty.png`` (a new
chat's hint and example prompts)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.test_chat_page import CHROMIUM, PLAYWRIGHT, SCREENSHOT, serving

SHOTS = SCREENSHOT.parent

DRIVER = r"""
const [playwrightPath, url, shots] = process.argv.slice(2);
const { chromium } = require(playwrightPath);
const idle = () => document.getElementById("log").getAttribute("aria-busy") === "false";
(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu"],
  });
  const out = { consoleErrors: [], requests: [], steps: {} };
  const lastText = (page) => page.evaluate(() => {
    const ms = [...document.querySelectorAll(".msg.assistant")];
    const last = ms[ms.length - 1];
    return {
      text: [...last.querySelectorAll(".text")].map((t) => t.textContent).join(""),
      asks: [...last.querySelectorAll(".ask")].map((a) => a.textContent),
      tools: [...last.querySelectorAll(".tool .state")].map((s) => s.textContent),
      // the order of the question and tool cards in the message: "ask" / "tool"
      order: [...last.querySelectorAll(".ask, .tool")].map((e) => (e.classList.contains("ask") ? "ask" : "tool")),
      notRun: [...last.querySelectorAll(".tool pre")].map((p) => p.textContent).filter((t) => t.startsWith("not run")),
      messages: document.querySelectorAll(".msg.assistant").length,
    };
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1000, height: 800 } });
    page.on("console", (m) => { if (m.type() === "error") out.consoleErrors.push(m.text()); });
    page.on("pageerror", (e) => out.consoleErrors.push("pageerror: " + e.message));
    page.on("response", (r) => { const p = new URL(r.url()).pathname; if (p.startsWith("/api/chat") && p !== "/api/chat/info") out.requests.push(r.status()); });
    await page.goto(url);
    await page.waitForSelector("#log[data-ready=true]");
    out.empty = await page.$eval("#log", (l) => ({
      text: l.querySelector(".empty") ? l.querySelector(".empty p").textContent : null,
      examples: [...l.querySelectorAll(".empty button.example")].map((b) => b.textContent),
    }));
    await page.screenshot({ path: shots + "/empty.png" });
    await page.click('.empty button.example:has-text("Book a table")');
    out.filled = await page.$eval("#input", (i) => i.value);
    await page.fill("#input", "");
    const ask = async (prompt, selector) => {
      await page.fill("#input", prompt);
      await page.click("#send");
      await page.waitForSelector(selector, { timeout: 30000 });
      await page.waitForFunction(idle);
    };
    const settle = (text) => page.waitForFunction(
      (t) => document.getElementById("log").getAttribute("aria-busy") === "false" &&
             [...document.querySelectorAll(".msg.assistant .text")].some((e) => e.textContent.includes(t)),
      text, { timeout: 30000 });

    await ask("book a table at Luigi for 4", ".ask button.approve");
    out.steps.waiting = await lastText(page);
    await page.screenshot({ path: shots + "/approval.png", fullPage: true });
    await page.click(".ask button.approve");
    await settle("is booked");
    out.steps.approved = await lastText(page);

    await ask("book a table at Roma for 2", ".ask button.deny");
    await page.fill(".ask input[name=reason]", "too far");
    await page.click(".ask button.deny");
    await settle("not made the booking");
    out.steps.denied = await lastText(page);

    await ask("pick a time at Luigi", ".ask select[name=time]");
    out.steps.form = await page.$$eval(".ask select[name=time] option", (os) => os.map((o) => o.textContent));
    await page.selectOption(".ask select[name=time]", JSON.stringify("19:30"));
    await page.screenshot({ path: shots + "/suspended.png", fullPage: true });
    await page.click(".ask button:not(.approve):not(.deny)");
    await settle("19:30 at Luigi");
    out.steps.resumed = await lastText(page);

    // A reload with nothing kept in the tab: the three answers come back from the memory thread,
    // each question shown answered (no buttons), each call in the state it ended in.
    await page.evaluate(() => sessionStorage.clear());
    await page.reload();
    await page.waitForSelector("#log[data-ready=true]");
    await page.waitForFunction(() => document.querySelectorAll(".msg.assistant").length === 3, null, { timeout: 30000 });
    out.reloaded = await page.evaluate(() => [...document.querySelectorAll(".msg.assistant")].map((m) => ({
      text: [...m.querySelectorAll(".text")].map((t) => t.textContent).join(""),
      tools: [...m.querySelectorAll(".tool .state")].map((s) => s.textContent),
      buttons: m.querySelectorAll(".ask button").length,
      notRun: [...m.querySelectorAll(".tool pre")].map((p) => p.textContent).filter((t) => t.startsWith("not run")),
    })));
    await page.screenshot({ path: shots + "/approval-reloaded.png", fullPage: true });
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });
"""


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    # the demo agent with memory: its chats are threads, so a reload reads them back from the server
    from agentstream._app import create_app
    from agentstream._demo import demo_agent
    from agentstream._mastra import Mastra
    from agentstream.memory import Memory

    mastra = Mastra(agents={"demo": demo_agent("demo", memory=Memory())})
    with serving(create_app(mastra, delay_in_ms=2)) as url:
        yield url


def test_approve_deny_and_resume_on_the_page(base_url: str, tmp_path: Path) -> None:
    script = tmp_path / "drive.cjs"
    script.write_text(DRIVER, encoding="utf-8")
    SHOTS.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        ["node", str(script), str(PLAYWRIGHT), base_url, str(SHOTS)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CHROMIUM": str(CHROMIUM)},
    )
    assert result.returncode == 0, f"browser driver failed:\n{result.stderr[-3000:]}"
    out: dict[str, Any] = json.loads(result.stdout)
    assert out["consoleErrors"] == []
    # nothing to resume on load; three questions, three answers; nothing to resume after the reload
    assert out["requests"] == [204] + [200] * 6 + [204]
    steps = out["steps"]

    assert out["empty"] == {
        "text": "Ask Demo Agent something below (Enter sends, Shift+Enter starts a new line).",
        "examples": [
            "What is the weather in Paris?",
            "Book a table at Luigi for 4",
            "Pick a time at Luigi",
            "Research the history of tides",
        ],
    }
    assert out["filled"] == "Book a table at Luigi for 4"  # an example fills the box, it does not send
    assert steps["waiting"]["asks"] == ['Approve book_table?{"restaurant":"Luigi","people":4}ApproveDeny']
    assert steps["waiting"]["text"] == ""
    # The question sits above the tool card, so the result the answer brings comes below it.
    assert steps["waiting"]["order"] == ["ask", "tool"]
    assert steps["approved"]["order"] == ["ask", "tool"]
    # The answer continued the same assistant message: its tool card is done, the buttons are gone.
    assert steps["approved"]["messages"] == 1
    assert steps["approved"]["tools"] == ["output-available"]
    assert steps["approved"]["asks"][0].endswith("approved")
    assert "Your table for 4 at Luigi is booked" in steps["approved"]["text"]

    # The page speaks v5 (serve's default), whose decline is an output error: shown as declined.
    assert steps["denied"]["tools"] == ["output-denied"]
    assert steps["denied"]["asks"][0].endswith("denied: too far")
    assert steps["denied"]["notRun"] == ["not run: Tool call was not approved by the user: too far"]
    assert "I have not made the booking (too far)" in steps["denied"]["text"]
    assert "is booked" not in steps["denied"]["text"]

    assert steps["form"] == ["18:00", "19:30", "21:00"]
    assert steps["resumed"]["messages"] == 3
    assert steps["resumed"]["asks"] == ['choose_time asks: Which time at Luigi?answered {"time":"19:30"}']
    assert "19:30 at Luigi it is." in steps["resumed"]["text"]
    reloaded = out["reloaded"]
    assert [m["tools"] for m in reloaded] == [["output-available"], ["output-denied"], ["output-available"]]
    assert [m["buttons"] for m in reloaded] == [0, 0, 0]
    assert "is booked" in reloaded[0]["text"] and "19:30 at Luigi it is." in reloaded[2]["text"]
    assert "I have not made the booking (too far)" in reloaded[1]["text"]
    assert reloaded[1]["notRun"] == ["not run: Tool call was not approved by the user: too far"]
    for name in ("approval.png", "suspended.png", "empty.png", "approval-reloaded.png"):
        assert (SHOTS / name).stat().st_size > 10_000
