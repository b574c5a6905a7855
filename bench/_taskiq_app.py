"""The Taskiq-over-Redis side of the durable spike (bench/bench_durable.py); not a project dependency."""

from __future__ import annotations

import time

from taskiq_redis import RedisAsyncResultBackend, RedisStreamBroker

broker = RedisStreamBroker("redis://127.0.0.1:56390").with_result_backend(
    RedisAsyncResultBackend("redis://127.0.0.1:56390")
)


@broker.task
async def started_at() -> float:
    return time.time()
