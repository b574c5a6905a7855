"""Fuzzing the request parser through the HTTP route: no input gives a 500.

Bodies are arbitrary bytes, arbitrary JSON (NaN, deep nesting and huge numbers included) and
chat-shaped JSON with random roles, parts and ids, sent with random content types. Every answer
is a 200 stream or a 4xx JSON error with a message.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentstream.ai_sdk import ChatRequestError, parse_json_body

from ._support import CountingModel, app_with, client_for

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)
_part = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            ["text", "reasoning", "file", "step-start", "tool-x", "dynamic-tool", "data-y", "bogus"]
        )
    },
    optional={
        "text": _scalars,
        "url": _scalars,
        "mediaType": _scalars,
        "toolCallId": _scalars,
        "toolName": _scalars,
        "state": st.sampled_from(
            ["input-available", "output-available", "output-error", "approval-responded", "nope"]
        ),
        "approval": _json | st.fixed_dictionaries({"id": _scalars, "approved": _scalars}),
        "output": _json,
        "input": _json,
        "errorText": _scalars,
    },
)
_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system", "tool", 3])},
    optional={
        "id": st.text(max_size=300) | _scalars,
        "parts": st.lists(_part, max_size=3) | _json,
        "content": _scalars,
    },
)
_chat = st.fixed_dictionaries(
    {"messages": st.lists(_message, max_size=4) | _json},
    optional={
        "id": _scalars,
        "trigger": st.sampled_from(["submit-message", "regenerate-message", "other"]),
        "messageId": _scalars,
        "runId": _scalars,
        "resumeData": _json,
        "toolCallId": _scalars,
    },
)


def _encode(value: Any) -> bytes:
    return json.dumps(value, allow_nan=True).encode()


_bodies = (
    st.binary(max_size=200)
    | _json.map(_encode)
    | _chat.map(_encode)
    | st.integers(min_value=1, max_value=5000).map(lambda n: b'{"messages":' + b"[" * n + b"]" * n + b"}")
)
_content_types = st.sampled_from(["application/json", "application/json; charset=utf-8", "text/plain", ""])

_model = CountingModel()
_app = app_with(_model)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=_bodies, content_type=_content_types)
def test_no_request_body_gives_a_500(body: bytes, content_type: str) -> None:
    async def post() -> None:
        async with client_for(_app) as client:
            r = await client.post("/api/chat/echo", content=body, headers={"content-type": content_type})
        assert r.status_code < 500, r.text[:300]
        if r.status_code == 200:
            assert r.text.endswith("data: [DONE]\n\n")
        else:
            error = r.json()["error"]
            assert isinstance(error["message"], str) and error["message"]
            assert len(r.content) < 2000

    asyncio.run(post())


@settings(max_examples=300, deadline=None)
@given(body=_bodies)
def test_parse_json_body_only_raises_chat_request_errors(body: bytes) -> None:
    try:
        parse_json_body(body)
    except ChatRequestError as exc:
        assert exc.status_code == 400 and str(exc)
