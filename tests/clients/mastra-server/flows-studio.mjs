#!/usr/bin/env node
// Mastra Studio (`mastra studio`) in headless Chromium on the pages of workflows, memory and
// traces, against a server: the data is made first with the REAL @mastra/client-js (a workflow
// run that suspends, a chat on a memory thread), then each page must show it, with no console
// error and no failed API call; a run started from the workflow page's form is resumed with its
// resume form, to success; a suspended run is cancelled with the run page's cancel button (the run
// reads `canceled`, as Mastra's); and an agent's Traces tab (enabled by `observabilityEnabled`)
// lists the agent's traces. One screenshot per page.
//
//   node flows-studio.mjs --base-url URL --studio-url URL --chromium PATH --shots DIR [--agent demo-agent]
//
// Prints "PASS (n) …" / "FAIL (n) …" lines, then "RESULT p/t"; exit 0 when all passed.
import { CheckFailed, arg, check, clientFor, expect, report, short } from './flows-common.mjs';

const baseUrl = arg('--base-url').replace(/\/$/, '');
const studioUrl = arg('--studio-url').replace(/\/$/, '');
const chromiumPath = arg('--chromium', '/usr/bin/chromium');
const shots = arg('--shots', '.');
const agentId = arg('--agent', 'demo-agent'); // the id: Studio's agents list links to it
const WORKFLOW = 'publish-article';
const nonce = Math.random().toString(36).slice(2, 8);
const client = clientFor(baseUrl);

// --- the data, made through the API as a Studio user's app would -------------------------------
const threadId = `studio-thread-${nonce}`;
// Studio lists an agent's threads under the agent's id as the resource (its chat page's own convention)
const resourceId = agentId;
const prompt = 'Explain how rainbows form';
await client.getAgent(agentId).generate(prompt, { memory: { thread: threadId, resource: resourceId } });
const run = await client.getWorkflow(WORKFLOW).createRun();
const started = await run.startAsync({ inputData: { topic: `studio ${nonce}` } });
// the run check 6 cancels from Studio
const toCancel = await client.getWorkflow(WORKFLOW).createRun();
const waiting = await toCancel.startAsync({ inputData: { topic: `cancel ${nonce}` } });
let traceId;
for (let i = 0; i < 50 && !traceId; i += 1) {
  const traces = await client.getObservability?.()?.listTraces?.({ filters: { entityType: 'agent' } }).catch(() => null)
    ?? await fetch(`${baseUrl}/api/observability/traces?entityType=agent`).then((r) => r.json());
  traceId = traces?.spans?.[0]?.traceId;
  if (!traceId) await new Promise((r) => setTimeout(r, 200));
}

const { chromium } = await import('playwright-core');
const browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });

async function page(path, texts, shot) {
  return interact(async (p) => {
    await p.goto(`${studioUrl}${path}`, { waitUntil: 'domcontentloaded', timeout: 30_000 });
    const missing = [];
    for (const text of texts) {
      try {
        await p.getByText(text, { exact: false }).first().waitFor({ state: 'visible', timeout: 20_000 });
      } catch {
        missing.push(text);
      }
    }
    await p.waitForTimeout(1500);
    expect(missing.length === 0, `not shown on ${p.url()}: ${missing.map((t) => JSON.stringify(t)).join(', ')}`);
    return `${texts.map((t) => JSON.stringify(t)).join(', ')} shown at ${p.url()}`;
  }, shot);
}

/** ``action(page)`` on a fresh page: no console error and no failed API call allowed; a screenshot. */
async function interact(action, shot) {
  const p = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const consoleErrors = [];
  const failed = [];
  p.on('console', (m) => { if (m.type() === 'error' && !m.text().includes('ERR_BLOCKED_BY_CLIENT')) consoleErrors.push(m.text()); });
  p.on('pageerror', (e) => consoleErrors.push(`pageerror: ${e.message}`));
  await p.route(/\/refresh-events(\?|$)/, (route) => route.fulfill({
    status: 200, headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }, body: 'retry: 600000\n\n',
  }));
  await p.route((url) => !['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname), (route) => {
    if (route.request().resourceType() === 'image') {
      return route.fulfill({ status: 200, contentType: 'image/svg+xml', body: '<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>' });
    }
    return route.abort('blockedbyclient');
  });
  const api = (u) => u.slice(baseUrl.length).replace(/\?.*/, '');
  p.on('response', (r) => { if (r.status() >= 400 && r.url().startsWith(baseUrl)) failed.push(`${r.status()} ${r.request().method()} ${api(r.url())}`); });
  p.on('requestfailed', (r) => { if (r.url().startsWith(baseUrl) && !r.failure()?.errorText?.includes('ERR_ABORTED')) failed.push(`${r.failure()?.errorText} ${r.method()} ${api(r.url())}`); });
  let detail;
  let failure;
  try {
    detail = await action(p);
  } catch (e) {
    failure = e;
  }
  try {
    await p.screenshot({ path: `${shots}/${shot}`, fullPage: true });
    const extra = `${failed.length ? `; failed API calls: ${[...new Set(failed)].slice(0, 6).join('; ')}` : ''}${consoleErrors.length ? `; console: ${short(consoleErrors[0], 300)}` : ''}`;
    if (failure) throw new CheckFailed(`${failure.message ?? failure}${extra}`);
    expect(consoleErrors.length === 0 && failed.length === 0, `${consoleErrors.length} console error(s), ${failed.length} failed call(s)${extra}`);
    return `${detail}; ${shot}`;
  } finally {
    await p.close();
  }
}

try {
  await check(1, 'the workflow graph page draws the steps of publish-article', () =>
    page(`/workflows/${WORKFLOW}/graph`, ['gather', 'approve', 'publish'], 'studio-workflow-graph.png'));
  await check(2, 'the graph of a suspended run', async () => {
    expect(started.status === 'suspended', `the run is ${started.status}`);
    return page(`/workflows/${WORKFLOW}/graph/${run.runId}`, ['approve'], 'studio-workflow-run.png');
  });
  await check(3, 'a memory thread: the chat page shows its messages', () =>
    page(`/agents/${agentId}/chat/${threadId}`, [prompt, 'rainbow forms when sunlight'], 'studio-memory-thread.png'));
  await check(4, 'a trace: the traces page lists the agent run and its page shows its spans', async () => {
    expect(traceId, 'no agent trace was recorded');
    const list = await page('/observability', ['demo-agent', prompt, 'publish-article'], 'studio-traces.png');
    const one = await page(`/traces/${traceId}`, ["agent run: 'demo-agent'", "llm: 'demo'", 'A rainbow forms'], 'studio-trace.png');
    return `${list}; ${one}`;
  });
  await check(5, 'run the workflow from its page (the form), then resume it with the resume form', () =>
    interact(async (p) => {
      await p.goto(`${studioUrl}/workflows/${WORKFLOW}/graph`, { waitUntil: 'domcontentloaded', timeout: 30_000 });
      const topic = p.getByRole('textbox').first();
      await topic.waitFor({ state: 'visible', timeout: 20_000 });
      await topic.fill(`from studio ${nonce}`);
      await p.getByRole('button', { name: 'Run', exact: true }).click();
      await p.getByText('Resume', { exact: true }).first().waitFor({ state: 'visible', timeout: 30_000 });
      await p.getByRole('checkbox').first().check();
      await p.getByRole('button', { name: 'Resume', exact: true }).click();
      const runs = await client.getWorkflow(WORKFLOW).runs();
      const mine = runs.runs.find((r) => r.snapshot?.context?.input?.topic === `from studio ${nonce}`);
      expect(mine, `no run with the topic typed in Studio among ${runs.runs.length}`);
      let status;
      for (let i = 0; i < 100; i += 1) {
        status = (await client.getWorkflow(WORKFLOW).runById(mine.runId, { fields: ['result'] })).status;
        if (status === 'success') break;
        await p.waitForTimeout(100);
      }
      expect(status === 'success', `the run resumed from Studio is ${status}`);
      const result = await client.getWorkflow(WORKFLOW).runById(mine.runId, { fields: ['result'] });
      expect(result.result?.published === true, `result ${short(result.result)}`);
      // the "Recent runs" list (polled every 5 s) shows the finished run with the success icon,
      // the suspended one (check 2's) with the suspended icon: Studio reads snapshot.status
      const item = (id) => p.locator(`a[href*="${id}"]`).first();
      await item(mine.runId).locator('[aria-label="success"]').waitFor({ state: 'visible', timeout: 20_000 });
      const other = await item(run.runId).locator('[aria-label]').first().getAttribute('aria-label');
      expect(other === 'suspended', `the suspended run's icon is ${other}`);
      return `run ${mine.runId} started and resumed in Studio: ${short(result.result)}; runs list: success, suspended`;
    }, 'studio-workflow-resumed.png'));
  await check(6, "cancel a suspended run with the run page's cancel button: the run reads canceled", () =>
    interact(async (p) => {
      expect(waiting.status === 'suspended', `the run to cancel is ${waiting.status}`);
      const posted = [];
      p.on('request', (r) => { if (r.method() === 'POST' && r.url().startsWith(baseUrl)) posted.push(r.url().slice(baseUrl.length).replace(/\?.*/, '')); });
      await p.goto(`${studioUrl}/workflows/${WORKFLOW}/graph/${toCancel.runId}`, { waitUntil: 'domcontentloaded', timeout: 30_000 });
      const cancel = p.getByRole('button', { name: 'Cancel workflow run' });
      await cancel.waitFor({ state: 'visible', timeout: 20_000 });
      await cancel.click();
      // the run panel's status badge, then the button gone (Studio shows it for running,
      // suspended and paused runs only) once the run is read again
      await p.getByText('Canceled', { exact: true }).first().waitFor({ state: 'visible', timeout: 20_000 });
      const path = `/api/workflows/${WORKFLOW}/runs/${toCancel.runId}/cancel`;
      expect(posted.includes(path), `Studio did not POST ${path}: ${posted.join(', ')}`);
      const after = await client.getWorkflow(WORKFLOW).runById(toCancel.runId);
      expect(after.status === 'canceled', `the run cancelled from Studio is ${after.status}`);
      // the runs list (polled every 5 s) shows it with the canceled icon
      await p.locator(`a[href*="${toCancel.runId}"]`).first().locator('[aria-label="canceled"]')
        .waitFor({ state: 'visible', timeout: 20_000 });
      await p.reload({ waitUntil: 'domcontentloaded' });
      await p.getByText('Canceled', { exact: true }).first().waitFor({ state: 'visible', timeout: 20_000 });
      const left = await p.getByRole('button', { name: 'Cancel workflow run' }).count();
      expect(left === 0, 'the cancel button is still offered for the canceled run');
      return `run ${toCancel.runId}: ${posted.filter((u) => u.includes(toCancel.runId)).join(', ')}; status ${after.status}; runs list: canceled`;
    }, 'studio-workflow-canceled.png'));
  await check(7, "an agent's Traces tab lists the agent's traces", () =>
    interact(async (p) => {
      // from the agent's chat with its thread (a new chat's page asks for its thread before it
      // exists: Mastra's 404, which this check counts as a failed call)
      await p.goto(`${studioUrl}/agents/${agentId}/chat/${threadId}`, { waitUntil: 'domcontentloaded', timeout: 30_000 });
      const tab = p.getByRole('tab', { name: 'Traces' });
      await tab.waitFor({ state: 'visible', timeout: 20_000 });
      // enabled only when /api/system/packages says observabilityEnabled
      const disabled = (await tab.getAttribute('aria-disabled')) === 'true' || (await tab.isDisabled());
      expect(!disabled, "the agent's Traces tab is disabled");
      await tab.click();
      await p.waitForURL(/\/traces/, { timeout: 20_000 });
      await p.getByText(prompt).first().waitFor({ state: 'visible', timeout: 20_000 });
      // Studio first asks for every trace, then for the tab's (where: the root an agent run, some
      // span this agent): the list settles on the agent's runs only, no workflow run among them
      let text = '';
      for (let i = 0; i < 100; i += 1) {
        text = await p.locator('body').innerText();
        if (!text.includes(WORKFLOW) && text.includes(prompt)) break;
        await p.waitForTimeout(200);
      }
      expect(!text.includes('Failed to load traces'), 'the tab says: Failed to load traces');
      expect(text.includes(prompt), `the agent's run is not listed: ${short(text, 400)}`);
      expect(!text.includes(WORKFLOW), `a workflow run's trace is on the agent's tab: ${short(text, 400)}`);
      return `${p.url().slice(studioUrl.length)} lists ${JSON.stringify(prompt)}`;
    }, 'studio-agent-traces.png'));
} finally {
  await browser.close();
}
report();
