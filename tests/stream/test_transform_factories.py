"""The single-use ``smooth_stream()`` where a factory is needed is refused where it is configured."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import pytest

from agentstream import Agent, Mastra
from agentstream.ai_sdk import handle_chat_stream
from agentstream.ai_sdk import smooth_stream as reusable_smooth_stream
from agentstream.stream import ModelOutput, smooth_stream
from agentstream.stream._smooth import check_transform_factories
from tests import _services

REQUEST = {"messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}
NAMED = r"agentstream\.ai_sdk\.smooth_stream"


async def _nothing() -> AsyncIterator[Any]:
    return
    yield


def identity(source: AsyncIterable[Any]) -> AsyncIterable[Any]:
    return source


@pytest.mark.parametrize(
    "value",
    [None, reusable_smooth_stream(), [reusable_smooth_stream(), reusable_smooth_stream()], lambda: identity],
)
def test_factories_pass(value: Any) -> None:
    check_transform_factories(value, "here")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (smooth_stream(), rf"^here: got a single-use agentstream\.stream\.smooth_stream.*{NAMED}"),
        ([reusable_smooth_stream(), smooth_stream()], NAMED),
        (identity, "needs arguments, so it is a transform, not a factory"),
        (42, "expected a transform factory .* got int"),
    ],
)
def test_what_cannot_make_a_fresh_transform_is_refused(value: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        check_transform_factories(value, "here")


def test_chat_route_refuses_it_at_construction() -> None:
    _services.require("starlette")
    from agentstream.server import chat_route

    mastra = Mastra(agents={"a": Agent(id="a", name="A", instructions="", model="demo")})
    with pytest.raises(TypeError, match=rf"chat_route\(experimental_transform=\.\.\.\).*{NAMED}"):
        chat_route(mastra, experimental_transform=smooth_stream())
    with pytest.raises(TypeError, match=rf"chat_route\(default_options=\.\.\.\).*{NAMED}"):
        chat_route(mastra, default_options={"experimental_transform": smooth_stream()})
    chat_route(mastra, experimental_transform=reusable_smooth_stream())


async def test_handle_chat_stream_and_model_output_refuse_it() -> None:
    mastra = Mastra(agents={"a": Agent(id="a", name="A", instructions="", model="demo")})
    with pytest.raises(TypeError, match=rf"handle_chat_stream\(experimental_transform=\.\.\.\).*{NAMED}"):
        await handle_chat_stream(
            mastra=mastra, agent_id="a", params=REQUEST, experimental_transform=smooth_stream()
        )
    with pytest.raises(TypeError, match=NAMED):
        ModelOutput(_nothing(), run_id="r", experimental_transform=smooth_stream())
    with pytest.raises(TypeError, match=NAMED):
        mastra.get_agent("a").stream("hi", experimental_transform=smooth_stream())
