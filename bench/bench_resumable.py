"""First-chunk latency of a chat response: recorded in Redis vs in this process, same run.

One ``chat_route`` request at a time, driven as a direct ASGI call (no HTTP, so only the server's
own path is measured): the time from calling the app to the first SSE frame it sends, and to the
end of the response. Modes: ``none`` (no stream store: the response reads the run directly, the
reference), ``memory`` (`MemoryStreamStore`: the run is recorded and the response follows the
record in this process) and ``redis`` (`RedisStreamStore` on loopback: every chunk is an
``XADD`` and the response a blocking ``XREAD``). The model answers at once (40 text deltas), so
the figures are the overhead itself. The modes alternate, ``ROUNDS`` × ``REQUESTS`` each; medians
are printed with the ratio to ``none``. Redis: ``$AGENTSTREAM_BENCH_REDIS_URL`` (default the
test server of ``scripts/redis.sh``). Run: ``.venv/bin/python bench/bench_resumable.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
import uuid
from typing import Any

from starlette.applications import Starlette

from agentstream._mastra import Mastra
from agentstream.agent import Agent
from agentstream.resumable import MemoryStreamStore, RedisStreamStore, StreamStore
from agentstream.server import chat_route
from agentstream.testing import ScriptedModel

REQUESTS = 50
ROUNDS = 5
DELTAS = 40
USAGE = {"inputTokens": 3, "outputTokens": DELTAS, "totalTokens": 3 + DELTAS}
STEP = [
    {"type": "stream-start", "warnings": []},
    {"type": "text-start", "id": "t"},
    *({"type": "text-delta", "id": "t", "delta": f"w{i} "} for i in range(DELTAS)),
    {"type": "text-end", "id": "t"},
    {"type": "finish", "finishReason": "stop", "usage": USAGE},
]


class Model:
    """A fresh scripted step per call (a ScriptedModel plays each step once)."""

    specification_version = "v2"
    provider = "bench"
    model_id = "instant"

    def do_stream(self, options: Any) -> Any:
        return ScriptedModel([STEP]).do_stream(options)


def app(store: StreamStore | None) -> Starlette:
    mastra = Mastra(agents={"a": Agent(id="a", instructions="x", model=Model())})
    return Starlette(routes=[chat_route(mastra, "/api/chat", agent="a", heartbeat_ms=0, stream_store=store)])


async def one(asgi: Starlette) -> tuple[float, float]:
    body = json.dumps(
        {
            "id": uuid.uuid4().hex,
            "messages": [{"id": "u", "role": "user", "parts": [{"type": "text", "text": "hi"}]}],
        }
    ).encode()
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": "/api/chat", "raw_path": b"/api/chat", "query_string": b"", "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")],
        "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80),
    }  # fmt: skip
    sent = False
    finished = asyncio.Event()
    first = 0.0

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await finished.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal first
        if message["type"] == "http.response.body" and message.get("body") and not first:
            first = time.perf_counter()
        if message["type"] == "http.response.body" and not message.get("more_body"):
            finished.set()

    start = time.perf_counter()
    await asyncio.wait_for(asgi(scope, receive, send), 30)
    return first - start, time.perf_counter() - start


async def main() -> None:
    url = os.environ.get("AGENTSTREAM_BENCH_REDIS_URL", "redis://127.0.0.1:56379/0")
    redis = RedisStreamStore.from_url(url, prefix=f"bench-{uuid.uuid4().hex}")
    try:
        await redis.redis.ping()
    except Exception as exc:
        sys.exit(f"bench_resumable: Redis unreachable at {url} ({exc}); run scripts/redis.sh")
    apps = {"none": app(None), "memory": app(MemoryStreamStore()), "redis": app(redis)}
    firsts: dict[str, list[float]] = {name: [] for name in apps}
    totals: dict[str, list[float]] = {name: [] for name in apps}
    for asgi in apps.values():  # warm-up
        for _ in range(10):
            await one(asgi)
    for _ in range(ROUNDS):
        for name, asgi in apps.items():
            for _ in range(REQUESTS):
                first, total = await one(asgi)
                firsts[name].append(first)
                totals[name].append(total)
    reference_first = statistics.median(firsts["none"])
    reference_total = statistics.median(totals["none"])
    print(f"chat_route, {DELTAS} text deltas, {ROUNDS * REQUESTS} requests per mode (medians)")
    print(f"{'mode':<8} {'first frame':>12} {'vs none':>8} {'whole answer':>13} {'vs none':>8}")
    for name in apps:
        first = statistics.median(firsts[name])
        total = statistics.median(totals[name])
        print(
            f"{name:<8} {first * 1e3:9.3f} ms {first / reference_first:7.2f}x"
            f" {total * 1e3:10.3f} ms {total / reference_total:7.2f}x"
        )
    added = statistics.median(firsts["redis"]) - statistics.median(firsts["memory"])
    print(f"added first-frame latency of the Redis path vs in-process (memory): {added * 1e3:.3f} ms")
    await redis.aclose()


if __name__ == "__main__":
    asyncio.run(main())
