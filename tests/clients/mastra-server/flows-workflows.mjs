#!/usr/bin/env node
// The workflow routes driven by the REAL @mastra/client-js: Workflow (details, getSchema, runs,
// runById, deleteRunById, createRun) and Run (stream, resumeStream, startAsync, resumeAsync,
// start, resume, observe, cancel) against the demo app's `publish-article` workflow
// (gather -> brief -> writer -> approve, which suspends -> publish).
//
//   node flows-workflows.mjs --base-url http://127.0.0.1:PORT [--token T --other-token U]
//
// Prints "PASS (n) what: detail" / "FAIL (n) what: why" per check, then "RESULT p/t"; exit 0 when all
// passed. With --token the client sends `Authorization: Bearer T`; --other-token is a second user,
// who must not see the first one's runs.
import { arg, check, clientFor, expect, report, short } from './flows-common.mjs';

const baseUrl = arg('--base-url');
const token = arg('--token');
const otherToken = arg('--other-token');
const WORKFLOW = arg('--workflow', 'publish-article');
const client = (t = token) => clientFor(baseUrl, t);
async function readAll(stream) {
  const out = [];
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return out;
    out.push(value);
  }
}
const types = (chunks) => [...new Set(chunks.map((c) => c?.type))].join(',');
const finishOf = (chunks) => chunks.find((c) => c?.type === 'workflow-finish')?.payload?.workflowStatus;
const topic = `tides-${Math.random().toString(36).slice(2, 8)}`;

let streamedRunId;

await check(1, 'details(): steps with schemas, stepGraph, getSchema() parses the input schema', async () => {
  const wf = client().getWorkflow(WORKFLOW);
  const d = await wf.details();
  const steps = Object.keys(d.steps ?? {});
  for (const s of ['gather', 'approve', 'publish']) expect(steps.includes(s), `no step ${s} in [${steps}]`);
  expect(Array.isArray(d.stepGraph) && d.stepGraph.length >= 4, `stepGraph ${short(d.stepGraph)}`);
  expect(d.steps.approve.resumeSchema, 'approve has no resumeSchema');
  const { inputSchema } = await wf.getSchema();
  expect(inputSchema?.properties?.topic, `getSchema().inputSchema ${short(inputSchema)}`);
  return `steps [${steps}], ${d.stepGraph.length} graph nodes`;
});

await check(2, 'createRun + run.stream suspends at approve; resumeStream finishes; runById has the result', async () => {
  const wf = client().getWorkflow(WORKFLOW);
  const run = await wf.createRun();
  streamedRunId = run.runId;
  const first = await readAll(await run.stream({ inputData: { topic } }));
  const suspended = first.find((c) => c?.type === 'workflow-step-suspended');
  expect(suspended?.payload?.id === 'approve', `no suspension at approve (types ${types(first)})`);
  expect(finishOf(first) === 'suspended', `first leg ended ${finishOf(first)}`);
  const mid = await wf.runById(run.runId);
  expect(mid.status === 'suspended' && mid.steps?.approve?.status === 'suspended', `runById mid-run: ${short(mid.status)}`);
  const second = await readAll(await run.resumeStream({ step: 'approve', resumeData: { approved: true, note: 'ok' } }));
  expect(finishOf(second) === 'success', `resumed leg ended ${finishOf(second)} (types ${types(second)})`);
  expect(second.some((c) => c?.type === 'workflow-step-result' && c.payload?.id === 'publish'), 'no publish result');
  const done = await wf.runById(run.runId, { fields: ['result'] });
  expect(done.status === 'success' && done.result?.published === true && done.result?.topic === topic, `runById: ${short(done)}`);
  return `${first.length} + ${second.length} chunks; result ${short(done.result)}`;
});

await check(3, 'runs() lists the run (total, snapshot with context and status) and filters by status', async () => {
  const wf = client().getWorkflow(WORKFLOW);
  const all = await wf.runs();
  expect(typeof all.total === 'number' && Array.isArray(all.runs), `runs(): ${short(all)}`);
  const mine = all.runs.find((r) => r.runId === streamedRunId);
  expect(mine, `run ${streamedRunId} not among ${all.runs.length}`);
  expect(mine.snapshot?.status === 'success' && mine.snapshot?.context?.input?.topic === topic, `snapshot ${short(mine.snapshot)}`);
  const page = await wf.runs({ status: 'success', perPage: 1, page: 0 });
  expect(page.runs.length === 1 && page.runs[0].snapshot.status === 'success', `paged: ${short(page)}`);
  return `${all.total} run(s)`;
});

await check(4, 'startAsync suspends; resumeAsync with bad resumeData is a 400 naming the field; good one succeeds', async () => {
  const wf = client().getWorkflow(WORKFLOW);
  const run = await wf.createRun();
  const started = await run.startAsync({ inputData: { topic } });
  expect(started.status === 'suspended' && JSON.stringify(started.suspended) === '[["approve"]]', `startAsync: ${short(started)}`);
  let refused;
  try {
    await run.resumeAsync({ step: 'approve', resumeData: { approved: 'yes' } });
  } catch (e) {
    refused = e;
  }
  expect(refused?.status === 400, `bad resumeData answered ${refused?.status ?? 'success'}`);
  expect(refused.body?.issues?.[0]?.field === 'resumeData.approved', `issues ${short(refused.body)}`);
  const resumed = await run.resumeAsync({ step: 'approve', resumeData: { approved: false, note: 'later' } });
  expect(resumed.status === 'success' && resumed.result?.published === false, `resumeAsync: ${short(resumed)}`);
  return `400 ${short(refused.body?.error, 90)}`;
});

await check(5, 'start (fire and forget) then observe() replays the running leg; cancel() a suspended run', async () => {
  const wf = client().getWorkflow(WORKFLOW);
  const run = await wf.createRun();
  const started = await run.start({ inputData: { topic } });
  expect(started.message === 'Workflow run started', `start: ${short(started)}`);
  const observed = await readAll(await run.observe());
  expect(observed[0]?.type === 'workflow-start', `observe began with ${observed[0]?.type} (types ${types(observed)})`);
  expect(finishOf(observed) === 'suspended', `observed leg ended ${finishOf(observed)}`);
  const cancelled = await run.cancel();
  expect(/cancel/i.test(cancelled.message), `cancel: ${short(cancelled)}`);
  const after = await wf.runById(run.runId);
  expect(after.status === 'canceled', `status after cancel ${after.status}`);
  const deleted = await wf.deleteRunById(run.runId);
  expect(/deleted/i.test(deleted.message), `deleteRunById: ${short(deleted)}`);
  return `observed ${observed.length} chunks`;
});

if (otherToken) {
  await check(6, 'another user sees none of these runs (404, empty list)', async () => {
    const wf = client(otherToken).getWorkflow(WORKFLOW);
    let status;
    try {
      await wf.runById(streamedRunId);
    } catch (e) {
      status = e.status;
    }
    expect(status === 404, `runById of another user's run answered ${status ?? 'success'}`);
    const theirs = await wf.runs();
    expect(!theirs.runs.some((r) => r.runId === streamedRunId), 'the run is in their list');
    return `404; their list has ${theirs.total}`;
  });
}

report();
