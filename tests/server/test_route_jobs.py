"""The routes of one app share its `Jobs` (`route_jobs` in server/_resume.py): a stop reaches the
answer the chat route of the same `Jobs` started, and only that; a bare stream store is the
deprecated spelling, whose routes share the store's default `Jobs`."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from agentstream._mastra import Mastra
from agentstream.agent import Agent
from agentstream.resumable import MemoryStreamStore, chat_stream_key
from agentstream.server import Jobs, RequestGuard, chat_route, resume_route, stop_route
from tests.security._support import x_user
from tests.server.test_stop_route import ALICE, STREAM, WaitingModel, body, types


def client(*routes: Any) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=Starlette(routes=list(routes)))
    return httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", timeout=30)


def weather(model: WaitingModel) -> Mastra:
    return Mastra(agents={"weather": Agent(id="weather", instructions="Be brief.", model=model)})


async def test_routes_of_one_jobs_reach_each_others_answers_and_no_other_apps() -> None:
    model, store = WaitingModel(), MemoryStreamStore()
    guard = RequestGuard(auth=x_user)
    mine, theirs = Jobs(store), Jobs(store)  # two apps over one store
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the jobs= spelling is not deprecated
        asking = client(
            chat_route(weather(model), "/api/chat", agent="weather", jobs=mine, guard=guard),
            resume_route(mine, "/api/chat/{chat_id}/stream", guard=guard),
            stop_route(mine, "/api/chat/{chat_id}/stream", guard=guard),
        )
        other = client(stop_route(theirs, "/api/chat/{chat_id}/stream", guard=guard))
    async with asking as a, other as b:
        answer = asyncio.create_task(a.post("/api/chat", json=body(), headers=ALICE))
        await model.started.wait()
        elsewhere = await b.delete(STREAM, headers=ALICE)
        assert not model.signals[0].aborted  # the other app cannot reach this process's answer
        stopped = await a.delete(STREAM, headers=ALICE)
        await answer
    assert elsewhere.status_code == 409
    assert "running in another server process" in elsewhere.json()["error"]["message"]
    assert stopped.status_code == 204 and model.signals[0].aborted
    assert types(answer.result().text)[-2:] == ["abort", "finish"]
    assert await store.active(chat_stream_key("chat-1")) is None


async def test_the_bare_store_spelling_warns_and_its_routes_still_share_the_stores_jobs() -> None:
    model, store = WaitingModel(), MemoryStreamStore()
    with pytest.warns(DeprecationWarning, match=r"chat_route: a stream store without jobs= is deprecated"):
        chat = chat_route(weather(model), "/api/chat", agent="weather", stream_store=store)
    with pytest.warns(DeprecationWarning, match=r"stop_route: a stream store without jobs= is deprecated"):
        stop = stop_route(store, "/api/chat/{chat_id}/stream")
    async with client(chat, stop) as c:
        answer = asyncio.create_task(c.post("/api/chat", json=body()))
        await model.started.wait()
        stopped = await c.delete(STREAM)
        await answer
    assert stopped.status_code == 204 and model.signals[0].aborted
    assert Jobs.shared(store) is Jobs.shared(store)


def test_a_store_that_is_not_the_jobs_store_is_refused() -> None:
    with pytest.raises(ValueError, match=r"chat_route: stream_store is not the store of the jobs given"):
        chat_route(weather(WaitingModel()), jobs=Jobs(MemoryStreamStore()), stream_store=MemoryStreamStore())
