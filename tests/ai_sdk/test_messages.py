"""UI messages → model messages, and request validation."""

from __future__ import annotations

from typing import Any

import pytest

from agentstream.ai_sdk import UIMessageError, convert_ui_messages, parse_chat_request

# The second-turn request a real useChat (ai 7) sent, from the protocol notes.
ASSISTANT: dict[str, Any] = {
    "id": "msg_mx2iai2q_q",
    "metadata": {"model": "fake-1"},
    "role": "assistant",
    "parts": [
        {"type": "step-start"},
        {"type": "reasoning", "id": "reasoning_1", "text": "The user wants the weather", "state": "done"},
        {"type": "text", "text": "Let me check the weather.", "state": "done"},
        {
            "type": "tool-getWeather",
            "toolCallId": "call_1",
            "state": "output-available",
            "input": {"city": "Berlin"},
            "output": {"temperature": 21},
        },
        {"type": "step-start"},
        {"type": "text", "text": "It is 21 °C.", "state": "done"},
        {"type": "source-url", "sourceId": "src_1", "url": "https://example.com", "title": "W"},
        {"type": "file", "mediaType": "text/plain", "url": "data:text/plain;base64,aGVsbG8="},
        {"type": "data-weather", "id": "weather_1", "data": {"city": "Berlin"}},
    ],
}


def test_round_trip_of_a_real_second_turn() -> None:
    messages = [
        {"id": "s", "role": "system", "parts": [{"type": "text", "text": "Be brief."}]},
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Weather in Berlin?"}]},
        ASSISTANT,
        {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "And tomorrow?"}]},
    ]
    assert convert_ui_messages(messages) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Weather in Berlin?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "reasoning", "text": "The user wants the weather"},
                {"type": "text", "text": "Let me check the weather."},
                {
                    "type": "tool-call",
                    "toolCallId": "call_1",
                    "toolName": "getWeather",
                    "input": {"city": "Berlin"},
                },
            ],
        },
        {
            "role": "tool",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "call_1",
                    "toolName": "getWeather",
                    "output": {"type": "json", "value": {"temperature": 21}},
                }
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "It is 21 °C."},
                {"type": "file", "mediaType": "text/plain", "data": "data:text/plain;base64,aGVsbG8="},
            ],
        },
        {"role": "user", "content": [{"type": "text", "text": "And tomorrow?"}]},
    ]


def _tool(state: str, **extra: Any) -> dict[str, Any]:
    return {"type": "tool-deleteFile", "toolCallId": "c", "state": state, "input": {"p": 1}, **extra}


@pytest.mark.parametrize(
    ("part", "result"),
    [
        (_tool("input-streaming"), None),
        (_tool("input-available"), None),
        (_tool("approval-requested", approval={"id": "a"}), None),
        (_tool("approval-responded", approval={"id": "a", "approved": True}), None),
        (_tool("output-available", output="ok"), {"type": "text", "value": "ok"}),
        (_tool("output-error", errorText="boom"), {"type": "error-text", "value": "boom"}),
        (
            _tool("output-denied", approval={"id": "a", "approved": False, "reason": "no"}),
            {"type": "error-text", "value": "Tool execution denied: no."},
        ),
    ],
)
def test_tool_states(part: dict[str, Any], result: dict[str, Any] | None) -> None:
    out = convert_ui_messages([{"id": "a", "role": "assistant", "parts": [part]}])
    if part["state"] == "input-streaming":
        assert out == []
        return
    assert out[0]["content"][0]["type"] == "tool-call"
    assert out[0]["content"][0]["toolName"] == "deleteFile"
    if result is None:
        assert len(out) == 1
    else:
        assert out[1] == {
            "role": "tool",
            "content": [
                {"type": "tool-result", "toolCallId": "c", "toolName": "deleteFile", "output": result}
            ],
        }


def test_dynamic_and_provider_executed_tools() -> None:
    parts = [
        {
            "type": "dynamic-tool",
            "toolName": "mcp_x",
            "toolCallId": "d",
            "state": "output-available",
            "input": {},
            "output": 1,
        },
        {
            "type": "tool-web_search",
            "toolCallId": "w",
            "state": "output-available",
            "input": {},
            "output": [],
            "providerExecuted": True,
        },
    ]
    out = convert_ui_messages([{"id": "a", "role": "assistant", "parts": parts}])
    assert [p["type"] for p in out[0]["content"]] == ["tool-call", "tool-call", "tool-result"]
    assert out[0]["content"][0]["toolName"] == "mcp_x"
    assert out[1]["content"][0]["toolCallId"] == "d"


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        ({"x": 1}, "messages: Messages must be an array of UIMessage objects"),
        ([1], "messages[0]: expected an object, got number 1"),
        (
            [{"role": "bot", "parts": []}],
            "messages[0].role: expected one of 'system', 'user', 'assistant', got 'bot'",
        ),
        ([{"role": "user"}], "messages[0].parts: expected an array, got null"),
        (
            [
                {"role": "user", "parts": []},
                {"role": "user", "parts": []},
                {"role": "user", "parts": [{"type": "foo"}]},
            ],
            "messages[2].parts[0].type: expected one of 'text', ",
        ),
        (
            [{"role": "user", "parts": [{"type": "text", "text": 3}]}],
            "messages[0].parts[0].text: expected a string, got number 3",
        ),
        (
            [{"role": "assistant", "parts": [{"type": "tool-x", "toolCallId": "c", "state": "done"}]}],
            "messages[0].parts[0].state: expected one of 'input-streaming'",
        ),
        (
            [
                {
                    "role": "assistant",
                    "parts": [{"type": "tool-x", "toolCallId": "c", "state": "output-available"}],
                }
            ],
            "messages[0].parts[0].output: expected a value",
        ),
    ],
)
def test_malformed_messages_name_the_path(messages: Any, message: str) -> None:
    with pytest.raises(UIMessageError) as info:
        convert_ui_messages(messages)
    assert str(info.value).startswith(message)
    assert isinstance(info.value, ValueError)


def test_request_body() -> None:
    request = parse_chat_request(
        b'{"id":"c1","messages":[{"id":"u","role":"user","parts":[{"type":"text","text":"hi"}]}],'
        b'"trigger":"regenerate-message","messageId":"m","extra":1}'
    )
    assert request.trigger == "regenerate-message"
    assert request.message_id == "m"
    with pytest.raises(UIMessageError, match="trigger"):
        parse_chat_request({"id": "c", "messages": [], "trigger": "nope"})
    with pytest.raises(UIMessageError, match="not valid JSON"):
        parse_chat_request(b"{")
    with pytest.raises(UIMessageError, match=r"messages\[0\].parts\[0\].type"):
        parse_chat_request({"messages": [{"role": "user", "parts": [{"type": "foo"}]}]})
