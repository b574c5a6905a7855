"""Chunk encode/decode throughput on a realistic mix, against json.dumps/json.loads of the same dicts.

Run: ``make bench`` or ``.venv/bin/python bench/bench_chunks.py [--cold]``.

Decoding is timed two ways, each against ``json.loads(str)`` timed the same way in the same run:

* streaming: decode, look at the chunk, drop it (what the resume route, the store reader and the
  ``to-ui``/``smooth`` pipes do);
* retained: every decoded chunk kept in one list (a batch load), with the fixture frozen out of the
  garbage collector so that only the decoded objects are measured.

``--cold``: one pass of each, no warm-up and no best-of, as a process's first request sees it.
Goal (issue 29): ``decode_chunk(bytes)`` >= 2x ``json.loads``.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _util import best_of, row

from agentstream.chunks import chunk_from_dict, chunk_to_dict, decode_chunk, encode_chunk


def realistic_mix(n: int) -> list[dict[str, Any]]:
    """Mostly text deltas, with reasoning, tool calls/results and step framing, as an agent emits."""
    base = {"runId": "run-1", "from": "AGENT"}
    out: list[dict[str, Any]] = []
    i = 0
    while len(out) < n:
        out.append(
            {
                "type": "step-start",
                **base,
                "payload": {"request": {"body": "{}"}, "messageId": "m1", "warnings": []},
            }
        )
        for k in range(8):
            out.append({"type": "reasoning-delta", **base, "payload": {"id": "r1", "text": f"think {k} "}})
        for k in range(60):
            out.append({"type": "text-delta", **base, "payload": {"id": "t1", "text": f"word{k} "}})
        out.append(
            {
                "type": "tool-call",
                **base,
                "payload": {"toolCallId": f"c{i}", "toolName": "weather", "args": {"city": "Paris"}},
            }
        )
        out.append(
            {
                "type": "tool-result",
                **base,
                "payload": {"toolCallId": f"c{i}", "toolName": "weather", "result": {"t": 21, "ok": True}},
            }
        )
        out.append(
            {
                "type": "step-finish",
                **base,
                "payload": {
                    "stepResult": {"reason": "stop"},
                    "output": {"usage": {"inputTokens": 1}},
                    "metadata": {},
                },
            }
        )
        i += 1
    return out[:n]


def _stream(decode: Any, items: list[Any]) -> None:
    for item in items:
        decode(item)


def _timer(cold: bool) -> Any:
    if not cold:
        return best_of

    def once(fn: Any) -> float:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start

    return once


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cold", action="store_true", help="one pass each, no warm-up")
    args = parser.parse_args()
    n = 100_000
    dicts = realistic_mix(n)
    chunks = [chunk_from_dict(d) for d in dicts]
    texts = [json.dumps(d) for d in dicts]
    encoded = [json.dumps(d, separators=(",", ":")).encode() for d in dicts]
    gc.collect()
    gc.freeze()  # the fixture is not what is measured
    timer = _timer(args.cold)
    if args.cold:  # decode first, before anything warmed the decoders
        t_loads_stream = timer(lambda: _stream(json.loads, texts))
        t_decode_stream = timer(lambda: _stream(decode_chunk, encoded))
    assert all(json.loads(encode_chunk(c)) == d for c, d in zip(chunks, dicts, strict=True))
    assert all(decode_chunk(b) == c for b, c in zip(encoded, chunks, strict=True))
    if not args.cold:
        t_loads_stream = timer(lambda: _stream(json.loads, texts))
        t_decode_stream = timer(lambda: _stream(decode_chunk, encoded))
    t_loads = timer(lambda: [json.loads(t) for t in texts])
    t_decode = timer(lambda: [decode_chunk(b) for b in encoded])
    t_dumps = timer(lambda: [json.dumps(d) for d in dicts])
    t_encode = timer(lambda: [encode_chunk(c) for c in chunks])
    t_to_dict = timer(lambda: [chunk_to_dict(c) for c in chunks])
    how = "one cold pass" if args.cold else "best of 5"
    print(f"chunk codec, realistic mix of {n:,} chunks ({how}); ratio = reference time / ours")
    print(row("json.dumps(dict)  [reference for encode]", n, t_dumps))
    print(row("encode_chunk(chunk) -> bytes", n, t_encode, t_dumps))
    print(row("chunk_to_dict(chunk)", n, t_to_dict, t_dumps))
    print(row("json.loads(str), streaming  [reference]", n, t_loads_stream))
    print(row("decode_chunk(bytes), streaming", n, t_decode_stream, t_loads_stream))
    print(row("json.loads(str), retained   [reference]", n, t_loads))
    print(row("decode_chunk(bytes), retained", n, t_decode, t_loads))


if __name__ == "__main__":
    main()
