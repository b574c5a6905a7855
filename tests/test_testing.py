from __future__ import annotations

import asyncio
from datetime import datetime

import pytest

from agentstream._abort import AbortController, AbortError
from agentstream.testing import FakeClock, ScriptedError, ScriptedModel, ScriptExhaustedError


async def test_scripted_model_plays_steps_and_decodes_tags() -> None:
    model = ScriptedModel(
        [
            [
                {
                    "type": "response-metadata",
                    "timestamp": {"$date": "2024-01-01T00:00:01.000Z"},
                    "x": {"$undefined": True},
                }
            ]
        ]
    )
    parts = [p async for p in model.do_stream({"prompt": [{"role": "user", "content": []}]})]
    assert isinstance(parts[0]["timestamp"], datetime) and "x" not in parts[0]
    assert model.calls[0].prompt == [{"role": "user", "content": []}]
    with pytest.raises(ScriptExhaustedError, match="call #2"):
        model.do_stream({"prompt": []})


async def test_throws_and_wait_for_abort() -> None:
    model = ScriptedModel(
        [{"throws": {"$error": {"name": "AI_APICallError", "message": "down", "statusCode": 503}}}]
    )
    with pytest.raises(ScriptedError) as info:
        [p async for p in model.do_stream({"prompt": []})]
    assert info.value.name == "AI_APICallError" and info.value.details["statusCode"] == 503

    ctrl = AbortController()
    model = ScriptedModel([[{"type": "text-start", "id": "1"}, {"$waitForAbort": True}]])
    stream = model.do_stream({"prompt": [], "abort_signal": ctrl.signal})
    assert (await stream.__anext__())["type"] == "text-start"
    pending = asyncio.ensure_future(stream.__anext__())
    await asyncio.sleep(0)
    assert not pending.done()
    ctrl.abort()
    with pytest.raises(AbortError):
        await pending


async def test_fake_clock() -> None:
    clock = FakeClock()
    woke: list[float] = []

    async def sleeper(s: float) -> None:
        await clock.sleep(s)
        woke.append(clock.now())

    tasks = [asyncio.ensure_future(sleeper(s)) for s in (2, 1)]
    await asyncio.sleep(0)
    await clock.advance(1.5)
    assert woke == [1]
    await clock.advance(1)
    assert woke == [1, 2]
    await asyncio.gather(*tasks)
