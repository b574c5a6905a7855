"""Chunk encode/decode throughput on a realistic mix, against json.dumps/json.loads of the same dicts.

Run: ``make bench`` or ``.venv/bin/python bench/bench_chunks.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _util import best_of, row

from agentstream.chunks import chunk_to_dict, decode_chunk, encode_chunk


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


def main() -> None:
    n = 100_000
    dicts = realistic_mix(n)
    chunks = [decode_chunk(d) for d in dicts]
    encoded = [encode_chunk(c) for c in chunks]
    texts = [json.dumps(d) for d in dicts]
    assert all(json.loads(e) == d for e, d in zip(encoded, dicts, strict=True))

    t_dumps = best_of(lambda: [json.dumps(d) for d in dicts])
    t_encode = best_of(lambda: [encode_chunk(c) for c in chunks])
    t_to_dict = best_of(lambda: [chunk_to_dict(c) for c in chunks])
    t_loads = best_of(lambda: [json.loads(t) for t in texts])
    t_decode = best_of(lambda: [decode_chunk(b) for b in encoded])
    print(f"chunk codec, realistic mix of {n:,} chunks (best of 5); ratio = reference time / ours")
    print(row("json.dumps(dict)  [reference for encode]", n, t_dumps))
    print(row("encode_chunk(chunk) -> bytes", n, t_encode, t_dumps))
    print(row("chunk_to_dict(chunk)", n, t_to_dict, t_dumps))
    print(row("json.loads(str)   [reference for decode]", n, t_loads))
    print(row("decode_chunk(bytes) -> typed chunk", n, t_decode, t_loads))


if __name__ == "__main__":
    main()
