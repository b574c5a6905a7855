// What every flows-*.mjs script shares: its arguments, a client per bearer token, the numbered
// checks ("PASS (n) …" / "FAIL (n) …", each with a time limit) and the closing "RESULT p/t" line
// with the exit code (0 when all passed).
import { MastraClient } from '@mastra/client-js';

/** The value after ``--name`` on the command line, or ``fallback``. */
export const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
};

/** A REAL @mastra/client-js client on ``baseUrl``, sending ``Bearer token`` when one is given. */
export const clientFor = (baseUrl, token) =>
  new MastraClient({ baseUrl, retries: 0, headers: token ? { authorization: `Bearer ${token}` } : {} });

/** ``v`` as one line of at most ``n`` characters (JSON unless a string). */
export const short = (v, n = 200) => {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return (s ?? String(v)).length > n ? `${s.slice(0, n)}…` : s;
};

export class CheckFailed extends Error {}
export const expect = (cond, why) => { if (!cond) throw new CheckFailed(why); };

let passed = 0;
let total = 0;

/** Check ``n``: ``fn()`` must settle within ``limitMs``; its answer is the PASS line's detail. */
export async function check(n, what, fn, { limitMs = 90_000 } = {}) {
  total += 1;
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${limitMs / 1000} s`)), limitMs);
  });
  try {
    const detail = await Promise.race([fn(), limit]);
    passed += 1;
    console.log(`PASS (${n}) ${what}${detail ? `: ${short(detail, 300)}` : ''}`);
  } catch (e) {
    console.log(`FAIL (${n}) ${what}: ${short(e?.message ?? e, 600)}`);
  } finally {
    clearTimeout(timer);
  }
}

/** The last line, and the exit: 0 when every check passed. */
export function report() {
  console.log(`RESULT ${passed}/${total}`);
  process.exit(passed === total ? 0 : 1);
}
