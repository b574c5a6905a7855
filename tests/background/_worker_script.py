"""Child process for test_restart.py: dispatch background tasks, signal, then wait (to be killed).

python -m tests.background._worker_script <sqlite-path | postgresql://...#schema> <scenario> <marker-dir>

Leases are short (`LEASE`: 3 s, renewed every 0.2 s, so a worker starved for under 2.8 s on a busy
machine keeps them) and the tests wait seconds, not minutes.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from agentstream.background import BackgroundTaskContext, BackgroundTaskManager
from agentstream.storage import BaseStore, SQLiteStore

LEASE: dict[str, Any] = {"lease_ms": 3000, "heartbeat_interval_ms": 200}


def open_store(target: str) -> BaseStore:
    if target.startswith("postgresql://"):
        from agentstream.storage import PostgresStore

        dsn, _, schema = target.partition("#")
        return PostgresStore(dsn, schema=schema)
    return SQLiteStore(target)


async def main(target: str, scenario: str, marker_dir: str) -> None:
    markers = Path(marker_dir)

    async def slow(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        (markers / f"started-{args['n']}").write_text(ctx.task_id)
        while not (markers / "release").exists():
            await asyncio.sleep(0.02)
        return {"n": args["n"], "by": "worker"}

    async def approval(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        await ctx.suspend({"question": "ok?", "n": args["n"]})

    store = open_store(target)
    config = {**LEASE, "global_concurrency": 2}
    manager = BackgroundTaskManager(store, config, tools={"slow": slow, "approval": approval})
    await manager.start()
    (markers / "owner").write_text(manager.owner_id)
    if scenario == "running":
        # c0 has no retries (a killed run fails), c1..c2 have one; c3..c4 wait in the queue (pending)
        for n, retries in enumerate((0, 1, 1, 1, 0)):
            await manager.dispatch(
                "slow", {"n": n}, tool_call_id=f"c{n}", agent_id="a", run_id="r", max_retries=retries
            )
    elif scenario == "suspend":
        task = await manager.dispatch("approval", {"n": 7}, tool_call_id="c7", agent_id="a", run_id="r")
        while (await manager.get_task(task.id)).status != "suspended":
            await asyncio.sleep(0.01)
        (markers / "suspended").write_text(task.id)
    (markers / "ready").write_text("1")
    await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
