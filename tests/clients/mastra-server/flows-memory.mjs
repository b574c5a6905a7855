#!/usr/bin/env node
// The memory routes driven by the REAL @mastra/client-js: getMemoryStatus, getMemoryConfig,
// createMemoryThread, listMemoryThreads, getMemoryThread (get, update, listMessages,
// deleteMessages, delete), saveMessageToMemory, getWorkingMemory / updateWorkingMemory.
//
//   node flows-memory.mjs --base-url http://127.0.0.1:PORT --agent ID [--token T --other-token U]
//
// The agent's memory must have working memory enabled. Prints "PASS (n) …" / "FAIL (n) …" lines,
// then "RESULT p/t"; exit 0 when all passed.
import { arg, check, clientFor, expect, report, short } from './flows-common.mjs';

const baseUrl = arg('--base-url');
const agentId = arg('--agent', 'helper');
const token = arg('--token');
const otherToken = arg('--other-token');
const client = (t = token) => clientFor(baseUrl, t);
const nonce = Math.random().toString(36).slice(2, 8);
const resourceId = arg('--resource', `user-${nonce}`);
const threadId = `thread-${nonce}`;
const textOf = (m) => (m?.content?.parts ?? []).filter((p) => p.type === 'text').map((p) => p.text).join('');

await check(1, 'getMemoryStatus and getMemoryConfig', async () => {
  const status = await client().getMemoryStatus(agentId);
  expect(status.result === true, `status ${short(status)}`);
  const { config } = await client().getMemoryConfig({ agentId });
  expect(config?.workingMemory?.enabled === true, `config ${short(config)}`);
  return `memoryType ${status.memoryType}, lastMessages ${config.lastMessages}`;
});

await check(2, 'createMemoryThread, listMemoryThreads, thread.get, thread.update', async () => {
  const made = await client().createMemoryThread({ agentId, resourceId, threadId, title: 'First', metadata: { topic: 'tides' } });
  expect(made.id === threadId && made.resourceId === resourceId, `created ${short(made)}`);
  const listed = await client().listMemoryThreads({ resourceId, agentId });
  expect(listed.threads.some((t) => t.id === threadId), `listed ${short(listed)}`);
  const thread = client().getMemoryThread({ threadId, agentId });
  const got = await thread.get();
  expect(got.title === 'First' && got.metadata?.topic === 'tides', `get ${short(got)}`);
  const updated = await thread.update({ title: 'Renamed', metadata: { topic: 'moon' }, resourceId });
  expect(updated.title === 'Renamed' && updated.metadata?.topic === 'moon', `update ${short(updated)}`);
  return `${listed.total} thread(s)`;
});

await check(3, 'saveMessageToMemory, listThreadMessages, deleteMessages', async () => {
  const messages = ['hello', 'hi, how can I help?'].map((text, i) => ({
    id: `msg-${nonce}-${i}`,
    threadId,
    resourceId,
    role: i === 0 ? 'user' : 'assistant',
    type: 'text',
    createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)),
    content: { format: 2, parts: [{ type: 'text', text }] },
  }));
  const saved = await client().saveMessageToMemory({ agentId, messages });
  expect(saved.messages?.length === 2, `saved ${short(saved)}`);
  const got = await client().listThreadMessages(threadId, { agentId });
  expect(got.messages.map(textOf).join('|') === 'hello|hi, how can I help?', `messages ${short(got.messages.map(textOf))}`);
  const removed = await client().getMemoryThread({ threadId, agentId }).deleteMessages([`msg-${nonce}-0`]);
  expect(removed.success === true, `deleteMessages ${short(removed)}`);
  const after = await client().listThreadMessages(threadId, { agentId });
  expect(after.messages.length === 1 && after.messages[0].role === 'assistant', `after delete ${short(after.messages)}`);
  return `${got.messages.length} saved, 1 left`;
});

await check(4, 'updateWorkingMemory then getWorkingMemory', async () => {
  const wrote = await client().updateWorkingMemory({ agentId, threadId, resourceId, workingMemory: '# User\n- Name: Ann' });
  expect(wrote.success === true, `update ${short(wrote)}`);
  const read = await client().getWorkingMemory({ agentId, threadId, resourceId });
  expect(read.workingMemory === '# User\n- Name: Ann' && read.threadExists === true, `get ${short(read)}`);
  return `source ${read.source}`;
});

if (otherToken) {
  await check(5, 'another user: the thread is not found, the list is empty', async () => {
    let status;
    try {
      await client(otherToken).getMemoryThread({ threadId, agentId }).get();
    } catch (e) {
      status = e.status;
    }
    expect(status === 404, `get answered ${status ?? 'success'}`);
    const theirs = await client(otherToken).listMemoryThreads({ agentId });
    expect(!theirs.threads.some((t) => t.id === threadId), 'the thread is in their list');
    return '404';
  });
}

await check(6, 'thread.delete', async () => {
  const gone = await client().getMemoryThread({ threadId, agentId }).delete();
  expect(/deleted/i.test(gone.result ?? ''), `delete ${short(gone)}`);
  let status;
  try {
    await client().getMemoryThread({ threadId, agentId }).get();
  } catch (e) {
    status = e.status;
  }
  expect(status === 404, `get after delete answered ${status ?? 'success'}`);
});

report();
