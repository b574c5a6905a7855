#!/usr/bin/env node
// The real `useChat` in headless Chromium: serves the page (web/dist, built by
// `scripts/clients.sh --browser`) with /api/chat forwarded to a backend, types each prompt,
// clicks Send, waits for useChat to settle, and prints what useChat holds and what was rendered.
//
//   node browser-check.mjs --backend <chat-url> --screenshot out.png [--prompt text]... [options]
//
//   --prompt <text>     one turn per --prompt, each sent after the previous answer finished, so
//                       later requests carry the earlier messages back (default: one weather question)
//   --timeout <ms>      wait at most this long per turn (default 60000)
//   --chromium <path>   the browser (default $AGENTSTREAM_CHROMIUM, else `chromium` on PATH)
//
// Exit: 0 ok; 1 useChat ended in "error" or the page threw; 2 usage, timeout or browser failure;
// 3 no assistant message.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { servePage } from './web/serve.mjs';

function usage(message) {
  process.stderr.write(
    `browser-check: ${message}\nusage: node browser-check.mjs --backend <chat-url> --screenshot out.png ` +
      '[--prompt text]... [--chat id [--reload-mid-answer | --stop-mid-answer]] [--timeout ms] [--chromium path]\n',
  );
  process.exit(2);
}

function readOptions() {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        backend: { type: 'string' },
        screenshot: { type: 'string' },
        prompt: { type: 'string', multiple: true, default: [] },
        approve: { type: 'boolean', default: false },
        decline: { type: 'boolean', default: false },
        timeout: { type: 'string', default: '60000' },
        'page-port': { type: 'string', default: '0' },
        chat: { type: 'string' },
        'reload-mid-answer': { type: 'boolean', default: false },
        'stop-mid-answer': { type: 'boolean', default: false },
        chromium: { type: 'string', default: process.env.AGENTSTREAM_CHROMIUM ?? onPath('chromium') },
      },
    }));
  } catch (err) {
    usage(err.message);
  }
  if (!values.backend) usage('--backend <chat-url> is required');
  if (!values.screenshot) usage('--screenshot <path> is required');
  if (!values.chromium) usage('no chromium on PATH: give --chromium <path> (scripts/clients.sh --browser installs it)');
  const timeout = Number(values.timeout);
  if (!(timeout > 0)) usage(`--timeout ${JSON.stringify(values.timeout)}: expected milliseconds > 0`);
  const prompts = values.prompt.length ? values.prompt : ['What is the weather in Berlin?'];
  const pagePort = Number(values['page-port']);
  if (!Number.isInteger(pagePort) || pagePort < 0) usage(`--page-port ${JSON.stringify(values['page-port'])}: expected a port number`);
  if (values['reload-mid-answer'] && !values.chat) usage('--reload-mid-answer needs --chat <id> (the chat the page resumes)');
  if (values['stop-mid-answer'] && !values.chat) usage('--stop-mid-answer needs --chat <id> (the chat whose answer is stopped)');
  if (values['stop-mid-answer'] && values['reload-mid-answer']) usage('--stop-mid-answer and --reload-mid-answer: choose one');
  return { ...values, timeout, prompts, pagePort, screenshot: resolve(values.screenshot) };
}

const probe = () => window.chatProbe ?? null;

function onPath(name) {
  const dir = (process.env.PATH ?? '').split(delimiter).find(d => d && existsSync(join(d, name)));
  return dir ? join(dir, name) : undefined;
}

// Wait until useChat has finished request number `n` and is idle again.
async function settled(page, n, timeout) {
  await page.waitForFunction(
    count => {
      const p = window.chatProbe;
      return p && p.finished.length >= count && (p.status === 'ready' || p.status === 'error');
    },
    n,
    { timeout, polling: 50 },
  );
}

// With --approve / --decline: click the tool's button while one waits for approval; each click
// makes useChat send one more request (sendAutomaticallyWhen), continuing the same message.
async function answerApprovals(page, options, n) {
  const selector = options.approve ? 'button.approve' : 'button.deny';
  const answered = [];
  while ((options.approve || options.decline) && (await page.$(selector))) {
    answered.push(await page.$eval(selector, b => b.closest('[data-tool-name]')?.dataset.toolName ?? null));
    if (answered.length === 1) await page.screenshot({ path: options.screenshot.replace(/(\.png)?$/, '-approval.png'), fullPage: true });
    await page.click(selector);
    n += 1;
    await settled(page, n, options.timeout);
  }
  return { n, answered };
}

// The first words of an answer are on screen (--reload-mid-answer reloads then).
const answering = () => {
  const p = window.chatProbe;
  const last = p?.messages.at(-1);
  return p?.status === 'streaming' && last?.role === 'assistant' && last.parts.some(q => q.type === 'text' && q.text);
};

// One turn: type, send, wait until useChat has finished request number `n` and is idle again.
// With `reload`, the page reloads mid-answer and the turn is the resumed answer. With `stop`, the
// page's Stop button is pressed mid-answer (stop() and DELETE on the chat's stream), and the turn
// is what useChat holds once the DELETE answered and useChat settled.
async function turn(page, prompt, n, timeout, reload, stop) {
  await page.fill('#prompt', prompt);
  await page.click('#send');
  if (stop) {
    await page.waitForFunction(answering, null, { timeout, polling: 20 });
    const stopped = page.waitForResponse(r => r.request().method() === 'DELETE', { timeout });
    await page.click('#stop');
    await stopped;
    await page.waitForFunction(
      count => window.chatProbe?.finished.length >= count && window.chatProbe.status === 'ready',
      n,
      { timeout, polling: 50 },
    );
    const atStop = await page.evaluate(probe);
    const assistant = atStop.messages.findLast(m => m.role === 'assistant');
    return {
      prompt,
      status: atStop.status,
      error: atStop.error,
      finished: atStop.finished,
      assistantText: assistant ? assistant.parts.filter(p => p.type === 'text').map(p => p.text).join('\n') : null,
    };
  }
  if (reload) {
    // Mid-answer: the first words are on screen, then the page reloads and useChat resumes.
    await page.waitForFunction(answering, null, { timeout, polling: 20 });
    await page.reload({ waitUntil: 'load' });
    await page.waitForSelector('#prompt', { timeout: 15000 });
    n = 1; // a fresh page: its first finished request is the resumed one
  }
  try {
    await page.waitForFunction(
      count => {
        const p = window.chatProbe;
        return p && p.finished.length >= count && (p.status === 'ready' || p.status === 'error');
      },
      n,
      { timeout, polling: 50 },
    );
  } catch {
    return { prompt, timedOut: true, ...(await page.evaluate(probe)) };
  }
  const state = await page.evaluate(probe);
  const assistant = state.messages.findLast(m => m.role === 'assistant');
  return {
    prompt,
    status: state.status,
    error: state.error,
    assistantText: assistant ? assistant.parts.filter(p => p.type === 'text').map(p => p.text).join('\n') : null,
  };
}

// What the page shows for the last assistant message.
function rendered() {
  const last = [...document.querySelectorAll('.message[data-role="assistant"]')].at(-1);
  return {
    text: last ? last.querySelector('.parts').innerText : null,
    textParts: last ? [...last.querySelectorAll('[data-part-type="text"]')].map(e => e.innerText) : [],
    parts: last
      ? [...last.querySelectorAll('[data-part-type]')].map(e => ({
          type: e.dataset.partType,
          ...(e.dataset.state ? { state: e.dataset.state } : {}),
          ...(e.dataset.toolName ? { toolName: e.dataset.toolName } : {}),
        }))
      : [],
    error: document.querySelector('#error')?.innerText ?? null,
  };
}

async function check(options, page, chatResponses) {
  const pageUrl = options.chat ? `${options.pageUrl}?chat=${encodeURIComponent(options.chat)}` : options.pageUrl;
  await page.goto(pageUrl, { waitUntil: 'load', timeout: 30000 });
  await page.waitForSelector('#prompt', { timeout: 15000 });
  const turns = [];
  let requests = 0;
  for (const [i, prompt] of options.prompts.entries()) {
    const first = i === 0;
    let result = await turn(page, prompt, ++requests, options.timeout, options['reload-mid-answer'] && first, options['stop-mid-answer'] && first);
    if (!result.timedOut && result.status !== 'error') {
      const { n, answered } = await answerApprovals(page, options, requests);
      if (answered.length) {
        requests = n;
        const state = await page.evaluate(probe);
        const assistant = state.messages.findLast(m => m.role === 'assistant');
        result = { ...result, answered, status: state.status, error: state.error,
          assistantText: assistant ? assistant.parts.filter(p => p.type === 'text').map(p => p.text).join('\n') : null };
      }
    }
    turns.push(result);
    if (result.timedOut || result.status === 'error') break;
  }
  await page.evaluate(() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done))));
  mkdirSync(dirname(options.screenshot), { recursive: true });
  await page.screenshot({ path: options.screenshot, fullPage: true });
  const state = await page.evaluate(probe);
  const assistant = state.messages.findLast(m => m.role === 'assistant') ?? null;
  return { turns, state, assistant, view: await page.evaluate(rendered), http: chatResponses };
}

async function main() {
  const options = readOptions();
  const proxyLog = [];
  const { server, url } = await servePage({ backend: options.backend, port: options.pagePort, log: line => proxyLog.push(line) });
  const profile = mkdtempSync(join(tmpdir(), 'agentstream-chromium-'));
  const consoleErrors = [];
  const pageErrors = [];
  const chatResponses = [];
  let context;
  let report;
  let exitCode;
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: options.chromium,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      viewport: { width: 1000, height: 800 },
      timeout: 60000,
    });
    const page = context.pages()[0] ?? (await context.newPage());
    page.on('console', m => m.type() === 'error' && consoleErrors.push(m.text()));
    page.on('pageerror', e => pageErrors.push(String(e?.stack ?? e)));
    page.on('response', async r => {
      if (!new URL(r.url()).pathname.startsWith('/api/chat')) return;
      chatResponses.push({ method: r.request().method(), status: r.status(), headers: await r.allHeaders().catch(() => null) });
    });
    const { turns, state, assistant, view, http } = await check({ ...options, pageUrl: url }, page, chatResponses);
    const timedOut = turns.some(t => t.timedOut);
    exitCode = timedOut ? 2 : state.status === 'error' || pageErrors.length ? 1 : assistant?.parts.length ? 0 : 3;
    report = {
      ok: exitCode === 0,
      exitCode,
      browser: `chromium ${context.browser()?.version() ?? '?'}`,
      page: url,
      backend: options.backend,
      status: state.status,
      statusHistory: state.statusHistory,
      error: state.error,
      onFinish: state.finished.at(-1) ?? null,
      turns,
      http: http.at(-1) ?? null,
      requests: http.map(r => `${r.method} ${r.status}`),
      renderedAssistantText: view.text,
      renderedTextParts: view.textParts,
      renderedError: view.error,
      domParts: view.parts,
      parts: assistant?.parts ?? null,
      assistantMessage: assistant,
      messages: state.messages,
      consoleErrors,
      pageErrors,
      proxyLog,
      screenshot: options.screenshot,
    };
  } catch (err) {
    exitCode = 2;
    report = { ok: false, exitCode, page: url, error: { name: err?.name, message: String(err?.message ?? err) }, consoleErrors, pageErrors, proxyLog };
  } finally {
    await context?.close().catch(() => {});
    rmSync(profile, { recursive: true, force: true });
    server.closeAllConnections();
    await new Promise(done => server.close(done));
  }
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  process.stderr.write(
    exitCode === 0
      ? `browser-check: OK (${report.turns.length} turn(s), status ${report.status}, screenshot ${options.screenshot})\n`
      : `browser-check: FAIL (exit ${exitCode}: ${report.error ? `${report.error.name}: ${report.error.message}` : 'no assistant message'})\n`,
  );
  process.exit(exitCode);
}

await main();
