"""The chat page with memory threads, driven in headless Chromium (issue 27): the side list shows
the user's conversations (``GET /api/memory/threads``), a chat is a memory thread (its requests
name it, Mastra's ``memory: {thread, resource}``, and carry only the new message), a reload with
nothing kept in the tab shows the server's history, a click in the list continues another
thread, and another browser (another resource) sees none of them. Tooling as tests/test_chat_page.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.test_chat_page import serving
from tests.test_workflow_page import drive

DRIVER = r"""
const [playwrightPath, url, screenshot] = process.argv.slice(2);
const { chromium } = require(playwrightPath);
const idle = (page, n) => page.waitForFunction((n) => document.querySelectorAll(".msg.assistant").length === n &&
  document.getElementById("log").getAttribute("aria-busy") === "false", n, { timeout: 30000 });
const shown = (page) => page.$$eval(".msg", (ms) => ms.map((m) => [m.querySelector(".role").textContent, [...m.querySelectorAll(".text")].map((t) => t.textContent).join("")]));
const listed = (page) => page.$$eval("#thread-list button", (as) => as.map((a) => ({ id: a.dataset.thread, current: a.classList.contains("current"), title: a.textContent })));
async function ask(page, text, n) { await page.fill("#input", text); await page.click("#send"); await idle(page, n); }
(async () => {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  const out = { consoleErrors: [], requests: [], bodies: [] };
  try {
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    const page = await context.newPage();
    page.on("console", (m) => { if (m.type() === "error") out.consoleErrors.push(m.text()); });
    page.on("pageerror", (e) => out.consoleErrors.push("pageerror: " + e.message));
    page.on("request", (r) => { if (r.method() === "POST" && new URL(r.url()).pathname.startsWith("/api/chat")) out.bodies.push(JSON.parse(r.postData())); });
    page.on("response", (r) => { const u = new URL(r.url()); if (u.pathname.startsWith("/api/")) out.requests.push(r.request().method() + " " + u.pathname + " " + r.status()); });
    await page.goto(url);
    await page.waitForSelector("#log[data-ready=true]");
    out.first = new URL(page.url()).searchParams.get("chat");
    out.listVisible = await page.isVisible("#threads");
    out.emptyList = await page.$eval("#thread-list", (l) => l.textContent);
    await ask(page, "What is the weather in Paris?", 1);
    await page.waitForFunction(() => document.querySelectorAll("#thread-list button").length === 1);
    out.afterFirst = await listed(page);
    await ask(page, "Explain how rainbows form", 2);
    out.firstChat = await shown(page);
    // A reload with nothing kept in the tab: the history comes from the server's thread.
    await page.evaluate(() => sessionStorage.clear());
    await page.reload();
    await page.waitForSelector("#log[data-ready=true]");
    out.reloaded = await shown(page);
    // A new conversation, then back to the first one through the list.
    await page.click("#new-chat");
    out.second = new URL(page.url()).searchParams.get("chat");
    await ask(page, "What is the weather in Berlin?", 1);
    await page.waitForFunction(() => document.querySelectorAll("#thread-list button").length === 2);
    out.twoListed = await listed(page);
    await page.evaluate(() => sessionStorage.clear());
    await page.click(`#thread-list button[data-thread="${out.first}"]`);
    await page.waitForFunction(() => document.querySelectorAll(".msg").length === 4);
    out.continuedAt = new URL(page.url()).searchParams.get("chat");
    out.backToFirst = await shown(page);
    await ask(page, "Thanks!", 3);
    out.continued = await shown(page);
    await page.screenshot({ path: screenshot, fullPage: true });
    // Another browser: another resource, none of these threads.
    const other = await (await browser.newContext()).newPage();
    await other.goto(url + "?chat=" + encodeURIComponent(out.first));
    await other.waitForSelector("#log[data-ready=true]");
    out.otherList = await other.$$eval("#thread-list button", (as) => as.length);
    out.otherShown = await shown(other);
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any]]:
    from agentstream._app import create_app
    from agentstream._demo import demo_agent
    from agentstream._mastra import Mastra
    from agentstream.memory import Memory
    from agentstream.storage import SQLiteStore

    path = tmp_path_factory.mktemp("memory-page") / "memory.db"
    mastra = Mastra(agents={"demo": demo_agent("demo", memory=Memory())}, storage=SQLiteStore(path))
    with serving(create_app(mastra, delay_in_ms=1)) as url:
        yield url, path


async def _stored(path: Path, thread_id: str) -> tuple[str, list[str]]:
    from agentstream.storage import SQLiteStore

    store = SQLiteStore(path)
    try:
        thread = await store.get_thread(thread_id)
        page = await store.list_messages(thread_id)
        return thread.resource_id, [m.role for m in page.messages]
    finally:
        await store.close()


def test_threads_listed_continued_and_reloaded_from_memory(served: tuple[str, Any], tmp_path: Path) -> None:
    url, path = served
    out = drive(DRIVER, url, tmp_path)
    assert out["listVisible"] and out["emptyList"] == "No conversations yet"
    assert out["afterFirst"] == [
        {"id": out["first"], "current": True, "title": "What is the weather in Paris?"}
    ]
    first_chat = out["firstChat"]
    assert [role for role, _ in first_chat] == ["user", "assistant", "user", "assistant"]
    assert "Paris" in first_chat[1][1] and "rainbow" in first_chat[3][1].lower()
    # Every chat request names its thread and carries only the new message.
    submits = [b for b in out["bodies"] if b.get("trigger") == "submit-message"]
    assert len(submits) == 4
    for body in submits:
        assert len(body["messages"]) == 1 and body["messages"][0]["role"] == "user"
        thread = body["memory"]["thread"]
        assert (thread["id"] if isinstance(thread, dict) else thread) == body["id"]
        assert body["memory"]["resource"].startswith("browser-")
    # a new thread is named after its first message
    assert [b["memory"]["thread"] for b in submits if isinstance(b["memory"]["thread"], dict)] == [
        {"id": out["first"], "title": "What is the weather in Paris?"},
        {"id": out["second"], "title": "What is the weather in Berlin?"},
    ]
    assert len({b["memory"]["resource"] for b in submits}) == 1
    # the reload showed the server's history, the same conversation
    assert [(r, t.strip()) for r, t in out["reloaded"]] == [(r, t.strip()) for r, t in first_chat]
    assert out["second"] != out["first"]
    assert {t["id"] for t in out["twoListed"]} == {out["first"], out["second"]}
    assert [t["id"] for t in out["twoListed"] if t["current"]] == [out["second"]]
    assert out["continuedAt"] == out["first"]
    assert [(r, t.strip()) for r, t in out["backToFirst"]] == [(r, t.strip()) for r, t in first_chat]
    assert [role for role, _ in out["continued"]] == ["user", "assistant"] * 3
    # another browser is another resource: no threads, and the first thread's address shows nothing
    assert out["otherList"] == 0 and out["otherShown"] == []
    resource, roles = asyncio.run(_stored(path, out["first"]))
    assert resource == submits[0]["memory"]["resource"] and roles == ["user", "assistant"] * 3
    requests = out["requests"]
    assert any(r.startswith("GET /api/memory/threads 200") for r in requests)
    assert f"GET /api/memory/threads/{out['first']}/messages 200" in requests
