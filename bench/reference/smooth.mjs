#!/usr/bin/env node
// The reference for bench/bench_smooth.py: times the real Mastra `smoothStream` (@mastra/core,
// pinned in package.json) on input the Python bench hands it, so both sides time the same chunks
// in the same run. Prints one JSON line.
//
//   node smooth.mjs throughput <input.jsonl> [--cold]
//       Input: Mastra text-delta chunks, one JSON per line. Times word chunking without delay and a
//       no-op TransformStream (the ceiling), each warmed up once on the first 10 % of the input;
//       with --cold, no warm-up: one pass of smoothStream first, as a process's first request.
//   node smooth.mjs no-whitespace 1000,2000,4000
//       One whitespace-free run per size, ASCII "a" and CJK U+6F22, in 4-character deltas, word
//       chunking (Mastra re-runs its word pattern over the whole buffer after each delta).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { smoothStream } from '@mastra/core/stream';

const require = createRequire(import.meta.url);

function versions() {
  return { node: process.version, '@mastra/core': require('@mastra/core/package.json').version };
}

function streamOf(chunks) {
  let next = 0;
  return new ReadableStream({
    pull(controller) {
      if (next < chunks.length) controller.enqueue(chunks[next++]);
      else controller.close();
    },
  });
}

// Seconds to pipe `chunks` through a fresh transform and read everything out; checks the text.
async function time(makeTransform, chunks) {
  const expected = chunks.map(c => c.payload.text).join('');
  const started = performance.now();
  const cpu = process.cpuUsage();
  const reader = streamOf(chunks).pipeThrough(makeTransform()).getReader();
  const texts = [];
  for (let r = await reader.read(); !r.done; r = await reader.read()) texts.push(r.value.payload.text);
  const seconds = (performance.now() - started) / 1000;
  // CPU time of the process (all its threads: the JIT's and the GC's work is the transform's too),
  // what bench_smooth.py compares on a shared machine, where wall time measures the neighbours.
  const used = process.cpuUsage(cpu);
  const cpuSeconds = (used.user + used.system) / 1e6;
  if (texts.join('') !== expected) throw new Error('the transform changed the text');
  return { seconds, cpuSeconds, outputChunks: texts.length };
}

const smoothWord = () => smoothStream({ delayInMs: null, chunking: 'word' });
const passthrough = () => new TransformStream();
const delta = text => ({ type: 'text-delta', runId: 'bench', from: 'AGENT', payload: { id: 'txt-1', text } });

async function throughput(path, cold) {
  const chunks = readFileSync(path, 'utf8').split('\n').filter(Boolean).map(line => JSON.parse(line));
  const warm = chunks.slice(0, Math.ceil(chunks.length / 10));
  const result = { bench: 'smoothStream word chunking, delayInMs null', versions: versions(), inputChunks: chunks.length, cold };
  const order = cold ? [['smoothWord', smoothWord], ['passthrough', passthrough]] : [['passthrough', passthrough], ['smoothWord', smoothWord]];
  for (const [name, make] of order) {
    if (!cold) await time(make, warm);
    const { seconds, cpuSeconds, outputChunks } = await time(make, chunks);
    result[name] = {
      seconds: +seconds.toFixed(4),
      cpuSeconds: +cpuSeconds.toFixed(4),
      outputChunks,
      chunksInPerSec: Math.round(chunks.length / seconds),
      chunksInPerCpuSec: Math.round(chunks.length / cpuSeconds),
    };
  }
  return result;
}

async function noWhitespace(sizes) {
  const rows = [];
  for (const chars of sizes) {
    for (const [text, unit] of [['ascii', 'a'], ['cjk', '\u6f22']]) {
      const whole = unit.repeat(chars);
      const deltas = [];
      for (let i = 0; i < chars; i += 4) deltas.push(delta(whole.slice(i, i + 4)));
      const { seconds, outputChunks } = await time(smoothWord, deltas);
      rows.push({ text, chars, deltas: deltas.length, smoothSeconds: +seconds.toFixed(4), outputChunks });
    }
  }
  return { bench: 'smoothStream word chunking on whitespace-free text', versions: versions(), rows };
}

const [mode, arg, flag] = process.argv.slice(2);
let result;
if (mode === 'throughput' && arg && (flag === undefined || flag === '--cold')) result = await throughput(arg, flag === '--cold');
else if (mode === 'no-whitespace' && /^\d+(,\d+)*$/.test(arg ?? '')) result = await noWhitespace(arg.split(',').map(Number));
else {
  process.stderr.write('usage: node smooth.mjs throughput <input.jsonl> [--cold] | no-whitespace N[,N...]\n');
  process.exit(2);
}
process.stdout.write(`${JSON.stringify(result)}\n`);
