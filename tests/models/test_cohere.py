"""Cohere v2 Chat against its recorded calls, over a real loopback HTTP server.

The recordings are non-streaming calls: `stream=False` replays them byte for byte (the request body
must equal the recorded one). For the streaming path `_as_sse` writes the same message as the v2
stream events Cohere documents (``event: <type>`` + ``data:``), built here independently of the
provider code. The assertions are the facts the recordings show: text, the tool call and its id,
citations, finish reasons and both token counts.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentstream.models import APICallError, CohereModel, MissingAPIKeyError, resolve_model

from .conftest import API_KEY, ReplayServer, Reply, counter_ids, load

TEXT = "cohere/text-nonstream.json"
TOOLS = "cohere/tool-call-two-turns-citations-nonstream.json"
TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a city.",
    "inputSchema": {
        "additionalProperties": False,
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "type": "object",
    },
}


def _as_sse(response: dict[str, Any]) -> str:
    message = response["message"]
    events: list[dict[str, Any]] = [
        {"type": "message-start", "id": response["id"], "delta": {"message": {"role": "assistant"}}}
    ]
    if message.get("tool_plan"):
        for word in message["tool_plan"].split(" "):
            events.append({"type": "tool-plan-delta", "delta": {"message": {"tool_plan": word + " "}}})
    for n, call in enumerate(message.get("tool_calls") or []):
        head = {
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""},
        }
        events.append({"type": "tool-call-start", "index": n, "delta": {"message": {"tool_calls": head}}})
        args = call["function"]["arguments"]
        for piece in (args[: len(args) // 2], args[len(args) // 2 :]):
            events.append(
                {
                    "type": "tool-call-delta",
                    "index": n,
                    "delta": {"message": {"tool_calls": {"function": {"arguments": piece}}}},
                }
            )
        events.append({"type": "tool-call-end", "index": n})
    for n, item in enumerate(message.get("content") or []):
        events.append(
            {
                "type": "content-start",
                "index": n,
                "delta": {"message": {"content": {"type": "text", "text": ""}}},
            }
        )
        for word in item["text"].split(" "):
            events.append(
                {"type": "content-delta", "index": n, "delta": {"message": {"content": {"text": word + " "}}}}
            )
        events.append({"type": "content-end", "index": n})
    for n, citation in enumerate(message.get("citations") or []):
        events.append({"type": "citation-start", "index": n, "delta": {"message": {"citations": citation}}})
        events.append({"type": "citation-end", "index": n})
    events.append(
        {
            "type": "message-end",
            "delta": {"finish_reason": response["finish_reason"], "usage": response["usage"]},
        }
    )
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


def _model(server: ReplayServer, **kw: Any) -> CohereModel:
    return CohereModel(
        "command-r7b-12-2024",
        base_url=server.url + "/v2",
        api_key=API_KEY,
        max_retries=0,
        generate_id=counter_ids(),
        **kw,
    )


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def _joined(parts: list[dict[str, Any]]) -> str:
    return "".join(p["delta"] for p in parts if p["type"] == "text-delta")


@pytest.mark.parametrize("stream", [False, True])
async def test_text(server: ReplayServer, stream: bool) -> None:
    interaction = load(TEXT)["interactions"][0]
    response = json.loads(interaction["response"]["body"])
    if stream:
        server.replies.append(Reply(body=_as_sse(response)))
    else:
        server.queue_recording(load(TEXT))
    parts = [dict(p) async for p in _model(server, stream=stream).do_stream({"prompt": [_user("hello")]})]
    sent = server.received[0]
    assert (sent.method, sent.path) == ("POST", "/v2/chat")
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    assert sent.body == {**interaction["request"]["body"], "stream": stream}
    assert parts[0] == {"type": "stream-start", "warnings": []}
    assert parts[1] == {"type": "response-metadata", "id": response["id"]}
    assert _joined(parts).strip() == response["message"]["content"][0]["text"]
    finish = parts[-1]
    assert finish["finishReason"] == "stop"
    tokens = response["usage"]["tokens"]
    assert finish["usage"] == {
        "inputTokens": tokens["input_tokens"],
        "outputTokens": tokens["output_tokens"],
        "totalTokens": tokens["input_tokens"] + tokens["output_tokens"],
    }
    assert finish["providerMetadata"]["cohere"]["billedUnits"] == response["usage"]["billed_units"]


def _next_prompt(
    prompt: list[dict[str, Any]], parts: list[dict[str, Any]], output: str
) -> list[dict[str, Any]]:
    [call] = [p for p in parts if p["type"] == "tool-call"]
    assistant = {
        "role": "assistant",
        "content": [
            {
                "type": "tool-call",
                "toolCallId": call["toolCallId"],
                "toolName": call["toolName"],
                "input": json.loads(call["input"]),
            }
        ],
    }
    result = {
        "role": "tool",
        "content": [
            {
                "type": "tool-result",
                "toolCallId": call["toolCallId"],
                "toolName": call["toolName"],
                "output": {"type": "text", "value": output},
            }
        ],
    }
    return [*prompt, assistant, result]


@pytest.mark.parametrize("stream", [False, True])
async def test_tool_call_then_cited_answer(server: ReplayServer, stream: bool) -> None:
    recording = load(TOOLS)
    first, second = recording["interactions"]
    responses = [json.loads(i["response"]["body"]) for i in recording["interactions"]]
    if stream:
        server.replies += [Reply(body=_as_sse(r)) for r in responses]
    else:
        server.queue_recording(recording)
    model = _model(server, stream=stream)
    prompt = [_user("What's the weather in Paris?")]
    call: dict[str, Any] = {"prompt": prompt, "tools": [TOOL], "tool_choice": {"type": "auto"}}
    turn1 = [dict(p) async for p in model.do_stream(call)]
    assert server.received[0].body == {**first["request"]["body"], "stream": stream}
    recorded_call = responses[0]["message"]["tool_calls"][0]
    [tool_call] = [p for p in turn1 if p["type"] == "tool-call"]
    assert tool_call == {
        "type": "tool-call",
        "toolCallId": recorded_call["id"],
        "toolName": "get_weather",
        "input": json.dumps(json.loads(recorded_call["function"]["arguments"]), separators=(",", ":")),
    }
    assert [p["type"] for p in turn1 if p["type"].startswith("tool-input")] == (
        ["tool-input-start", "tool-input-delta", "tool-input-delta", "tool-input-end"]
        if stream
        else ["tool-input-start", "tool-input-delta", "tool-input-end"]
    )
    finish = turn1[-1]
    assert finish["finishReason"] == "tool-calls"
    assert finish["usage"]["cachedInputTokens"] == responses[0]["usage"]["cached_tokens"]
    assert finish["providerMetadata"]["cohere"]["toolPlan"].strip() == responses[0]["message"]["tool_plan"]

    call["prompt"] = _next_prompt(prompt, turn1, "Sunny, 22C in Paris")
    turn2 = [dict(p) async for p in model.do_stream(call)]
    # the second request carries the call back exactly as the recorded client sent it
    assert server.received[1].body == {**second["request"]["body"], "stream": stream}
    assert _joined(turn2).strip() == responses[1]["message"]["content"][0]["text"]
    sources = [p for p in turn2 if p["type"] == "source"]
    recorded = responses[1]["message"]["citations"]
    assert [(s["sourceType"], s["providerMetadata"]["cohere"]["text"]) for s in sources] == [
        ("document", c["text"]) for c in recorded
    ]
    assert sources[0]["providerMetadata"]["cohere"]["sources"][0]["id"] == f"{recorded_call['id']}:0"
    assert turn2[-1]["finishReason"] == "stop"
    assert turn2[-1]["usage"]["inputTokens"] == responses[1]["usage"]["tokens"]["input_tokens"]


async def test_null_arguments_are_an_empty_object(server: ReplayServer) -> None:
    response = {
        "id": "r1",
        "finish_reason": "TOOL_CALL",
        "message": {
            "role": "assistant",
            "tool_calls": [
                {"id": "t_1", "type": "function", "function": {"name": "now", "arguments": "null"}}
            ],
        },
        "usage": {"tokens": {"input_tokens": 3, "output_tokens": 2}},
    }
    server.replies.append(Reply(body=_as_sse(response)))
    parts = [p async for p in _model(server).do_stream({"prompt": [_user("time?")]})]
    [call] = [p for p in parts if p["type"] == "tool-call"]
    assert call["input"] == "{}"


@pytest.mark.parametrize(
    ("status", "body", "retryable"),
    [
        (400, {"message": "invalid request: model 'command-x' not found"}, False),
        (401, {"message": "invalid api token"}, False),
        (429, {"message": "You are using a Trial key, which is limited to 10 API calls / minute."}, True),
        (503, {"message": "service unavailable"}, True),
    ],
)
async def test_http_errors(server: ReplayServer, status: int, body: dict[str, Any], retryable: bool) -> None:
    server.replies.append(Reply(status=status, content_type="application/json", body=json.dumps(body)))
    parts = [p async for p in _model(server).do_stream({"prompt": [_user("hi")]})]
    [part] = parts
    assert part["type"] == "error"
    error = part["error"]
    assert isinstance(error, APICallError)
    assert (error.status_code, error.message, error.provider) == (status, body["message"], "cohere")
    assert error.is_retryable is retryable


@pytest.mark.parametrize("how", ["cut", "clean end"])
async def test_stream_ending_before_message_end_is_an_error(server: ReplayServer, how: str) -> None:
    response = json.loads(load(TEXT)["interactions"][0]["response"]["body"])
    body = _as_sse(response)
    if how == "cut":
        server.replies.append(Reply(body=body, cut_after_events=4))
    else:  # every event but message-end, then a proper end of body
        server.replies.append(Reply(body=body[: body.index("event: message-end")]))
    parts = [p async for p in _model(server).do_stream({"prompt": [_user("hello")]})]
    assert parts[-1]["type"] == "error"
    expected = "connection lost mid-stream" if how == "cut" else "ended before message-end"
    assert expected in str(parts[-1]["error"])
    assert not any(p["type"] == "finish" for p in parts)
    assert _joined(parts)  # the text already streamed is kept


async def test_settings_and_documents(server: ReplayServer) -> None:
    response = json.loads(load(TEXT)["interactions"][0]["response"]["body"])
    server.replies.append(Reply(body=_as_sse(response)))
    prompt = [
        {"role": "system", "content": "Answer from the documents."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is the policy?"},
                {
                    "type": "file",
                    "mediaType": "text/plain",
                    "data": b"Refunds within 30 days.",
                    "filename": "policy.txt",
                },
            ],
        },
    ]
    options: Any = {
        "prompt": prompt,
        "temperature": 0.2,
        "top_p": 0.9,
        "top_k": 5,
        "max_output_tokens": 100,
        "response_format": {"type": "json", "schema": {"type": "object"}},
        "provider_options": {"cohere": {"thinking": {"tokenBudget": 256}}},
    }
    [p async for p in _model(server).do_stream(options)]
    body = server.received[0].body
    assert body["messages"] == [
        {"role": "system", "content": "Answer from the documents."},
        {"role": "user", "content": "What is the policy?"},
    ]
    assert body["documents"] == [{"data": {"text": "Refunds within 30 days.", "title": "policy.txt"}}]
    assert (body["temperature"], body["p"], body["k"], body["max_tokens"]) == (0.2, 0.9, 5, 100)
    assert body["response_format"] == {"type": "json_object", "json_schema": {"type": "object"}}
    assert body["thinking"] == {"type": "enabled", "token_budget": 256}


def test_router(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    monkeypatch.delenv("COHERE_BASE_URL", raising=False)
    with pytest.raises(MissingAPIKeyError, match="COHERE_API_KEY"):
        resolve_model("cohere/command-a-03-2025")
    monkeypatch.setenv("COHERE_API_KEY", "k")
    model = resolve_model("cohere/command-a-03-2025")
    assert isinstance(model, CohereModel) and model._url == "https://api.cohere.com/v2/chat"
    monkeypatch.setenv("COHERE_BASE_URL", "http://127.0.0.1:9/v2")
    model = resolve_model("cohere/command-a-03-2025")
    assert isinstance(model, CohereModel) and model._url == "http://127.0.0.1:9/v2/chat"
