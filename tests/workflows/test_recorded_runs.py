"""`workflow_route(stream_store=...)` in one process: each leg of a run is recorded under the run,
`workflow_stream_route` serves it again to its owner only, and a second leg while one streams is 409."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from starlette.applications import Starlette

from agentstream import Mastra
from agentstream.resumable import MemoryStreamStore
from agentstream.server import RequestGuard, workflow_route, workflow_stream_route
from agentstream.workflows import StepContext, create_step, create_workflow
from tests.security._support import x_user


class _CountingStore(MemoryStreamStore):
    """Counts `active` look-ups, so the test knows its readers have found the stream."""

    found = 0

    async def active(self, chat_id: str) -> Any:
        answer = await super().active(chat_id)
        self.found += answer is not None
        return answer


async def test_a_recorded_run_is_replayed_to_its_owner_only_and_not_started_twice() -> None:
    release = asyncio.Event()
    waiting = asyncio.Event()

    async def wait(c: StepContext) -> Any:
        waiting.set()
        await release.wait()
        return {"done": c.input_data["n"]}

    workflow = create_workflow(id="w").then(create_step(id="wait", execute=wait)).commit()
    mastra = Mastra(workflows={"w": workflow})
    store = _CountingStore()
    guard = RequestGuard(auth=x_user)
    app = Starlette(
        routes=[
            workflow_route(mastra, stream_store=store, guard=guard),
            workflow_stream_route(store, guard=guard),
        ]
    )
    alice, bob = {"x-user": "alice"}, {"x-user": "bob"}
    url = "/api/workflows/w/runs/r1/stream"
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        assert (await client.get(url, headers=alice)).status_code == 204  # nothing yet
        body = {"runId": "r1", "inputData": {"n": 1}}
        started = asyncio.create_task(client.post("/api/workflows/w/stream", json=body, headers=alice))
        await waiting.wait()
        assert (await client.get(url, headers=bob)).status_code == 204  # not even that it exists
        assert (await client.get(url)).status_code == 401
        twice = await client.post("/api/workflows/w/stream", json=body, headers=alice)
        assert twice.status_code == 409 and twice.json()["error"]["path"] == "runId"
        replay = asyncio.create_task(client.get(url, headers=alice))
        skipped = asyncio.create_task(client.get(f"{url}?after=2", headers=alice))
        while store.found < 3:  # bob's look-up, then alice's two readers
            await asyncio.sleep(0.01)
        release.set()
        first, again, rest = await started, await replay, await skipped
        assert (await client.get(url, headers=alice)).status_code == 204  # finished
        bad = await client.get(f"{url}?after=x", headers=alice)
    assert first.status_code == again.status_code == 200
    assert again.text == first.text and '"done":1' in first.text.replace(" ", "")
    frames = [line for line in first.text.splitlines() if line.startswith("data: ")]
    assert [line for line in rest.text.splitlines() if line.startswith("data: ")] == frames[2:]
    assert bad.status_code == 400 and bad.json()["error"]["path"] == "after"
