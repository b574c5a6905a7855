#!/usr/bin/env node
// The real Mastra stack serving one agent, for bench/bench_serve.py to measure side by side with
// `agentstream serve`: createNodeServer from @mastra/deployer/server (Hono + @mastra/server's
// handlers, what `mastra dev` / `mastra build` run) around a Mastra from @mastra/core, default
// configuration (no storage, no memory). Only the model is scripted: a LanguageModelV2 streaming
// the same TOKENS text-deltas on every call as bench_serve.py's TokenModel.
//
//   node mastra-chat-server.mjs --port N --tokens T [--smooth]
//
// --smooth: the agent's answers go through Mastra's own smoothStream (word chunking, 10 ms delay,
// as `agentstream serve` smooths by default), a transform factory in the agent's default
// experimentalTransform (Mastra 1.71 iterates it: a list of factories): a
// like-for-like reference for our paced default, which Mastra's default configuration does not pace.
//
// Run from a directory under .cache/mastra-server (bench_serve.py copies it there), so its
// imports resolve from the packages scripts/mastra-clients.sh installed.
import { Mastra } from '@mastra/core';
import { Agent } from '@mastra/core/agent';
import { smoothStream } from '@mastra/core/stream';
import { createNodeServer } from '@mastra/deployer/server';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const port = Number(arg('--port', 4111));
const tokens = Number(arg('--tokens', 300));
const TOKENS = Array.from({ length: tokens }, (_, i) => `tok${i} `);

const model = {
  specificationVersion: 'v2',
  provider: 'bench',
  modelId: `tokens-${tokens}`,
  supportedUrls: {},
  async doGenerate() {
    throw new Error('bench model: stream only');
  },
  async doStream() {
    const parts = [
      { type: 'stream-start', warnings: [] },
      { type: 'text-start', id: 't1' },
      ...TOKENS.map((delta) => ({ type: 'text-delta', id: 't1', delta })),
      { type: 'text-end', id: 't1' },
      { type: 'finish', finishReason: 'stop', usage: { inputTokens: 8, outputTokens: tokens, totalTokens: 8 + tokens } },
    ];
    let k = 0;
    const stream = new ReadableStream({
      pull(controller) {
        if (k < parts.length) controller.enqueue(parts[k++]);
        else controller.close();
      },
    });
    return { stream };
  },
};

const smooth = process.argv.includes('--smooth');
const defaultOptions = smooth ? { experimentalTransform: [() => smoothStream({ delayInMs: 10, chunking: 'word' })] } : undefined;
const bench = new Agent({ id: 'bench', name: 'bench', instructions: 'Be brief.', model, defaultOptions });
const mastra = new Mastra({ agents: { bench }, logger: false, server: { port, host: '127.0.0.1' } });
await createNodeServer(mastra, { studio: false, isDev: false });
process.stdout.write(`mastra bench server on http://127.0.0.1:${port}/api\n`);
