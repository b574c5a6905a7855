"""Stream store backends for the tests: memory, and Redis at `AGENTSTREAM_TEST_REDIS_URL` (default:
the server `scripts/redis.sh` starts). If Redis is unreachable the run ends with one line saying so
(`tests/_services.py`); nothing is skipped."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agentstream.resumable import MemoryStreamStore, RedisStreamStore, StreamStore
from tests.conftest import redis_url

# Defined once in tests/conftest.py; re-exported for test modules that import it from here.
__all__ = ["redis_url"]


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.services("redis"))])
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
