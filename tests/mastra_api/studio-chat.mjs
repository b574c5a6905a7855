#!/usr/bin/env node
// Mastra Studio (`mastra studio`, the real page) in headless Chromium against a server: the agents
// list, then a chat with the agent that makes it call a tool, then (--approve) a tool call the page
// approves with its own button, then (--decline) one it declines with its own button (the agent
// goes on with the decline; the page reloaded shows the thread as stored). Screenshots after each;
// prints one JSON report, the DOM's text included, so the test checks what a person would see.
//
//   node studio-chat.mjs --studio URL --api URL --chromium PATH --shots DIR [--agent "Demo Agent"]
//                        [--prompt "What's the weather in Paris?"] [--approve "Book a table at Luigi's for 4"]
//                        [--decline "Book a table at Mario's for 2"]
import { chromium } from 'playwright-core';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
};
const studio = arg('--studio');
const api = arg('--api');
const shots = arg('--shots');
const agentName = arg('--agent', 'Demo Agent');
const prompt = arg('--prompt', "What's the weather in Paris?");
const approve = arg('--approve');
const decline = arg('--decline');
if (!studio || !api || !shots) {
  console.error('usage: node studio-chat.mjs --studio URL --api URL --chromium PATH --shots DIR');
  process.exit(2);
}
// approvals: the bodies Studio sent to send-tool-approval (``{toolCallId, approved}``)
const report = { consoleErrors: [], failedCalls: [], calls: [], approvals: [], steps: {} };
const browser = await chromium.launch({
  executablePath: arg('--chromium', '/usr/bin/chromium'),
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().includes('ERR_BLOCKED_BY_CLIENT')) report.consoleErrors.push(m.text().slice(0, 400));
  });
  page.on('pageerror', (e) => report.consoleErrors.push(`pageerror: ${e.message}`.slice(0, 400)));
  const path = (u) => u.slice(api.length).replace(/\?.*/, '');
  page.on('response', (r) => {
    if (!r.url().startsWith(api)) return;
    report.calls.push(`${r.request().method()} ${path(r.url())} ${r.status()}`);
    if (path(r.url()).endsWith('/send-tool-approval')) {
      try {
        const { toolCallId, approved } = JSON.parse(r.request().postData() ?? '{}');
        report.approvals.push({ toolCallId, approved, status: r.status() });
      } catch { report.approvals.push({ unreadable: r.request().postData()?.slice(0, 200) }); }
    }
    if (r.status() >= 400) report.failedCalls.push(`${r.status()} ${r.request().method()} ${path(r.url())}`);
  });
  page.on('requestfailed', (r) => {
    // ERR_ABORTED: the browser dropped it (the reload cuts the open threads/subscribe stream)
    if (r.url().startsWith(api) && !r.failure()?.errorText?.includes('ERR_ABORTED')) {
      report.failedCalls.push(`${r.failure()?.errorText ?? 'failed'} ${r.method()} ${path(r.url())}`);
    }
  });
  // `mastra studio` serves Studio alone; its page opens the dev server's live-reload stream, which
  // `mastra dev` answers with an event stream (check.mjs does the same).
  await page.route(/\/refresh-events(\?|$)/, (route) => route.fulfill({
    status: 200, headers: { 'content-type': 'text/event-stream' }, body: 'retry: 600000\n\n',
  }));
  // Nothing leaves this machine (Studio shows provider logos from a public site).
  await page.route((url) => !['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname), (route) => (
    route.request().resourceType() === 'image'
      ? route.fulfill({ status: 200, contentType: 'image/svg+xml', body: '<svg xmlns="http://www.w3.org/2000/svg"/>' })
      : route.abort('blockedbyclient')));

  const step = async (name, fn) => {
    try {
      report.steps[name] = { ok: true, ...(await fn()) };
    } catch (e) {
      report.steps[name] = { ok: false, error: String(e?.message ?? e).slice(0, 500) };
    }
    await page.screenshot({ path: `${shots}/studio-${name}.png`, fullPage: true });
    report.steps[name].text = (await page.locator('body').innerText()).slice(0, 4000);
    report.steps[name].url = page.url();
  };

  await step('agents', async () => {
    await page.goto(`${studio}/agents`, { waitUntil: 'domcontentloaded' });
    await page.getByText(agentName).first().waitFor({ state: 'visible', timeout: 30_000 });
    await page.waitForTimeout(1000);
    return {};
  });

  const send = async (text) => {
    const box = page.locator('textarea').first();
    await box.waitFor({ state: 'visible', timeout: 30_000 });
    await box.fill(text);
    await box.press('Enter');
  };

  await step('chat', async () => {
    await page.getByText(agentName).first().click();
    await send(prompt);
    // the answer names the city and its temperature once the tool's result came back
    await page.getByText(/In Paris it is currently -?\d+°C/).first().waitFor({ state: 'visible', timeout: 45_000 });
    await page.waitForTimeout(1500); // the last words and the page's follow-up requests
    return {};
  });

  if (approve) {
    await step('approval', async () => {
      await send(approve);
      const button = page.getByRole('button', { name: /^approve\b/i }).first();
      await button.waitFor({ state: 'visible', timeout: 45_000 });
      await page.screenshot({ path: `${shots}/studio-approval-asked.png`, fullPage: true });
      await button.click();
      await page.getByText(/is booked \(confirmation [A-F0-9]{6}\)/).first().waitFor({ state: 'visible', timeout: 45_000 });
      await page.waitForTimeout(1000);
      return {};
    });
  }

  if (decline) {
    await step('decline', async () => {
      await send(decline);
      // the newest call's buttons (the earlier, approved call's are gone with its result)
      const button = page.getByRole('button', { name: /^decline\b/i }).last();
      await button.waitFor({ state: 'visible', timeout: 45_000 });
      await page.screenshot({ path: `${shots}/studio-decline-asked.png`, fullPage: true });
      await button.click();
      // the run goes on with the decline: the model is told the call was not approved
      await page.getByText(/I have not made the booking \(Tool call was not approved by the user\)/).first()
        .waitFor({ state: 'visible', timeout: 45_000 });
      await page.waitForTimeout(1000);
      // Studio keeps its buttons, disabled, the declined one marked (Oms: status "declined")
      const disabled = await button.isDisabled();
      return { declineDisabledAfter: disabled };
    });
    await step('decline-reloaded', async () => {
      await page.reload({ waitUntil: 'domcontentloaded' });
      await page.getByText(/I have not made the booking/).first().waitFor({ state: 'visible', timeout: 30_000 });
      await page.waitForTimeout(1500);
      return { approvalButtonsLeft: await page.getByRole('button', { name: /^(approve|decline)\b/i }).count() };
    });
  }
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(report));
