#!/usr/bin/env node
// The real @mastra/client-js against the agents and tools routes of a server (ours, or the
// reference Mastra server): every method of `client.getAgent(id)` / `client.getTool(id)` that
// these routes answer, the way a Mastra user calls them.
//
//   node client-agents.mjs --base-url http://127.0.0.1:PORT [--agent demo-agent] [--approval]
//
// --approval: also the human-in-the-loop methods (the demo agent's book_table needs approval and
// choose_time suspends; the reference server's agent has neither).
// Prints one JSON object: {"checks": {name: {"ok": bool, "detail"|"error": ...}}}; exit 0 when all passed.
import { MastraClient } from '@mastra/client-js';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
};
const baseUrl = arg('--base-url');
const agentId = arg('--agent', 'demo-agent');
const approval = process.argv.includes('--approval');
if (!baseUrl) {
  console.error('usage: node client-agents.mjs --base-url URL [--agent ID] [--approval]');
  process.exit(2);
}
const client = new MastraClient({ baseUrl, retries: 0 });
const agent = client.getAgent(agentId);
const checks = {};

function expect(cond, why) {
  if (!cond) throw new Error(why);
}
const short = (v) => JSON.stringify(v)?.slice(0, 300);

async function check(name, fn) {
  const timer = new Promise((_, reject) => setTimeout(() => reject(new Error('timed out after 60 s')), 60_000));
  try {
    checks[name] = { ok: true, detail: await Promise.race([fn(), timer]) };
  } catch (e) {
    checks[name] = { ok: false, error: String(e?.message ?? e).slice(0, 600) };
  }
}

async function chunksOf(response) {
  expect(typeof response.processDataStream === 'function', 'the response has no processDataStream');
  const chunks = [];
  await response.processDataStream({ onChunk: async (c) => { chunks.push(c); } });
  return chunks;
}
const types = (chunks) => [...new Set(chunks.map((c) => c.type))];
const textOf = (chunks) => chunks.filter((c) => c.type === 'text-delta').map((c) => c.payload.text).join('');

await check('listAgents', async () => {
  const agents = await client.listAgents();
  expect(agents[agentId]?.name, `no agent ${agentId} among ${Object.keys(agents)}`);
  return { keys: Object.keys(agents), name: agents[agentId].name, tools: Object.keys(agents[agentId].tools) };
});

await check('details', async () => {
  const d = await agent.details();
  const schema = JSON.parse(d.tools.weather.inputSchema).json;
  expect(schema.properties.city.type === 'string', `weather inputSchema ${short(schema)}`);
  expect(typeof d.instructions === 'string' && d.instructions.length > 0, `instructions ${short(d.instructions)}`);
  return { name: d.name, instructions: d.instructions, weatherSchema: schema, modelId: d.modelId, provider: d.provider };
});

await check('stream', async () => {
  const chunks = await chunksOf(await agent.stream("What's the weather in Paris?"));
  const call = chunks.find((c) => c.type === 'tool-call' && c.payload.toolName === 'weather');
  const result = chunks.find((c) => c.type === 'tool-result' && c.payload.toolName === 'weather');
  expect(call && result, `no weather call and result: ${types(chunks)}`);
  expect(result.payload.result.city === 'Paris', `result ${short(result.payload)}`);
  expect(chunks.at(-1).type === 'finish', `last chunk ${chunks.at(-1).type}`);
  return { types: types(chunks), text: textOf(chunks), runIds: [...new Set(chunks.map((c) => c.runId))].length };
});

await check('generate', async () => {
  const out = await agent.generate('Explain how rainbows form');
  expect(typeof out.text === 'string' && out.text.length > 20, `text ${short(out.text)}`);
  return { finishReason: out.finishReason, text: out.text.slice(0, 80), runId: typeof out.runId };
});

await check('generate with memory', async () => {
  const memory = { thread: `client-thread-${Date.now()}`, resource: 'client-user' };
  const out = await agent.generate('Explain how rainbows form', { memory });
  expect(out.text.length > 0, 'no text');
  return { thread: memory.thread, finishReason: out.finishReason };
});

await check('listTools + tool details + execute', async () => {
  const tools = await client.listTools();
  expect(tools.weather, `no weather tool among ${Object.keys(tools)}`);
  const details = await client.getTool('weather').details();
  const result = await client.getTool('weather').execute({ data: { city: 'Paris' } });
  expect(result.city === 'Paris' && typeof result.temperatureC === 'number', `execute ${short(result)}`);
  const invalid = await client.getTool('weather').execute({ data: {} });
  expect(invalid.error === true && /city/.test(invalid.message), `invalid execute ${short(invalid)}`);
  return { tools: Object.keys(tools), description: details.description, result, invalid: invalid.message.split('\n')[0] };
});

await check('agent.getTool + agent.executeTool', async () => {
  const tool = await agent.getTool('weather');
  const result = await agent.executeTool('weather', { data: { city: 'Oslo' } });
  expect(tool.id === 'weather' && result.city === 'Oslo', `got ${short(tool)} / ${short(result)}`);
  return { id: tool.id, result };
});

await check('unknown agent is a 404', async () => {
  try {
    await client.getAgent('no-such-agent').details();
  } catch (e) {
    expect(e.status === 404, `status ${e.status}`);
    return { status: e.status, body: e.body };
  }
  throw new Error('details() of an unknown agent did not fail');
});

if (approval) {
  const suspendedRun = async (prompt, type) => {
    const chunks = await chunksOf(await agent.stream(prompt));
    const waiting = chunks.find((c) => c.type === type);
    expect(waiting, `no ${type} chunk: ${types(chunks)}`);
    return { runId: waiting.runId, toolCallId: waiting.payload.toolCallId, chunks };
  };

  await check('approveToolCall', async () => {
    const run = await suspendedRun("Book a table at Luigi's for 4", 'tool-call-approval');
    const chunks = await chunksOf(await agent.approveToolCall({ runId: run.runId, toolCallId: run.toolCallId }));
    const result = chunks.find((c) => c.type === 'tool-result' && c.payload.toolName === 'book_table');
    expect(result?.payload.result.people === 4, `no book_table result: ${types(chunks)}`);
    return { runId: run.runId, types: types(chunks), text: textOf(chunks) };
  });

  await check('declineToolCall', async () => {
    const run = await suspendedRun("Book a table at Luigi's for 2", 'tool-call-approval');
    const chunks = await chunksOf(await agent.declineToolCall({ runId: run.runId, toolCallId: run.toolCallId }));
    expect(!chunks.some((c) => c.type === 'tool-result' && c.payload.toolName === 'book_table'), 'the tool ran');
    expect(chunks.some((c) => c.type === 'tool-output-denied' || c.type === 'tool-error' || c.type === 'text-delta'),
      `no answer after the decline: ${types(chunks)}`);
    return { types: types(chunks), text: textOf(chunks) };
  });

  await check('approveToolCallGenerate', async () => {
    const out = await agent.generate("Book a table at Nonna's for 3");
    expect(out.finishReason === 'suspended' && out.runId, `generate finishReason ${out.finishReason}`);
    const toolCallId = out.suspendPayload?.toolCallId;
    const done = await agent.approveToolCallGenerate({ runId: out.runId, toolCallId });
    expect(done.toolResults?.some((r) => r.payload.toolName === 'book_table'), `no book_table result: ${short(done.toolResults)}`);
    return { finishReason: done.finishReason, text: done.text };
  });

  await check('declineToolCallGenerate', async () => {
    const out = await agent.generate("Book a table at Nonna's for 5");
    const done = await agent.declineToolCallGenerate({ runId: out.runId, toolCallId: out.suspendPayload?.toolCallId });
    expect(!done.toolResults?.some((r) => r.payload.toolName === 'book_table'), 'the tool ran');
    return { finishReason: done.finishReason, text: done.text };
  });

  await check('resumeStream', async () => {
    const run = await suspendedRun("Pick a time at Luigi's", 'tool-call-suspended');
    const chunks = await chunksOf(await agent.resumeStream({ time: '19:30' }, { runId: run.runId, toolCallId: run.toolCallId }));
    const result = chunks.find((c) => c.type === 'tool-result' && c.payload.toolName === 'choose_time');
    expect(result?.payload.result.time === '19:30', `no choose_time result: ${types(chunks)}`);
    return { types: types(chunks), text: textOf(chunks) };
  });

  await check('approving another run is refused', async () => {
    try {
      await agent.approveToolCallGenerate({ runId: 'not-a-run', toolCallId: 'x' });
    } catch (e) {
      expect(e.status === 404, `status ${e.status}`);
      return { status: e.status };
    }
    throw new Error('approving an unknown run did not fail');
  });
}

process.stdout.write(JSON.stringify({ checks }));
process.exit(Object.values(checks).every((c) => c.ok) ? 0 : 1);
