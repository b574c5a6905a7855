#!/usr/bin/env node
// One chat through the real AI SDK client across two servers that share a stream store: the
// answer is requested from server A, the connection drops mid-answer, and the same Chat then
// calls resumeStream(), which the client sends to server B. A second, uninterrupted chat on A is
// the reference the resumed message must equal. Prints a JSON report.
//
//   node resume-client.mjs <api on A> <api on B> --chat <id> [--ai v7|v6|v5] [--prompt text]
//                          [--drop network|terminated] [--gate file] [--cut-at text] [--timeout ms]
//
//   --drop network     the body fails as a browser's does when the network goes (TypeError
//                      "network error": the client keeps its partial state to resume from)
//   --drop terminated  as Node's fetch does when the socket closes (TypeError "terminated")
//   --gate file        created once B answers the resume: the test's model goes on then
//   --cut-at text      cut once the answer shown is exactly this text (default: at its first
//                      words, whatever they are); the parts can arrive in separate reads, so a
//                      test that checks what was shown before the cut names it
//
// Either way the request to A is really aborted (A sees the client go away). Exit: 0 ok, 1 the
// client ended in error, 2 usage or timeout.

import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';

const require = createRequire(import.meta.url);
const PACKAGES = { v7: 'ai', v6: 'ai-v6', v5: 'ai-v5' };
const USAGE = 'usage: node resume-client.mjs <api on A> <api on B> --chat <id> [--ai v7|v6|v5] [--prompt text] '
  + '[--drop network|terminated] [--gate file] [--cut-at text] [--timeout ms]';

function fail(message) {
  process.stderr.write(`resume-client: ${message}\n${USAGE}\n`);
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
        chat: { type: 'string' },
        prompt: { type: 'string', default: 'Weather in Berlin?' },
        drop: { type: 'string', default: 'network' },
        gate: { type: 'string' },
        'cut-at': { type: 'string' },
        timeout: { type: 'string', default: '60000' },
      },
    });
  } catch (err) {
    fail(err.message);
  }
  const { values, positionals } = parsed;
  if (positionals.length !== 2) fail('expected two api URLs (server A, server B)');
  if (!PACKAGES[values.ai]) fail(`--ai: expected one of ${Object.keys(PACKAGES).join(', ')}, got ${values.ai}`);
  if (!values.chat) fail('--chat is required');
  if (!['network', 'terminated'].includes(values.drop)) fail(`--drop: expected network or terminated, got ${values.drop}`);
  const timeout = Number(values.timeout);
  if (!Number.isFinite(timeout) || timeout <= 0) fail(`--timeout: expected milliseconds > 0, got ${values.timeout}`);
  return { ...values, cutAt: values['cut-at'], a: positionals[0], b: positionals[1], timeout };
}

// What @ai-sdk/react's state does, without React: AbstractChat (ai 5 and 6) needs one.
class ArrayChatState {
  constructor() {
    this.messages = [];
    this.status = 'ready';
    this.error = undefined;
  }
  pushMessage = message => { this.messages = [...this.messages, message]; };
  popMessage = () => { this.messages = this.messages.slice(0, -1); };
  replaceMessage = (index, message) => { this.messages = this.messages.with(index, structuredClone(message)); };
  snapshot = value => structuredClone(value);
}

async function loadChat(name) {
  const ai = await import(PACKAGES[name]);
  const version = require(`${PACKAGES[name]}/package.json`).version;
  if (name === 'v7') return { ai, Chat: (await import('@ai-sdk/react')).Chat, version };
  const Chat = class extends ai.AbstractChat {
    constructor(init) {
      super({ ...init, state: new ArrayChatState() });
    }
  };
  return { ai, Chat, version };
}

// Requests go where the client sends them, except that a reconnect (GET) goes to server B.
// `cut()` drops A's answer: the socket is really closed (the inner fetch is aborted) and the
// client sees the error a dropped connection gives it.
function routingFetch(options, log) {
  let dropped = false;
  let cut = null;
  const routed = async (input, init = {}) => {
    const url = new URL(String(input));
    const method = init.method ?? 'GET';
    if (method === 'GET') {
      const b = new URL(options.b);
      url.protocol = b.protocol;
      url.host = b.host;
    }
    const inner = new AbortController();
    init.signal?.addEventListener('abort', () => inner.abort(init.signal.reason));
    const response = await fetch(url, { ...init, signal: inner.signal });
    log.push({ method, url: url.href, status: response.status });
    if (method === 'GET' && response.status === 200 && options.gate) writeFileSync(options.gate, '');
    if (method !== 'POST' || dropped || !response.body) return response;
    dropped = true;
    const wire = new TransformStream({
      start(controller) {
        cut = () => {
          inner.abort();
          controller.error(new TypeError(options.drop === 'network' ? 'network error' : 'terminated'));
        };
      },
    });
    return new Response(response.body.pipeThrough(wire), response);
  };
  return { fetch: routed, cut: () => cut() };
}

const answerText = chat => (chat.messages.at(-1)?.role === 'assistant' ? chat.messages.at(-1).parts : [])
  .filter(p => p.type === 'text').map(p => p.text).join('');

async function converse(client, options, chatId, fetch) {
  const errors = [];
  const finishes = [];
  const chat = new client.Chat({
    id: chatId,
    transport: new client.ai.DefaultChatTransport({ api: options.a, fetch }),
    onError: error => errors.push({ name: error.name, message: String(error.message ?? error) }),
    onFinish: ({ isAbort, isDisconnect, isError }) => finishes.push({ isAbort, isDisconnect, isError }),
  });
  return { chat, errors, finishes };
}

const withoutIds = message => message && { role: message.role, parts: message.parts, metadata: message.metadata };

async function main() {
  const options = readOptions(process.argv.slice(2));
  const client = await loadChat(options.ai);
  const timer = setTimeout(() => {
    process.stderr.write('resume-client: timed out\n');
    process.exit(2);
  }, options.timeout);
  const requests = [];
  const routing = routingFetch(options, requests);
  const resumed = await converse(client, options, options.chat, routing.fetch);
  const sent = resumed.chat.sendMessage({ text: options.prompt });
  const shown = () => (options.cutAt === undefined ? answerText(resumed.chat) !== '' : answerText(resumed.chat) === options.cutAt);
  while (!shown()) await new Promise(resolve => setTimeout(resolve, 5));
  routing.cut();
  await sent;
  const afterDrop = { status: resumed.chat.status, messages: structuredClone(resumed.chat.messages) };
  await resumed.chat.resumeStream();

  const reference = await converse(client, options, `${options.chat}-reference`, fetch);
  await reference.chat.sendMessage({ text: options.prompt });
  clearTimeout(timer);

  const report = {
    client: `ai@${client.version}`,
    requests,
    afterDrop,
    drop: { errors: resumed.errors.slice(0, 1), finish: resumed.finishes[0] },
    status: resumed.chat.status,
    errors: resumed.errors.slice(1),
    messages: resumed.chat.messages,
    reference: { status: reference.chat.status, errors: reference.errors, messages: reference.chat.messages },
  };
  report.same = JSON.stringify(resumed.chat.messages.map(withoutIds))
    === JSON.stringify(reference.chat.messages.map(withoutIds));
  process.stdout.write(JSON.stringify(report));
  process.exit(resumed.chat.status === 'ready' && reference.chat.status === 'ready' ? 0 : 1);
}

main().catch(err => {
  process.stderr.write(`resume-client: ${err?.stack ?? err}\n`);
  process.exit(1);
});
