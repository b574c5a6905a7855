#!/usr/bin/env node
// Reads one chat response the way `useChat` does, with the real AI SDK client code, and prints
// what that client assembled as JSON. Whether the stream is acceptable is decided by the `ai`
// package (its chunk schemas and its message assembly), never by a parser of ours; the `checks`
// this script adds on top are things the official server always does but the client tolerates.
//
//   node node-client.mjs <url> [<body>] [options]
//   node node-client.mjs --replay <file.sse> [<body>] [options]
//
// <body> (inline JSON, @file.json or - for stdin) is POSTed verbatim, and its `messages`
// (UIMessage[]) become the chat's history, so the answer is assembled on top of them as in a
// browser: a trailing user message is sent, a trailing assistant message is continued, and
// `trigger: "regenerate-message"` regenerates (the client drops that assistant message first).
// Without <body> the chat builds the request itself from --prompt.
//
//   --ai v7|v6|v5|v6-strict  v7: @ai-sdk/react's Chat (what useChat wraps) on ai 7 (default);
//                            v6, v5: ai 6 / ai 5 AbstractChat; v6-strict: ai 6.0.230, the last 6.x
//                            whose chunk schemas reject keys they do not know
//   --prompt <text>          the user's message when no <body> is given (default "Hello")
//   --header 'name: value'   extra request header (repeatable)
//   --strict                 a failed check fails the run (exit 3)
//   --chunks                 add the SSE events to the report; --raw adds the response text
//   --replay <file>          answer the request with this recorded SSE body instead of HTTP
//   --timeout <ms>           give up after this long (default 60000): exit 2
//   --quiet                  print only the assembled assistant message
//
// Exit: 0 ok; 1 the client reported an error (what makes useChat show one); 2 usage or
// timeout; 3 no assistant message, or a failed check under --strict.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';

const require = createRequire(import.meta.url);
const PACKAGES = { v7: 'ai', v6: 'ai-v6', v5: 'ai-v5', 'v6-strict': 'ai-v6-strict' };
const USAGE =
  'usage: node node-client.mjs (<url> | --replay file.sse) [<body>|@file.json|-] [--prompt text] ' +
  '[--ai v7|v6|v5|v6-strict] [--resume chatId] [--header "k: v"] [--strict] [--chunks] [--raw] [--timeout ms] [--quiet]';

function fail(message) {
  process.stderr.write(`node-client: ${message}\n${USAGE}\n`);
  process.exit(2);
}

function readOptions(argv) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        ai: { type: 'string', default: 'v7' },
        prompt: { type: 'string' },
        header: { type: 'string', multiple: true, default: [] },
        strict: { type: 'boolean', default: false },
        chunks: { type: 'boolean', default: false },
        raw: { type: 'boolean', default: false },
        replay: { type: 'string' },
        resume: { type: 'string' },
        timeout: { type: 'string', default: '60000' },
        quiet: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (err) {
    fail(err.message);
  }
  const { values, positionals } = parsed;
  if (values.help) fail('help');
  if (!(values.ai in PACKAGES)) fail(`--ai ${JSON.stringify(values.ai)}: expected one of ${Object.keys(PACKAGES).join(', ')}`);
  const timeout = Number(values.timeout);
  if (!Number.isFinite(timeout) || timeout <= 0) fail(`--timeout ${JSON.stringify(values.timeout)}: expected milliseconds > 0`);
  // With --replay the URL is optional: one positional is then the URL if it looks like one.
  let [url, body] = positionals;
  if (values.replay && body === undefined && url !== undefined && !/^https?:/.test(url)) [url, body] = [undefined, url];
  if (positionals.length > 2) fail(`unexpected argument ${JSON.stringify(positionals[2])}`);
  if (!url && !values.replay) fail('missing <url> (or --replay <file>)');
  if (body !== undefined && values.prompt !== undefined) fail('give a <body> or --prompt, not both');
  const headers = {};
  for (const line of values.header) {
    const at = line.indexOf(':');
    if (at <= 0) fail(`--header ${JSON.stringify(line)}: expected "name: value"`);
    headers[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return { ...values, timeout, headers, url: url ?? 'http://replay.invalid/api/chat', body: body === undefined ? undefined : readBody(body) };
}

function readBody(arg) {
  let text;
  try {
    text = arg === '-' ? readFileSync(0, 'utf8') : arg.startsWith('@') ? readFileSync(arg.slice(1), 'utf8') : arg;
  } catch (err) {
    fail(`cannot read <body>: ${err.message}`);
  }
  let body;
  try {
    body = JSON.parse(text);
  } catch (err) {
    fail(`<body> is not JSON: ${err.message}`);
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) fail('<body> must be a JSON object');
  return body;
}

// ------------------------------------------------------------------------------- the client

// What @ai-sdk/react's state does, without React: AbstractChat (ai 5 and 6) needs one.
class ArrayChatState {
  constructor(messages) {
    this.messages = messages;
    this.status = 'ready';
    this.error = undefined;
    this.experimental_queuedMessages = [];
  }
  pushMessage = message => {
    this.messages = [...this.messages, message];
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index, message) => {
    this.messages = this.messages.with(index, structuredClone(message));
  };
  snapshot = value => structuredClone(value);
}

async function loadClient(name) {
  const pkg = PACKAGES[name];
  const ai = await import(pkg);
  const version = require(`${pkg}/package.json`).version;
  if (name === 'v7') {
    const { Chat } = await import('@ai-sdk/react');
    const react = require('@ai-sdk/react/package.json').version;
    return { ai, Chat, version, via: `@ai-sdk/react@${react} Chat, ai@${version}` };
  }
  const Chat = class extends ai.AbstractChat {
    constructor({ messages = [], ...init }) {
      super({ ...init, state: new ArrayChatState(messages) });
    }
  };
  return { ai, Chat, version, via: `ai@${version} AbstractChat` };
}

// A fetch that hands the response to the client untouched while keeping a copy of the bytes.
function tappedFetch(wire, replay) {
  const upstream = replay
    ? async () => new Response(new Blob([replay]).stream(), { status: 200, headers: { 'content-type': 'text/event-stream' } })
    : fetch;
  return async (input, init = {}) => {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    wire.request = { url: String(input), method: init.method ?? 'GET', body: parseMaybe(init.body) };
    const response = await upstream(input, init);
    wire.timing.headersMs = elapsed();
    wire.response = { status: response.status, statusText: response.statusText, headers: Object.fromEntries(response.headers) };
    if (!response.body) return response;
    const decoder = new TextDecoder();
    const tap = new TransformStream({
      transform(bytes, controller) {
        if (wire.reads === 0) wire.timing.firstByteMs = elapsed();
        wire.reads += 1;
        wire.bytes += bytes.byteLength;
        wire.timing.lastByteMs = elapsed();
        wire.text += decoder.decode(bytes, { stream: true });
        controller.enqueue(bytes);
      },
      flush() {
        wire.text += decoder.decode();
        wire.complete = true;
      },
    });
    return new Response(response.body.pipeThrough(tap), response);
  };
}

function parseMaybe(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

const isUiMessage = m => m !== null && typeof m === 'object' && typeof m.role === 'string' && Array.isArray(m.parts);

// Run one exchange; resolves to what the client saw. Errors stay in `events.errors`, as useChat
// keeps them in `error` rather than throwing.
async function converse(client, options, wire) {
  const transport = new client.ai.DefaultChatTransport({
    api: options.url,
    headers: options.headers,
    fetch: tappedFetch(wire, options.replay ? readFileSync(options.replay) : undefined),
    ...(options.body ? { prepareSendMessagesRequest: () => ({ body: options.body }) } : {}),
  });
  const posted = options.body?.messages;
  const history = Array.isArray(posted) && posted.length && posted.every(isUiMessage) ? structuredClone(posted) : [];
  if (Array.isArray(posted) && posted.length && !history.length) {
    process.stderr.write('node-client: note: body.messages are not all UIMessages ({id, role, parts}); the chat starts empty\n');
  }
  // What the user does next, from the history's last message (as in a browser).
  const last = history.at(-1);
  let mode = 'send';
  let send = () => chat.sendMessage({ text: options.prompt ?? 'Hello' });
  if (last?.role === 'user') {
    history.pop();
    send = () => chat.sendMessage(last);
  } else if (last?.role === 'assistant' && options.body?.trigger === 'regenerate-message') {
    mode = 'regenerate';
    send = () => chat.regenerate({ messageId: options.body.messageId ?? last.id });
  } else if (last?.role === 'assistant') {
    mode = 'continue'; // what sendAutomaticallyWhen does after a tool result or an approval
    send = () => chat.sendMessage();
  }
  if (options.resume !== undefined) {
    mode = 'resume'; // useChat({ id, resume: true }) on mount: GET <api>/<id>/stream
    send = () => chat.resumeStream();
  }
  const events = { errors: [], finish: null, data: [] };
  const chat = new client.Chat({
    ...(options.resume !== undefined ? { id: options.resume } : {}),
    messages: history,
    transport,
    onError: error => events.errors.push(error),
    onFinish: ({ isAbort, isDisconnect, isError, finishReason }) => {
      events.finish = { isAbort, isDisconnect, isError, finishReason };
    },
    onData: part => events.data.push(part),
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    chat.stop();
  }, options.timeout);
  try {
    await send();
  } catch (err) {
    events.errors.push(err);
  } finally {
    clearTimeout(timer);
  }
  return { chat, events, timedOut, history, mode };
}

// ------------------------------------------------------------------------------- the report

// The SSE events, for the report only (the client parsed them itself).
function sseEvents(text) {
  const events = [];
  let comments = 0;
  for (const block of text.replace(/\r\n?/g, '\n').split(/\n\n+/)) {
    const data = [];
    const stray = [];
    for (const line of block.split('\n')) {
      if (line === '') continue;
      if (line.startsWith(':')) comments += 1;
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      else if (!/^(event|id|retry)(:|$)/.test(line)) stray.push(line);
    }
    if (stray.length) events.push({ notSse: stray.join('\n') });
    if (!data.length) continue;
    const payload = data.join('\n');
    if (payload === '[DONE]') events.push({ done: true });
    else {
      const chunk = parseMaybe(payload);
      events.push(typeof chunk === 'object' && chunk !== null ? { chunk } : { invalidJson: payload });
    }
  }
  return { events, comments };
}

function describeError(error, events, wire) {
  if (!error) return null;
  const name = error.name ?? 'Error';
  const message = String(error.message ?? error);
  const fromErrorChunk = events.some(e => e.chunk?.type === 'error' && e.chunk.errorText === message);
  const kinds = {
    AI_TypeValidationError: 'validation',
    AI_UIMessageStreamError: 'protocol',
    AI_JSONParseError: 'json',
    AI_APICallError: 'http',
    AI_EmptyResponseBodyError: 'http',
  };
  let kind = kinds[name];
  if (!kind && wire.response?.status >= 400) kind = 'http';
  if (!kind && fromErrorChunk) kind = 'error-chunk';
  if (!kind && name === 'TypeError' && /fetch|network|ECONN/i.test(message)) kind = 'network';
  if (!kind) kind = 'client-crash'; // the client threw on the chunk sequence without naming it
  return {
    name,
    kind,
    message: message.length > 2000 ? `${message.slice(0, 2000)}…` : message,
    ...(error.value !== undefined ? { offendingChunk: error.value } : {}),
    ...(error.text !== undefined ? { offendingData: error.text } : {}),
    ...(error.statusCode !== undefined ? { statusCode: error.statusCode } : {}),
    ...(error.cause?.message ? { cause: String(error.cause.message) } : {}),
  };
}

const isToolPart = p => p.type === 'dynamic-tool' || p.type.startsWith('tool-');

function conformance({ chat, history, mode }, wire, events, replayed) {
  const checks = [];
  const check = (name, ok, detail, severity = 'warning') =>
    checks.push({ check: name, ok: Boolean(ok), severity, ...(detail === undefined ? {} : { detail }) });
  if (!replayed && wire.response) {
    const h = wire.response.headers;
    check('HTTP status is 200', wire.response.status === 200, String(wire.response.status));
    check('content-type is text/event-stream', /^text\/event-stream/i.test(h['content-type'] ?? ''), h['content-type']);
    check('x-vercel-ai-ui-message-stream is v1', h['x-vercel-ai-ui-message-stream'] === 'v1', h['x-vercel-ai-ui-message-stream']);
  }
  const assistant = chat.messages.findLast(m => m.role === 'assistant');
  const chunks = events.filter(e => e.chunk).map(e => e.chunk);
  const count = type => chunks.filter(c => c.type === type).length;
  const parts = assistant?.parts ?? [];
  check('an assistant message was assembled', parts.length > 0, `${parts.length} parts`, 'error');
  check('every line is an SSE field or a comment', !events.some(e => e.notSse), events.find(e => e.notSse)?.notSse);
  check('the first chunk is start', chunks[0]?.type === 'start', chunks[0]?.type);
  check('a finish chunk was sent', count('finish') > 0);
  check('the stream ends with data: [DONE]', events.at(-1)?.done === true);
  check('start-step and finish-step are balanced', count('start-step') === count('finish-step'), `${count('start-step')}/${count('finish-step')}`);
  const open = parts.filter(p => (p.type === 'text' || p.type === 'reasoning') && p.state === 'streaming');
  check('every text and reasoning part was ended', open.length === 0, open.length ? `${open.length} still streaming` : undefined);
  const pending = parts.filter(p => isToolPart(p) && p.state === 'input-streaming');
  check('no tool call is left in input-streaming', pending.length === 0, pending.map(p => p.toolCallId).join(', ') || undefined);
  if (mode === 'continue') {
    const continued = history.at(-1).id;
    check('the continued assistant message kept its id', assistant?.id === continued && chat.messages.length === history.length, `continued ${continued}, got ${assistant?.id}`);
  }
  return checks;
}

function summarize(part) {
  if (part.type === 'text' || part.type === 'reasoning') return { type: part.type, state: part.state, text: part.text };
  if (!isToolPart(part)) return part;
  const { type, toolName, toolCallId, state, input, output, errorText, approval } = part;
  return Object.fromEntries(Object.entries({ type, toolName, toolCallId, state, input, output, errorText, approval }).filter(([, v]) => v !== undefined));
}

async function main() {
  const options = readOptions(process.argv.slice(2));
  const client = await loadClient(options.ai);
  const wire = { request: null, response: null, text: '', bytes: 0, reads: 0, complete: false, timing: {} };
  const run = await converse(client, options, wire);
  const { chat, timedOut } = run;
  const { events, comments } = sseEvents(wire.text);
  const error = chat.error ?? run.events.errors[0];
  const checks = timedOut || error ? [] : conformance(run, wire, events, Boolean(options.replay));
  const failed = checks.filter(c => !c.ok && (options.strict || c.severity === 'error'));
  const exitCode = timedOut ? 2 : error || chat.status === 'error' ? 1 : failed.length ? 3 : 0;
  const assistant = chat.messages.findLast(m => m.role === 'assistant') ?? null;
  const report = {
    ok: exitCode === 0,
    exitCode,
    client: { name: options.ai, ai: client.version, via: client.via, node: process.version },
    url: options.replay ? null : options.url,
    replay: options.replay ?? null,
    mode: run.mode,
    request: wire.request && { method: wire.request.method, url: wire.request.url, body: wire.request.body },
    http: wire.response,
    status: timedOut ? 'timeout' : chat.status,
    error: describeError(error, events, wire),
    onFinish: run.events.finish,
    checks,
    transientData: run.events.data.filter(d => d.transient),
    assistantText: assistant ? assistant.parts.filter(p => p.type === 'text').map(p => p.text).join('\n') : null,
    assistantParts: assistant ? assistant.parts.map(summarize) : null,
    assistantMessage: assistant,
    messages: chat.messages,
    stream: { bytes: wire.bytes, reads: wire.reads, events: events.length, comments, complete: wire.complete, ...wire.timing },
    ...(options.chunks ? { chunks: events } : {}),
    ...(options.raw ? { raw: wire.text } : {}),
  };
  process.stdout.write(`${JSON.stringify(options.quiet ? assistant : report, null, 2)}\n`);
  const verdict = {
    0: `OK (${client.via}, status ${chat.status}${checks.some(c => !c.ok) ? `; warnings: ${checks.filter(c => !c.ok).map(c => c.check).join('; ')}` : ''})`,
    1: `FAIL: the client reported ${report.error?.kind} error: ${String(report.error?.message).replace(/\s+/g, ' ').slice(0, 300)}`,
    2: `FAIL: no answer within ${options.timeout} ms`,
    3: `FAIL: ${failed.map(c => c.check).join('; ')}`,
  }[exitCode];
  process.stderr.write(`node-client: ${verdict}\n`);
  process.exit(exitCode);
}

await main();
