"""The chat page's workflow view in headless Chromium: pick the demo workflow, run it on a topic, watch its
steps go by with their status, input and output, answer the suspension form, and see the resumed run
publish. Same tooling (and skip rules) as tests/test_chat_page.py."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.test_chat_page import CHROMIUM, PLAYWRIGHT, ROOT, serving

SCREENSHOT = ROOT / ".cache" / "e2e" / "workflow.png"

DRIVER = r"""
const [playwrightPath, url, screenshot] = process.argv.slice(2);
const { chromium } = require(playwrightPath);
const steps = (page, n) => page.$$eval(".msg.assistant", (ms, n) => [...ms[n].querySelectorAll(".workflow li")].map((li) => ({
  step: li.dataset.step, status: li.dataset.status, pres: [...li.querySelectorAll("pre")].map((p) => p.textContent),
  form: !!li.querySelector(".resume"),
})), n);
(async () => {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  const out = { consoleErrors: [], requests: [] };
  try {
    const page = await browser.newPage({ viewport: { width: 1000, height: 1200 } });
    page.on("console", (m) => { if (m.type() === "error") out.consoleErrors.push(m.text()); });
    page.on("pageerror", (e) => out.consoleErrors.push("pageerror: " + e.message));
    page.on("response", (r) => { const p = new URL(r.url()).pathname; if (p.startsWith("/api/")) out.requests.push(r.request().method() + " " + p + " " + r.status()); });
    await page.goto(url);
    await page.waitForFunction(() => document.querySelectorAll("#workflow option").length > 1);
    out.workflows = await page.$$eval("#workflow option", (os) => os.map((o) => o.value));
    await page.selectOption("#workflow", "publish-article");
    await page.fill("#input", "tides");
    await page.click("#send");
    await page.waitForSelector('.msg.assistant .workflow li[data-step="gather"][data-status="running"]', { timeout: 30000 });
    out.live = await steps(page, 0);
    await page.waitForFunction(() => document.getElementById("log").getAttribute("aria-busy") === "false" &&
      document.querySelector('.workflow[data-status="suspended"]'), null, { timeout: 30000 });
    out.suspended = await steps(page, 0);
    out.text = await page.$eval(".msg.assistant", (m) => [...m.querySelectorAll(".text")].map((t) => t.textContent).join(""));
    out.whole = await page.$eval(".msg.assistant", (m) => m.textContent);
    out.titles = await page.$$eval(".msg.assistant .workflow pre[title]", (ps) => ps.map((p) => p.title));
    await page.check('.resume input[name="approved"]');
    await page.click(".resume button");
    await page.waitForFunction(() => document.querySelectorAll(".msg.assistant").length === 2 &&
      document.getElementById("log").getAttribute("aria-busy") === "false", null, { timeout: 30000 });
    out.resumed = await steps(page, 1);
    out.finalStatus = await page.$$eval(".workflow", (ws) => ws.map((w) => w.dataset.status));
    out.formsLeft = await page.$$eval(".resume", (fs) => fs.length);
    await page.screenshot({ path: screenshot, fullPage: true });
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });
"""


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    from agentstream._app import create_app

    with serving(create_app(delay_in_ms=1)) as url:
        yield url


def drive(driver: str, url: str, tmp_path: Path) -> dict[str, Any]:
    """Run a page driver (node + Playwright) against ``url``; its report, once it ran without a
    console error."""
    script = tmp_path / "drive.cjs"
    script.write_text(driver, encoding="utf-8")
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        ["node", str(script), str(PLAYWRIGHT), url, str(SCREENSHOT)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CHROMIUM": str(CHROMIUM)},
    )
    assert result.returncode == 0, f"browser driver failed:\n{result.stderr[-3000:]}"
    out: dict[str, Any] = json.loads(result.stdout)
    assert out["consoleErrors"] == [], out["requests"]
    return out


def test_run_watch_and_resume_a_workflow(base_url: str, tmp_path: Path) -> None:
    out = drive(DRIVER, base_url, tmp_path)
    assert out["workflows"] == ["", "publish-article"]
    assert out["live"][0]["step"] == "gather" and out["live"][0]["pres"] == ['input: {"topic":"tides"}']

    suspended = {s["step"]: s for s in out["suspended"]}
    assert list(suspended) == ["gather", "brief", "writer", "approve"]
    assert [s["status"] for s in out["suspended"]] == ["success", "success", "success", "suspended"]
    assert any(p.startswith('output: {"topic":"tides","notes"') for p in suspended["gather"]["pres"])
    assert any('"question":"Publish this draft?"' in p for p in suspended["approve"]["pres"])
    assert suspended["approve"]["form"] and not suspended["writer"]["form"]
    assert "Explain tides for a short article" in out["text"]  # the agent step's text streamed
    # The writer's answer is shown once (streamed); the steps' inputs and outputs clip it, whole in
    # the tooltip.
    tail = "Try asking about the weather in a city"
    assert tail in out["text"] and out["whole"].count(tail) == 1
    assert any(tail in title for title in out["titles"])

    assert [(s["step"], s["status"]) for s in out["resumed"]] == [
        ("approve", "success"),
        ("publish", "success"),
    ]
    assert any('"published":true' in p for p in out["resumed"][1]["pres"])
    assert out["finalStatus"] == ["suspended", "success"] and out["formsLeft"] == 0
    assert "POST /api/workflow/publish-article/stream 200" in out["requests"]
    assert "POST /api/workflow/publish-article/resume 200" in out["requests"]


# What the small drivers share: Playwright, a page, console errors and the API requests collected.
PRELUDE = r"""
const [playwrightPath, url] = process.argv.slice(2);
const { chromium } = require(playwrightPath);
async function withPage(out, body) {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  try {
    const page = await browser.newPage();
    page.on("console", (m) => { if (m.type() === "error") out.consoleErrors.push(m.text()); });
    page.on("pageerror", (e) => out.consoleErrors.push("pageerror: " + e.message));
    await page.goto(url);
    await page.waitForFunction(() => document.querySelectorAll("#workflow option").length > 1);
    await body(page);
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out));
}
const fail = (e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); };
"""


STOP_DRIVER = (
    PRELUDE
    + r"""
const out = { consoleErrors: [], requests: [] };
withPage(out, async (page) => {
  page.on("response", (r) => { const p = new URL(r.url()).pathname; if (p.startsWith("/api/")) out.requests.push(r.request().method() + " " + p + " " + r.status()); });
  await page.selectOption("#workflow", "slow");
  await page.fill("#input", "anything");
  await page.click("#send");
  await page.waitForSelector('.msg.assistant .workflow li[data-step="wait"][data-status="running"]', { timeout: 30000 });
  const cancelling = page.waitForResponse((r) => r.url().endsWith("/cancel"));
  await page.click("#send");  // Stop
  out.cancel = (await cancelling).status();
  out.button = await page.$eval("#send", (b) => b.textContent);
}).catch(fail);
"""
)


def test_stop_cancels_the_workflow_run_on_the_server(tmp_path: Path) -> None:
    import asyncio

    from agentstream import Mastra
    from agentstream._app import create_app
    from agentstream.workflows import StepContext, create_step, create_workflow

    async def wait(context: StepContext) -> Any:
        # Runs until the run is cancelled (the abort signal), as a step doing real work would.
        stopped = asyncio.Event()
        context.abort_signal.add_listener(lambda _reason: stopped.set())
        await stopped.wait()
        return {"stopped": True}

    after: list[str] = []
    slow = (
        create_workflow(id="slow")
        .then(create_step(id="wait", execute=wait))
        .then(create_step(id="after", execute=lambda c: after.append("ran")))
        .commit()
    )
    mastra = Mastra(workflows={"slow": slow})
    with serving(create_app(mastra)) as url:
        out = drive(STOP_DRIVER, url, tmp_path)
    assert out["cancel"] == 200 and out["button"] == "Send"
    [cancel] = [r for r in out["requests"] if r.endswith("/cancel 200")]
    run_id = cancel.split("/runs/")[1].split("/")[0]
    snapshot = asyncio.run(mastra.storage.load_workflow_snapshot("slow", run_id))
    assert snapshot is not None and snapshot["status"] == "canceled"
    assert after == []  # the step after the stopped one never ran


NESTED_DRIVER = (
    PRELUDE
    + r"""
const out = { consoleErrors: [], requests: [] };
withPage(out, async (page) => {
  page.on("request", (r) => { if (r.method() === "POST") out.requests.push(new URL(r.url()).pathname + " " + r.postData()); });
  await page.selectOption("#workflow", "review");
  await page.fill("#input", "{}");
  await page.click("#send");
  // The inner step's resume schema gives the form its field (not the bare JSON box).
  await page.waitForSelector('.resume input[name="approved"]', { timeout: 30000 });
  out.jsonBox = await page.$$eval(".resume textarea", (ts) => ts.length);
  await page.check('.resume input[name="approved"]');
  await page.click(".resume button");
  await page.waitForFunction(() => document.querySelectorAll(".msg.assistant").length === 2 &&
    document.getElementById("log").getAttribute("aria-busy") === "false", null, { timeout: 30000 });
  out.finalStatus = await page.$$eval(".workflow", (ws) => ws.map((w) => w.dataset.status));
}).catch(fail);
"""
)


def test_a_suspension_inside_a_nested_workflow_gets_the_inner_steps_form(tmp_path: Path) -> None:
    from agentstream import Mastra
    from agentstream._app import create_app
    from agentstream.workflows import StepContext, create_step, create_workflow

    async def approve(context: StepContext) -> Any:
        if context.resume_data is None:
            return await context.suspend({"question": "publish?"})
        return {"approved": context.resume_data["approved"]}

    decision = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
    approval = (
        create_workflow(id="approval")
        .then(create_step(id="approve", execute=approve, resume_schema=decision))
        .commit()
    )
    review = create_workflow(id="review").then(approval).commit()
    with serving(create_app(Mastra(workflows={"review": review, "approval": approval}))) as url:
        out = drive(NESTED_DRIVER, url, tmp_path)
    assert out["jsonBox"] == 0 and out["finalStatus"] == ["suspended", "success"]
    resume = json.loads(out["requests"][-1].split(" ", 1)[1])
    assert resume["step"] == "approval" and resume["resumeData"] == {"approved": True}
