"""The built-in chat page survives a reload, in headless Chromium: the chat id stays in the address
(``?chat=<id>``), the conversation comes back from the tab's storage, and an answer still streaming
when the page went away is picked up from the server (``GET api/chat/<agent>/<id>/stream``) and
completes on the page. "New chat" starts another id; Back returns to the first. Stop stops the
answer on the server (``DELETE`` on its stream), and a reload then does not pull it back. Screenshot: ``.cache/e2e/resume.png``."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentstream._app import create_app
from agentstream._mastra import Mastra
from agentstream.agent import Agent
from tests.server.test_resume_route import ANSWER, FIRST, GatedModel, OpeningStore
from tests.test_chat_page import CHROMIUM, PLAYWRIGHT, SCREENSHOT, serving

SHOTS = SCREENSHOT.parent

COMMON = r"""
const [playwrightPath, url, shots] = process.argv.slice(2);
const { chromium } = require(playwrightPath);
const view = (page) => page.evaluate(() => ({
  chat: new URL(location.href).searchParams.get("chat"),
  roles: [...document.querySelectorAll(".msg .role")].map((r) => r.textContent),
  texts: [...document.querySelectorAll(".msg")].map((m) => [...m.querySelectorAll(".text")].map((t) => t.textContent).join("")),
  errors: [...document.querySelectorAll(".msg .error")].map((e) => e.textContent),
  button: document.getElementById("send").textContent,
}));
const answered = (t) => document.getElementById("log").getAttribute("aria-busy") === "false" &&
  [...document.querySelectorAll(".msg.assistant .text")].some((e) => e.textContent.includes(t));
const onScreen = (t) => [...document.querySelectorAll(".msg.assistant .text")].some((e) => e.textContent.includes(t));
async function open(out) {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu"],
  });
  const page = await browser.newPage({ viewport: { width: 1000, height: 700 } });
  page.on("console", (m) => { if (m.type() === "error") out.consoleErrors.push(m.text()); });
  page.on("pageerror", (e) => out.consoleErrors.push("pageerror: " + e.message));
  page.on("request", (r) => { if (r.method() === "POST") out.posted.push(JSON.parse(r.postData())); });
  page.on("response", (r) => {
    const path = new URL(r.url()).pathname;
    if (path.startsWith("/api/chat") && path !== "/api/chat/info") out.requests.push(r.request().method() + " " + path + " " + r.status());
  });
  return { browser, page };
}
const ready = (page) => page.waitForSelector("#log[data-ready=true]");
const finish = (out) => process.stdout.write(JSON.stringify(out));
"""

RELOAD = (
    COMMON
    + r"""
(async () => {
  const out = { consoleErrors: [], requests: [], posted: [], steps: {} };
  const { browser, page } = await open(out);
  try {
    await page.goto(url);
    await ready(page);
    await page.fill("#input", "Weather in Berlin?");
    await page.click("#send");
    await page.waitForFunction(onScreen, process.env.FIRST_WORDS);
    out.steps.before = await view(page);
    await page.reload();  // mid-answer
    await page.waitForFunction(answered, process.env.LAST_WORDS, { timeout: 30000 });
    out.steps.resumed = await view(page);
    await page.screenshot({ path: shots + "/resume.png", fullPage: true });
    await page.reload();  // at rest: the conversation comes back, nothing is running
    await ready(page);
    out.steps.reloaded = await view(page);
    await page.fill("#input", "And tomorrow?");
    await page.click("#send");
    await page.waitForFunction(() => document.querySelectorAll(".msg.assistant").length === 2 &&
      document.getElementById("log").getAttribute("aria-busy") === "false", null, { timeout: 30000 });
    out.steps.second = await view(page);
    // New chat: the page asks whether the new chat has an answer running; wait for that answer
    // (going back before it comes aborts it, and the log would miss it under load).
    const freshAsked = page.waitForResponse((r) => { const p = new URL(r.url()).pathname;
      return p.endsWith("/stream") && !p.endsWith("/" + out.steps.second.chat + "/stream"); });
    await page.click("#new-chat");
    await page.waitForFunction((id) => new URL(location.href).searchParams.get("chat") !== id, out.steps.second.chat);
    await freshAsked;
    await page.waitForFunction(() => document.getElementById("log").getAttribute("aria-busy") === "false");
    out.steps.fresh = await view(page);
    // Back: the page asks whether the first chat's answer still runs; wait for that answer so the
    // request log is complete when it is read (under load it could come after the view).
    const resumed = page.waitForResponse((r) => new URL(r.url()).pathname.endsWith("/" + out.steps.second.chat + "/stream"));
    await page.goBack();
    await resumed;
    await page.waitForFunction(() => document.querySelectorAll(".msg").length === 4);
    out.steps.back = await view(page);
  } finally {
    await browser.close();
  }
  finish(out);
})().catch((e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });
"""
)

STOP = (
    COMMON
    + r"""
(async () => {
  const out = { consoleErrors: [], requests: [], posted: [], steps: {} };
  const { browser, page } = await open(out);
  try {
    await page.goto(url);
    await ready(page);
    await page.fill("#input", "Weather in Berlin?");
    await page.click("#send");
    await page.waitForFunction(onScreen, process.env.FIRST_WORDS);
    const stopping = page.waitForResponse((r) => r.request().method() === "DELETE");
    await page.click("#send");  // now the Stop button
    await page.waitForFunction(() => document.getElementById("send").textContent === "Send");
    await stopping;  // the server has stopped the answer
    out.steps.stopped = await view(page);
    await page.reload();
    await ready(page);
    out.steps.reloaded = await view(page);
  } finally {
    await browser.close();
  }
  finish(out);
})().catch((e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });
"""
)


@pytest.fixture
def gated() -> Iterator[tuple[str, GatedModel]]:
    model = GatedModel()
    store = OpeningStore(model.gate)  # the resume after the reload is the answer's second reader
    mastra = Mastra(agents={"weather": Agent(id="weather", instructions="Be brief.", model=model)})
    try:
        with serving(create_app(mastra, smooth=False, stream_store=store)) as url:
            yield url, model
    finally:
        model.gate.set()


def drive(script: str, url: str, tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "drive.cjs"
    path.write_text(script, encoding="utf-8")
    SHOTS.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "CHROMIUM": str(CHROMIUM),
        "FIRST_WORDS": FIRST[0].strip(),
        "LAST_WORDS": ANSWER[-6:],
    }
    result = subprocess.run(
        ["node", str(path), str(PLAYWRIGHT), url, str(SHOTS)],
        capture_output=True,
        text=True,
        timeout=150,
        env=env,
    )
    assert result.returncode == 0, f"browser driver failed:\n{result.stderr[-3000:]}"
    out: dict[str, Any] = json.loads(result.stdout)
    assert out["consoleErrors"] == [], out["requests"]
    return out


def test_a_reload_mid_answer_resumes_it_and_keeps_the_conversation(
    gated: tuple[str, GatedModel], tmp_path: Path
) -> None:
    url, model = gated
    out = drive(RELOAD, url, tmp_path)
    steps = out["steps"]
    chat = steps["before"]["chat"]
    assert chat and chat.startswith("chat-")
    assert steps["before"]["button"] == "Stop"
    assert steps["before"]["texts"][1].startswith(FIRST[0])

    # After the reload: same chat, the question from the tab's storage, the whole answer from the server.
    assert steps["resumed"]["chat"] == chat
    assert steps["resumed"]["roles"] == ["user", "assistant"]
    assert steps["resumed"]["texts"] == ["Weather in Berlin?", ANSWER]
    assert steps["resumed"]["errors"] == [] and steps["resumed"]["button"] == "Send"
    assert not model.signals[0].aborted  # the reload did not stop the run
    assert (SHOTS / "resume.png").stat().st_size > 10_000

    # A reload at rest shows the same conversation, and the next question carries it.
    assert steps["reloaded"] == steps["resumed"]
    assert [m["role"] for m in out["posted"][1]["messages"]] == ["user", "assistant", "user"]
    assert out["posted"][1]["messages"][1]["parts"][-1] == {"type": "text", "text": ANSWER}
    assert {p["id"] for p in out["posted"]} == {chat}
    assert steps["second"]["roles"] == ["user", "assistant", "user", "assistant"]

    # New chat: another id, an empty page; Back: the first chat again.
    fresh = steps["fresh"]["chat"]
    assert fresh != chat and steps["fresh"]["roles"] == []
    assert steps["back"]["chat"] == chat and steps["back"]["texts"] == steps["second"]["texts"]

    stream = f"/api/chat/weather/{chat}/stream"
    assert out["requests"] == [
        f"GET {stream} 204",  # first load: nothing running
        "POST /api/chat/weather 200",
        f"GET {stream} 200",  # the reload picks the answer up
        f"GET {stream} 204",  # the reload at rest
        "POST /api/chat/weather 200",
        f"GET /api/chat/weather/{fresh}/stream 204",
        f"GET {stream} 204",
    ]


def test_stop_stops_reading_and_a_reload_does_not_pull_the_answer_back(
    gated: tuple[str, GatedModel], tmp_path: Path
) -> None:
    url, model = gated
    out = drive(STOP, url, tmp_path)
    steps = out["steps"]
    assert steps["stopped"]["texts"] == ["Weather in Berlin?", "".join(FIRST)]
    assert steps["stopped"]["errors"] == ["stopped"]
    assert steps["reloaded"] == steps["stopped"]
    chat = steps["stopped"]["chat"]
    stream = f"/api/chat/weather/{chat}/stream"
    assert out["requests"] == [f"GET {stream} 204", "POST /api/chat/weather 200", f"DELETE {stream} 204"]
    # Stop stops the answer on the server too (DELETE on its stream), not only the page's reading.
    assert model.signals[0].aborted


APPROVE = (
    COMMON
    + r"""
(async () => {
  const out = { consoleErrors: [], requests: [], posted: [], steps: {} };
  const { browser, page } = await open(out);
  const last = () => page.evaluate(() => {
    const ms = [...document.querySelectorAll(".msg.assistant")];
    const m = ms[ms.length - 1];
    return { asks: [...m.querySelectorAll(".ask")].map((a) => a.textContent),
             tools: [...m.querySelectorAll(".tool .state")].map((s) => s.textContent) };
  });
  try {
    await page.goto(url);
    await ready(page);
    await page.fill("#input", "Book a table at Luigi for 4");
    await page.click("#send");
    await page.waitForSelector(".ask button.approve");
    await page.waitForFunction(() => document.getElementById("log").getAttribute("aria-busy") === "false");
    await page.click(".ask button.approve");
    await page.waitForFunction(onScreen, process.env.FIRST_WORDS);
    await page.reload();  // mid-continuation
    await page.waitForFunction(answered, process.env.LAST_WORDS, { timeout: 30000 });
    out.steps.resumed = { ...(await view(page)), ...(await last()) };
  } finally {
    await browser.close();
  }
  finish(out);
})().catch((e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });
"""
)


class ApproveThenGated(GatedModel):
    """Calls ``book_table`` (which needs approval); once approved, answers like `GatedModel`."""

    def do_stream(self, options: Any) -> Any:
        self.signals.append(options.get("abort_signal"))
        return self._call() if len(self.signals) == 1 else self._play()

    async def _call(self) -> Any:
        yield {"type": "stream-start", "warnings": []}
        call = {"restaurant": "Luigi", "people": 4}
        yield {
            "type": "tool-call",
            "toolCallId": "call-1",
            "toolName": "book_table",
            "input": json.dumps(call),
        }
        yield {"type": "finish", "finishReason": "tool-calls", "usage": {"inputTokens": 3, "outputTokens": 2}}


def test_a_reload_mid_continuation_resumes_into_the_approved_message(tmp_path: Path) -> None:
    from agentstream._demo import book_table

    model = ApproveThenGated()
    store = OpeningStore(model.gate, open_on=3)  # the ask, the approval, then the resume
    agent = Agent(id="host", instructions="Book tables.", model=model, tools=[book_table])
    try:
        with serving(create_app(Mastra(agents={"host": agent}), smooth=False, stream_store=store)) as url:
            out = drive(APPROVE, url, tmp_path)
    finally:
        model.gate.set()
    resumed = out["steps"]["resumed"]
    chat = resumed["chat"]
    # One assistant message: the approved call, then the continuation's text, replayed into it.
    assert resumed["roles"] == ["user", "assistant"]
    assert resumed["texts"] == ["Book a table at Luigi for 4", ANSWER]
    assert resumed["tools"] == ["output-available"]
    assert resumed["asks"] == ['Approve book_table?{"restaurant":"Luigi","people":4}approved']
    assert out["requests"] == [
        f"GET /api/chat/host/{chat}/stream 204",
        "POST /api/chat/host 200",
        "POST /api/chat/host 200",
        f"GET /api/chat/host/{chat}/stream 200",
    ]


def test_without_a_stream_store_the_page_asks_for_nothing_to_resume(tmp_path: Path) -> None:
    from tests.test_chat_page import drive as drive_turns

    with serving(create_app(delay_in_ms=None, stream_store=None)) as url:
        out = drive_turns(url, tmp_path, "What is the weather in Paris?")
    assert out["consoleErrors"] == [], out["requests"]
    chat = [
        r
        for r in out["requests"]
        if r.startswith(("GET /api/chat/", "POST /api/chat")) and "/api/chat/info" not in r
    ]
    assert chat == ["POST /api/chat/demo 200"]
    assert "Paris" in out["turns"][0]["text"]


SLASHED = (
    COMMON
    + r"""
(async () => {
  const out = { consoleErrors: [], requests: [], posted: [], steps: {} };
  const { browser, page } = await open(out);
  try {
    await page.goto(url + "?chat=" + encodeURIComponent(process.env.CHAT_ID));
    await ready(page);
    await page.fill("#input", "Weather in Berlin?");
    await page.click("#send");
    await page.waitForFunction(onScreen, process.env.FIRST_WORDS);
    await page.reload();
    await page.waitForFunction(answered, process.env.LAST_WORDS, { timeout: 30000 });
    out.steps.resumed = await view(page);
  } finally {
    await browser.close();
  }
  finish(out);
})().catch((e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });
"""
)


def test_a_chat_id_with_a_slash_in_the_address_resumes(
    gated: tuple[str, GatedModel], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = gated
    chat_id = "team/alpha 1"
    monkeypatch.setenv("CHAT_ID", chat_id)
    out = drive(SLASHED, url, tmp_path)
    resumed = out["steps"]["resumed"]
    assert resumed["chat"] == chat_id
    assert resumed["texts"] == ["Weather in Berlin?", ANSWER]
    assert [p["id"] for p in out["posted"]] == [chat_id]
    stream = "/api/chat/weather/team%2Falpha%201/stream"  # encodeURIComponent, as the AI SDK does
    assert out["requests"] == [f"GET {stream} 204", "POST /api/chat/weather 200", f"GET {stream} 200"]
