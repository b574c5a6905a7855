#!/usr/bin/env node
// Serves the built useChat page (web/dist) and forwards /api/chat[/...] to a backend, streaming the
// answer through unbuffered (the page and the API then share an origin, as in a real deployment).
//
//   node web/serve.mjs --backend http://127.0.0.1:8000/api/chat [--port 5173]
//
// POST /api/chat goes to the backend URL itself; /api/chat/<rest> to <backend>/<rest>; the query
// string is kept. A backend URL without a path means <backend>/api/chat.
import { createReadStream, existsSync, statSync } from 'node:fs';
import http from 'node:http';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const DIST = fileURLToPath(new URL('./dist', import.meta.url));
const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml' };

function backendFor(backend, requestUrl) {
  const base = new URL(backend);
  if (base.pathname === '/' || base.pathname === '') base.pathname = '/api/chat';
  const incoming = new URL(requestUrl, 'http://page.invalid');
  const target = new URL(base);
  target.pathname = base.pathname.replace(/\/$/, '') + incoming.pathname.slice('/api/chat'.length);
  incoming.searchParams.forEach((value, key) => target.searchParams.append(key, value));
  return target;
}

function forward(req, res, backend, log) {
  const target = backendFor(backend, req.url);
  const headers = { ...req.headers, host: target.host };
  delete headers['accept-encoding']; // compressed answers arrive in lumps
  const upstream = http.request(target, { method: req.method, headers }, answer => {
    log(`${req.method} ${req.url} -> ${target.href} ${answer.statusCode}`);
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    res.flushHeaders();
    answer.on('data', bytes => res.write(bytes));
    answer.on('end', () => res.end());
    answer.on('error', () => res.destroy());
  });
  upstream.on('error', err => {
    log(`${req.method} ${req.url} -> ${target.href} failed: ${err.message}`);
    if (res.headersSent) res.destroy(err);
    else res.writeHead(502, { 'content-type': 'text/plain' }).end(`backend ${target.href} unreachable: ${err.message}`);
  });
  res.on('close', () => upstream.destroy()); // the browser went away: so does the backend request
  req.pipe(upstream);
}

function staticFile(req, res) {
  const path = decodeURIComponent(new URL(req.url, 'http://page.invalid').pathname);
  let file = normalize(join(DIST, path));
  if (file !== DIST && !file.startsWith(DIST + sep)) return res.writeHead(403).end();
  if (!existsSync(file) || statSync(file).isDirectory()) file = join(DIST, 'index.html');
  if (!existsSync(file)) return res.writeHead(500, { 'content-type': 'text/plain' }).end('web/dist is missing: run `npm run build`');
  res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store' });
  createReadStream(file).pipe(res);
}

/** Listen on 127.0.0.1 (port 0: any free one); resolves to { server, url }. */
export function servePage({ backend, port = 0, log = () => {} }) {
  new URL(backend); // throws on a malformed URL before anything listens
  const server = http.createServer((req, res) => {
    const path = req.url.split('?')[0];
    if (path === '/api/chat' || path.startsWith('/api/chat/')) forward(req, res, backend, log);
    else staticFile(req, res);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${server.address().port}/` }));
  });
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { backend: { type: 'string' }, port: { type: 'string', default: '5173' } } });
  if (!values.backend) {
    process.stderr.write('usage: node web/serve.mjs --backend <chat-url> [--port 5173]\n');
    process.exit(2);
  }
  const { url, server } = await servePage({ backend: values.backend, port: Number(values.port), log: line => process.stderr.write(`serve: ${line}\n`) });
  process.stderr.write(`serve: page at ${url}, /api/chat -> ${values.backend}\n`);
  const close = () => server.close(() => process.exit(0)) && server.closeAllConnections();
  process.on('SIGINT', close);
  process.on('SIGTERM', close);
}
