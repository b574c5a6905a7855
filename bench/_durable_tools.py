"""The tool the durable bench's worker processes run: returns the wall clock when it started."""

from __future__ import annotations

import time
from typing import Any


async def started_at(args: dict[str, Any], context: Any) -> float:
    return time.time()


tools = {"started_at": started_at}
