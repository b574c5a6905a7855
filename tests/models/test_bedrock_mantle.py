"""Bedrock Mantle (Bedrock's OpenAI Responses endpoint) against its recorded three-turn run.

The recording's events put ``data:`` before ``event:``; its call ids (``call_0``, ``call_1``) start
again in each response, and the recorded client sent them back as ``"{response id}:{call id}"``.
The test drives the three turns, each next prompt built from our own output with the recorded tool
results, and checks that every later request's items equal the recorded ones.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentstream.models import BedrockMantleModel, MissingAPIKeyError, resolve_model

from ._drive import next_prompt, v2_tools
from .conftest import API_KEY, ReplayServer, counter_ids, load, recorded_events

NAME = "bedrock-mantle/responses-sequential-tools-three-turns.json"


def _outputs(body: dict[str, Any]) -> dict[str, str]:
    return {i["call_id"]: i["output"] for i in body["input"] if i.get("type") == "function_call_output"}


def _with_recorded_results(prompt: list[dict[str, Any]], outputs: dict[str, str]) -> list[dict[str, Any]]:
    for message in prompt:
        if message["role"] == "tool":
            for part in message["content"]:
                part["output"] = {"type": "text", "value": outputs[part["toolCallId"]]}
    return prompt


async def test_three_turns(server: ReplayServer) -> None:
    recording = load(NAME)
    interactions = recording["interactions"]
    server.queue_recording(recording)
    first = interactions[0]["request"]["body"]
    model = BedrockMantleModel(
        first["model"],
        base_url=server.url + "/openai/v1",
        api_key=API_KEY,
        max_retries=0,
        generate_id=counter_ids(),
    )
    prompt: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": first["input"][0]["content"]}]}
    ]
    call: dict[str, Any] = {
        "tools": v2_tools(first),
        "tool_choice": {"type": "auto"},
        "provider_options": {"openai": {"instructions": first["instructions"]}},
    }
    turns = []
    for n, interaction in enumerate(interactions):
        want = interaction["request"]["body"]
        if n:
            prompt = _with_recorded_results(next_prompt(prompt, turns[-1]), _outputs(want))
        parts = [dict(p) async for p in model.do_stream({**call, "prompt": prompt})]
        turns.append(parts)
        got = server.received[n]
        assert (got.method, got.path) == ("POST", "/openai/v1/responses")
        assert got.headers["authorization"] == f"Bearer {API_KEY}"
        assert got.body["include"] == want["include"] == ["reasoning.encrypted_content"]
        assert got.body["instructions"] == want["instructions"]
        # every item after the user message, exactly as the recorded client sent it
        assert got.body["input"][1:] == want["input"][1:]

    responses = [
        next(e for e in recorded_events(recording, n) if e["type"] == "response.completed")["response"]
        for n in range(3)
    ]
    for n, (parts, name) in enumerate(zip(turns[:2], ("first_tool", "second_tool"), strict=True)):
        [tool_call] = [p for p in parts if p["type"] == "tool-call"]
        recorded = next(i for i in responses[n]["output"] if i["type"] == "function_call")
        assert (tool_call["toolName"], tool_call["input"]) == (name, recorded["arguments"])
        assert tool_call["toolCallId"] == f"{responses[n]['id']}:{recorded['call_id']}"
        assert parts[-1]["finishReason"] == "tool-calls"
    assert turns[0][-1]["usage"]["inputTokens"] == responses[0]["usage"]["input_tokens"]
    text = "".join(c["text"] for i in responses[2]["output"] if i["type"] == "message" for c in i["content"])
    assert "".join(p["delta"] for p in turns[2] if p["type"] == "text-delta") == text
    assert turns[2][-1]["finishReason"] == "stop"
    usage = responses[2]["usage"]
    assert turns[2][-1]["usage"]["inputTokens"] == usage["input_tokens"]
    assert turns[2][-1]["usage"]["outputTokens"] == usage["output_tokens"]
    # the three call ids are unique although Mantle numbered them from 0 in each response
    ids = [p["toolCallId"] for parts in turns for p in parts if p["type"] == "tool-call"]
    assert len(set(ids)) == len(ids) == 2


def test_recorded_field_order_is_data_then_event() -> None:
    body = load(NAME)["interactions"][0]["response"]["body"]
    first = body.split("\n\n")[0].split("\n")
    assert first[0].startswith("data: ") and first[1] == "event: " + json.loads(first[0][6:])["type"]


def test_router(monkeypatch: pytest.MonkeyPatch) -> None:
    for env in (
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_BEDROCK_MANTLE_BASE_URL",
    ):
        monkeypatch.delenv(env, raising=False)
    with pytest.raises(MissingAPIKeyError, match="AWS_BEARER_TOKEN_BEDROCK"):
        resolve_model("bedrock-mantle/openai.gpt-oss-120b")
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "k")
    with pytest.raises(MissingAPIKeyError, match="AWS_REGION"):
        resolve_model("bedrock-mantle/openai.gpt-oss-120b")
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    model = resolve_model("bedrock-mantle/openai.gpt-oss-120b")
    assert isinstance(model, BedrockMantleModel)
    assert model._url == "https://bedrock-mantle.us-west-2.api.aws/openai/v1/responses"
    monkeypatch.setenv("AWS_BEDROCK_MANTLE_BASE_URL", "http://127.0.0.1:9/openai/v1")
    model = resolve_model("bedrock-mantle/openai.gpt-oss-120b")
    assert isinstance(model, BedrockMantleModel) and model._url == "http://127.0.0.1:9/openai/v1/responses"
