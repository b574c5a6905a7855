#!/usr/bin/env node
// A human-in-the-loop round trip with the real AI SDK client: send a prompt, wait for the run to
// stop for the user, answer it the way an app does, and print what the client assembled as JSON.
//
//   node approval-client.mjs <url> --ai v7|v6 --prompt text (--approve | --decline [--reason r])
//   node approval-client.mjs <url> --ai v5|v7 --prompt text --resume '{"json": "object"}'
//   node approval-client.mjs <url> --ai v5 --prompt text (--approve | --decline [--reason r])
//
// v7 / v6: the tool part in state 'approval-requested' is answered with
// chat.addToolApprovalResponse({id, approved, reason}); the chat was created with
// sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses, so the client sends
// the follow-up by itself, as useChat does. v5 (no approval parts): the data-tool-call-approval /
// data-tool-call-suspended part's runId and toolCallId go back with resumeData (Mastra's form) in
// chat.sendMessage(undefined, {body}), which continues the last assistant message; --approve /
// --decline send resumeData {approved, reason?}.
//
// Exit: 0 both exchanges done without a client error; 1 the client reported an error; 2 usage or
// timeout; 3 the first answer did not stop for the user.

import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';

const require = createRequire(import.meta.url);
const PACKAGES = { v7: 'ai', v6: 'ai-v6', v5: 'ai-v5' };

function fail(message, code = 2) {
  process.stderr.write(`approval-client: ${message}\n`);
  process.exit(code);
}

const { values, positionals } = (() => {
  try {
    return parseArgs({
      allowPositionals: true,
      options: {
        ai: { type: 'string', default: 'v7' },
        prompt: { type: 'string', default: 'Hello' },
        approve: { type: 'boolean', default: false },
        decline: { type: 'boolean', default: false },
        reason: { type: 'string' },
        resume: { type: 'string' },
        header: { type: 'string', multiple: true, default: [] },
        timeout: { type: 'string', default: '60000' },
      },
    });
  } catch (err) {
    return fail(err.message);
  }
})();
const url = positionals[0];
if (!url) fail('missing <url>');
if (!(values.ai in PACKAGES)) fail(`--ai ${JSON.stringify(values.ai)}: expected v7, v6 or v5`);
if ([values.approve, values.decline, values.resume !== undefined].filter(Boolean).length !== 1) {
  fail('give exactly one of --approve, --decline, --resume JSON');
}
const headers = Object.fromEntries(values.header.map(h => [h.slice(0, h.indexOf(':')).trim(), h.slice(h.indexOf(':') + 1).trim()]));

class ArrayChatState {
  constructor(messages) {
    this.messages = messages;
    this.status = 'ready';
    this.error = undefined;
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

const pkg = PACKAGES[values.ai];
const ai = await import(pkg);
let Chat;
if (values.ai === 'v7') {
  ({ Chat } = await import('@ai-sdk/react'));
} else {
  Chat = class extends ai.AbstractChat {
    constructor(init) {
      super({ ...init, state: new ArrayChatState([]) });
    }
  };
}

const requests = [];
const finishes = [];
const errors = [];
const chunks = [];
const started = performance.now();
const timing = [];
const fetchTapped = async (input, init = {}) => {
  const body = JSON.parse(init.body);
  requests.push(body);
  const sent = performance.now();
  const response = await fetch(input, init);
  const entry = { status: response.status, headersMs: performance.now() - sent };
  timing.push(entry);
  return response;
};
const chat = new Chat({
  transport: new ai.DefaultChatTransport({ api: url, headers, fetch: fetchTapped }),
  ...(values.ai === 'v5' ? {} : { sendAutomaticallyWhen: ai.lastAssistantMessageIsCompleteWithApprovalResponses }),
  onError: error => errors.push({ name: error?.name, message: error?.message ?? String(error) }),
  onFinish: ({ finishReason }) => finishes.push(finishReason ?? null),
  onData: part => chunks.push(part.type),
});

const deadline = Number(values.timeout);
const timer = setTimeout(() => {
  process.stdout.write(JSON.stringify({ timedOut: true, messages: chat.messages, requests, errors }));
  process.exit(2);
}, deadline);

async function until(predicate) {
  while (!predicate()) await new Promise(resolve => setTimeout(resolve, 5));
}

await chat.sendMessage({ text: values.prompt });
await until(() => chat.status === 'ready' || chat.status === 'error');
const first = structuredClone(chat.messages.at(-1));
const waiting = first?.parts ?? [];

if (values.ai !== 'v5' && (values.approve || values.decline)) {
  const part = waiting.find(p => p.state === 'approval-requested');
  if (!part) fail(`no tool part is waiting for approval: ${JSON.stringify(waiting)}`, 3);
  await chat.addToolApprovalResponse({
    id: part.approval.id,
    approved: values.approve,
    ...(values.reason !== undefined ? { reason: values.reason } : {}),
  });
} else {
  const part = waiting.find(p => p.type === 'data-tool-call-approval' || p.type === 'data-tool-call-suspended');
  if (!part) fail(`no data-tool-call-approval / -suspended part: ${JSON.stringify(waiting)}`, 3);
  const resumeData = values.resume !== undefined
    ? JSON.parse(values.resume)
    : { approved: values.approve, ...(values.reason !== undefined ? { reason: values.reason } : {}) };
  await chat.sendMessage(undefined, { body: { resumeData, runId: part.data.runId, toolCallId: part.data.toolCallId } });
}
await until(() => finishes.length >= 2 || chat.status === 'error');
await until(() => chat.status === 'ready' || chat.status === 'error');
clearTimeout(timer);

const report = {
  client: `${pkg}@${require(`${pkg}/package.json`).version}`,
  status: chat.status,
  errors,
  finishes,
  requests,
  first,
  messages: chat.messages,
  assistantMessage: chat.messages.at(-1),
  timing,
  totalMs: performance.now() - started,
};
process.stdout.write(JSON.stringify(report));
process.exit(errors.length ? 1 : 0);
