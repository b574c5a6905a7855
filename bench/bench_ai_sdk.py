"""Cost of the AI SDK bridge per chunk: Mastra chunk → UI chunk → SSE frame.

Compared, in the same run, with ``json.dumps`` of the same chunks' wire dicts (the floor any
Python server pays to put a chunk on the wire). Run: ``.venv/bin/python bench/bench_ai_sdk.py``.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from typing import Any

from agentstream.ai_sdk import encode_sse, to_ai_sdk_stream
from agentstream.chunks import chunk_to_dict, decode_chunk

N_DELTAS = 5000
ROUNDS = 7


def make_chunks() -> list[Any]:
    base = {"runId": "run-1", "from": "AGENT"}
    raw: list[dict[str, Any]] = [
        {**base, "type": "start", "payload": {"messageId": "msg-1"}},
        {**base, "type": "step-start", "payload": {"messageId": "msg-1", "request": {}, "warnings": []}},
        {**base, "type": "text-start", "payload": {"id": "t1"}},
    ]
    raw += [
        {**base, "type": "text-delta", "payload": {"id": "t1", "text": f"word{i} "}} for i in range(N_DELTAS)
    ]
    raw += [
        {**base, "type": "text-end", "payload": {"id": "t1"}},
        {
            **base,
            "type": "tool-call",
            "payload": {"toolCallId": "c1", "toolName": "weather", "args": {"city": "Berlin"}},
        },
        {
            **base,
            "type": "tool-result",
            "payload": {"toolCallId": "c1", "toolName": "weather", "result": {"temperature": 21}},
        },
        {
            **base,
            "type": "step-finish",
            "payload": {
                "stepResult": {"reason": "stop"},
                "output": {"usage": {"inputTokens": 1, "outputTokens": 2}},
                "metadata": {},
            },
        },
        {
            **base,
            "type": "finish",
            "payload": {
                "stepResult": {"reason": "stop"},
                "output": {"usage": {"inputTokens": 1, "outputTokens": 2}},
                "metadata": {},
            },
        },
    ]
    return [decode_chunk(r) for r in raw]


async def _source(chunks: list[Any]) -> Any:
    for chunk in chunks:
        yield chunk


async def convert_and_encode(chunks: list[Any]) -> int:
    size = 0
    async for frame in encode_sse(to_ai_sdk_stream(_source(chunks))):
        size += len(frame)
    return size


async def dumps_only(dicts: list[dict[str, Any]]) -> int:
    # Same async iteration overhead, then json.dumps of each chunk's wire dict.
    size = 0
    async for d in _source(dicts):
        size += len(json.dumps(d, separators=(",", ":"), ensure_ascii=False).encode())
    return size


def best(fn: Any, arg: Any) -> float:
    times = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        asyncio.run(fn(arg))
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def main() -> int:
    chunks = make_chunks()
    dicts = [chunk_to_dict(c) for c in chunks]
    n = len(chunks)
    conv_best, conv_med = best(convert_and_encode, chunks)
    dump_best, dump_med = best(dumps_only, dicts)
    print(f"chunks per run: {n} ({N_DELTAS} text-deltas), best of {ROUNDS} rounds")
    print(
        f"to_ai_sdk_stream + encode_sse : {conv_best / n * 1e6:6.2f} µs/chunk (median {conv_med / n * 1e6:.2f})"
    )
    print(
        f"json.dumps of the wire dicts  : {dump_best / n * 1e6:6.2f} µs/chunk (median {dump_med / n * 1e6:.2f})"
    )
    print(f"ratio (bridge / json.dumps)   : {conv_best / dump_best:6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
