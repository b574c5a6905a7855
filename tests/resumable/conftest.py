"""Stream store backends for the tests: memory, and Redis at `AGENTSTREAM_TEST_REDIS_URL` (default:
the server `scripts/redis.sh` starts). If Redis is unreachable its cases are skipped, unless `CI` is
set, in which case they fail."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agentstream.resumable import MemoryStreamStore, RedisStreamStore, StreamStore

DEFAULT_REDIS_URL = "redis://127.0.0.1:56379/0"


@pytest.fixture(scope="session")
def redis_url() -> str:
    url = os.environ.get("AGENTSTREAM_TEST_REDIS_URL", DEFAULT_REDIS_URL)
    try:
        import redis
    except ImportError as exc:  # pragma: no cover
        reason = f"redis-py not installed ({exc}); pip install -e '.[dev]'"
    else:
        try:
            redis.Redis.from_url(url, socket_connect_timeout=3).ping()
            return url
        except Exception as exc:
            reason = f"Redis unreachable at {url} ({type(exc).__name__}: {exc}); run scripts/redis.sh"
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[StreamStore]:
    made: Any
    if request.param == "memory":
        made = MemoryStreamStore()
    else:
        url = request.getfixturevalue("redis_url")
        # A fresh prefix per test: tests never see each other's keys, and short blocks keep them quick.
        made = RedisStreamStore.from_url(url, prefix=f"test-{uuid.uuid4().hex}", block_ms=50)
    try:
        yield made
    finally:
        await made.aclose()
