"""Child process for test_restart.py: dispatch background tasks, signal, then wait to be killed.

python _worker_script.py <sqlite-path | postgresql://...#schema> <scenario> <marker-dir>
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from agentstream.background import BackgroundTaskContext, BackgroundTaskManager
from agentstream.storage import BaseStore, SQLiteStore


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
        await asyncio.sleep(3600)

    async def approval(args: dict[str, Any], ctx: BackgroundTaskContext) -> Any:
        await ctx.suspend({"question": "ok?", "n": args["n"]})

    store = open_store(target)
    manager = BackgroundTaskManager(store, tools={"slow": slow, "approval": approval})
    await manager.start()
    if scenario == "running":
        await manager.dispatch("slow", {"n": 0}, tool_call_id="c0", agent_id="a", run_id="r")
        await manager.dispatch("slow", {"n": 1}, tool_call_id="c1", agent_id="a", run_id="r", max_retries=1)
    elif scenario == "suspend":
        task = await manager.dispatch("approval", {"n": 7}, tool_call_id="c7", agent_id="a", run_id="r")
        while (await manager.get_task(task.id)).status != "suspended":
            await asyncio.sleep(0.01)
        (markers / "suspended").write_text(task.id)
    (markers / "ready").write_text("1")
    await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
