#!/usr/bin/env node
// The observability routes driven by the REAL @mastra/client-js: after a chat (generate) and a
// workflow run, listTraces / getTraces (legacy) / listTracesLight find them, getTrace and
// getTraceLight read a trace's spans, getSpan one span, queryTraces pages them as Studio does.
//
//   node flows-observability.mjs --base-url http://127.0.0.1:PORT [--token T --other-token U]
//
// Prints "PASS (n) …" / "FAIL (n) …" lines, then "RESULT p/t"; exit 0 when all passed.
import { arg, check, clientFor, expect, report, short } from './flows-common.mjs';

const baseUrl = arg('--base-url');
const token = arg('--token');
const otherToken = arg('--other-token');
const agentId = arg('--agent', 'demo');
const client = (t = token) => clientFor(baseUrl, t);

const nonce = Math.random().toString(36).slice(2, 8);
await client().getAgent(agentId).generate("What's the weather in Paris?", { memory: { thread: `obs-${nonce}`, resource: token ? 'alice' : `obs-user-${nonce}` } });
const run = await client().getWorkflow('publish-article').createRun();
await run.startAsync({ inputData: { topic: `obs ${nonce}` } });

let agentTrace;
await check(1, 'listTraces / getTraces / listTracesLight find the agent run and the workflow run', async () => {
  const all = await client().listTraces({ pagination: { page: 0, perPage: 50 } });
  expect(Array.isArray(all.spans) && all.pagination?.total >= 2, `listTraces: ${short(all)}`);
  const agent = all.spans.find((s) => s.spanType === 'agent_run' && s.parentSpanId == null);
  const workflow = all.spans.find((s) => s.spanType === 'workflow_run' && s.runId === run.runId);
  expect(agent && agent.status === 'success', `no agent_run root: ${short(all.spans.map((s) => s.name))}`);
  expect(workflow, `no workflow_run root for run ${run.runId}`);
  agentTrace = agent.traceId;
  const legacy = await client().getTraces({ pagination: { page: 0, perPage: 10 }, filters: { entityType: 'agent', entityId: agent.entityId } });
  expect(legacy.spans.every((s) => s.entityType === 'agent') && legacy.spans.some((s) => s.traceId === agentTrace), `getTraces: ${short(legacy)}`);
  const light = await client().listTracesLight({ filters: { spanType: 'workflow_run' } });
  expect(light.spans.length >= 1 && light.spans.every((s) => s.spanType === 'workflow_run' && s.attributes === undefined), `light: ${short(light)}`);
  return `${all.pagination.total} trace(s)`;
});

await check(2, 'getTrace, getTraceLight and getSpan read the agent trace (run, model calls, the weather tool call)', async () => {
  expect(agentTrace, 'no agent trace');
  const trace = await client().getTrace(agentTrace);
  const kinds = trace.spans.map((s) => s.spanType);
  for (const kind of ['agent_run', 'model_generation', 'tool_call']) expect(kinds.includes(kind), `no ${kind} in ${kinds}`);
  const tool = trace.spans.find((s) => s.spanType === 'tool_call');
  expect(tool.entityId === 'weather' && tool.output?.city === 'Paris', `tool span ${short(tool)}`);
  const root = trace.spans.find((s) => s.parentSpanId == null);
  expect(trace.spans.every((s) => s === root || trace.spans.some((p) => p.spanId === s.parentSpanId)), 'a span has no parent in the trace');
  const light = await client().getTraceLight(agentTrace);
  expect(light.spans.length === trace.spans.length, `light has ${light.spans.length} of ${trace.spans.length}`);
  const { span } = await client().getSpan(agentTrace, tool.spanId);
  expect(span.spanId === tool.spanId && span.name === tool.name, `getSpan ${short(span)}`);
  return `${trace.spans.length} spans (${[...new Set(kinds)]})`;
});

await check(3, 'queryTraces pages the traces as Studio does (cursor)', async () => {
  const timeRange = { from: new Date(Date.now() - 3600e3).toISOString(), to: new Date(Date.now() + 60e3).toISOString() };
  const first = await client().queryTraces({ timeRange, orderBy: [{ field: 'startedAt', direction: 'desc' }], page: { limit: 1, after: null } });
  expect(first.traces?.length === 1 && first.page?.next, `first page ${short(first)}`);
  const second = await client().queryTraces({ timeRange, page: { limit: 1, after: first.page.next } });
  expect(second.traces.length === 1 && second.traces[0].traceId !== first.traces[0].traceId, `second page ${short(second)}`);
  return `${first.traces[0].name}, then ${second.traces[0].name}`;
});

if (otherToken) {
  await check(4, 'another user sees none of these traces', async () => {
    const theirs = await client(otherToken).listTraces({});
    expect(!theirs.spans.some((s) => s.traceId === agentTrace), 'the trace is in their list');
    let status;
    try {
      await client(otherToken).getTrace(agentTrace);
    } catch (e) {
      status = e.status;
    }
    expect(status === 404, `getTrace answered ${status ?? 'success'}`);
    return '404';
  });
}

report();
