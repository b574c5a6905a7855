"""The Gemini API model against real recorded responses, over a real loopback HTTP server.

The expectations are the facts each recording shows, read from its raw body by `_facts` (a reader
independent of the model's parser): the text, the thoughts, the function calls, the usage counters
and the provider's finish reason. Recordings of the non-streaming ``generateContent`` call are sent as
a one-event stream: every streamed event is a whole ``GenerateContentResponse``, so the same object
is what a stream would carry.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentstream.models import APICallError, CallOptions, GoogleModel, resolve_model
from agentstream.models._google import map_google_finish_reason
from agentstream.models._google_prompt import convert_to_google_contents, openapi_schema

from ._cases import GOOGLE_ONE_SHOT, GOOGLE_STREAMED
from .conftest import API_KEY, ReplayServer, Reply, counter_ids, load

STREAMED = GOOGLE_STREAMED
ONE_SHOT = GOOGLE_ONE_SHOT


def _events(body: str, content_type: str) -> list[dict[str, Any]]:
    if "event-stream" not in content_type:
        return [json.loads(body)]
    return [json.loads(e.removeprefix("data:").strip()) for e in body.split("\r\n\r\n") if e.strip()]


def _facts(response: dict[str, Any]) -> dict[str, Any]:
    """What the recorded response says, straight from its JSON."""
    text, thoughts, calls, reason, usage, code = "", "", [], None, {}, 0
    for event in _events(response["body"], response["contentType"]):
        usage = event.get("usageMetadata") or usage
        for cand in event.get("candidates") or []:
            reason = cand.get("finishReason") or reason
            for part in (cand.get("content") or {}).get("parts") or []:
                code += "executableCode" in part
                if "functionCall" in part:
                    calls.append((part["functionCall"]["name"], part["functionCall"].get("args") or {}))
                elif part.get("thought") is True:
                    thoughts += part.get("text", "")
                elif "text" in part:
                    text += part["text"]
    return {
        "text": text,
        "thoughts": thoughts,
        "calls": calls,
        "reason": reason,
        "usage": usage,
        "code": code,
    }


def _first_prompt(body: dict[str, Any]) -> list[dict[str, Any]]:
    prompt: list[dict[str, Any]] = []
    system = body.get("systemInstruction")
    if system:
        prompt.append({"role": "system", "content": "".join(p["text"] for p in system["parts"])})
    first = body["contents"][0]
    prompt.append({"role": "user", "content": [{"type": "text", "text": p["text"]} for p in first["parts"]]})
    return prompt


def _tools(body: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for entry in body.get("tools") or []:
        for fn in entry.get("functionDeclarations") or []:
            schema = json.loads(json.dumps(fn.get("parameters") or {"type": "object"}).lower())
            out.append(
                {
                    "type": "function",
                    "name": fn["name"],
                    "description": fn["description"],
                    "inputSchema": schema,
                }
            )
        for key, tool_id in (
            ("googleSearch", "google.google_search"),
            ("codeExecution", "google.code_execution"),
            ("urlContext", "google.url_context"),
        ):
            if key in entry:
                out.append({"type": "provider-defined", "id": tool_id, "name": key, "args": {}})
    return out


def _options(body: dict[str, Any], prompt: list[dict[str, Any]]) -> CallOptions:
    options: CallOptions = {"prompt": prompt, "tools": _tools(body)}
    config = body.get("generationConfig") or {}
    if "maxOutputTokens" in config:
        options["max_output_tokens"] = config["maxOutputTokens"]
    if "temperature" in config:
        options["temperature"] = config["temperature"]
    google = {k: config[k] for k in ("thinkingConfig", "responseModalities") if k in config}
    if body.get("safetySettings"):
        google["safetySettings"] = body["safetySettings"]
    if google:
        options["provider_options"] = {"google": google}
    return options


def _model(server: ReplayServer, name: str, recording: dict[str, Any]) -> GoogleModel:
    path = recording["interactions"][0]["request"]["path"]
    base, _, model_path = (
        path.partition("/models/")
        if "/publishers/" not in path
        else (path.partition("/publishers/google/models/"))
    )
    model_id = model_path.split(":")[0]
    prefix = base + ("/publishers/google" if "/publishers/" in path else "")
    return GoogleModel(
        model_id, base_url=server.url + prefix, api_key=API_KEY, generate_id=counter_ids(), max_retries=0
    )


async def _collect(model: GoogleModel, options: CallOptions) -> list[dict[str, Any]]:
    return [dict(p) async for p in model.do_stream(options)]


def _joined(parts: list[dict[str, Any]], kind: str) -> str:
    return "".join(p["delta"] for p in parts if p["type"] == kind)


def _assert_facts(parts: list[dict[str, Any]], facts: dict[str, Any], json_answer: bool = False) -> None:
    assert parts[0] == {"type": "stream-start", "warnings": []}
    finish = parts[-1]
    assert finish["type"] == "finish"
    if not json_answer:
        assert _joined(parts, "text-delta") == facts["text"]
    assert _joined(parts, "reasoning-delta") == facts["thoughts"]
    calls = [
        (p["toolName"], json.loads(p["input"]))
        for p in parts
        if p["type"] == "tool-call" and not p.get("providerExecuted")
    ]
    assert calls == [c for c in facts["calls"] if not (json_answer and c[0] == "json")]
    usage = facts["usage"]
    assert finish["usage"]["inputTokens"] == usage.get("promptTokenCount")
    assert finish["usage"]["outputTokens"] == usage.get("candidatesTokenCount")
    assert finish["usage"]["totalTokens"] == usage.get("totalTokenCount")
    assert finish["usage"].get("reasoningTokens") == usage.get("thoughtsTokenCount")
    assert finish["finishReason"] == map_google_finish_reason(facts["reason"], bool(calls or facts["code"]))
    assert API_KEY not in repr(parts)


@pytest.mark.parametrize("name", STREAMED)
async def test_streamed_recording(server: ReplayServer, name: str) -> None:
    recording = load(name)
    model = _model(server, name, recording)
    first = recording["interactions"][0]["request"]["body"]
    prompt = _first_prompt(first)
    for n, interaction in enumerate(recording["interactions"]):
        response = interaction["response"]
        server.replies.append(
            Reply(status=response["status"], content_type=response["contentType"], body=response["body"])
        )
        parts = await _collect(model, _options(interaction["request"]["body"], prompt))
        sent = server.received[-1]
        assert sent.path == interaction["request"]["path"]
        assert sent.query == "alt=sse"
        assert sent.headers["x-goog-api-key"] == API_KEY
        _assert_facts(parts, _facts(response))
        if n + 1 < len(recording["interactions"]):
            prompt = _next_prompt(prompt, parts, recording["interactions"][n + 1]["request"]["body"])
            _assert_request_shape(prompt)


def _next_prompt(
    prompt: list[dict[str, Any]], parts: list[dict[str, Any]], recorded: dict[str, Any]
) -> list[dict[str, Any]]:
    """Our answer as the assistant turn, and the recorded function responses as the tool turn."""
    calls = [p for p in parts if p["type"] == "tool-call"]
    assistant: dict[str, Any] = {
        "role": "assistant",
        "content": [
            {
                "type": "tool-call",
                "toolCallId": c["toolCallId"],
                "toolName": c["toolName"],
                "input": c["input"],
                **({"providerOptions": c["providerMetadata"]} if "providerMetadata" in c else {}),
            }
            for c in calls
        ],
    }
    responses = [p["functionResponse"] for p in recorded["contents"][-1]["parts"] if "functionResponse" in p]
    tool = {
        "role": "tool",
        "content": [
            {
                "type": "tool-result",
                "toolCallId": c["toolCallId"],
                "toolName": r["name"],
                "output": {"type": "json", "value": r["response"]},
            }
            for c, r in zip(calls, responses, strict=True)
        ],
    }
    return [*prompt, assistant, tool]


def _assert_request_shape(prompt: list[dict[str, Any]]) -> None:
    _, contents = convert_to_google_contents(prompt)
    assert [c["role"] for c in contents][-2:] == ["model", "user"]
    assert all("functionResponse" in p for p in contents[-1]["parts"])


async def test_function_calls_turns_send_the_conversation_back(server: ReplayServer) -> None:
    """Turn two's request carries turn one's call and its result, as the recorded client sent them."""
    recording = load("google/function-calls-three-turns.json")
    await test_streamed_recording(server, "google/function-calls-three-turns.json")
    second = server.received[1].body
    recorded = recording["interactions"][1]["request"]["body"]
    ours = [(c["role"], [sorted(p) for p in c["parts"]]) for c in second["contents"]]
    theirs = [(c["role"], [sorted(p) for p in c["parts"]]) for c in recorded["contents"]]
    assert ours == theirs
    assert second["contents"][1]["parts"][0]["functionCall"] == {
        "name": "get_capital",
        "args": {"country": "France"},
    }
    assert second["contents"][2]["parts"][0]["functionResponse"]["name"] == "get_capital"
    assert second["systemInstruction"] == recorded["systemInstruction"] | {"role": "user"} or (
        second["systemInstruction"]["parts"] == recorded["systemInstruction"]["parts"]
    )


async def test_thought_signature_is_kept_and_sent_back(server: ReplayServer) -> None:
    recording = load("google/code-execution-parts.json")
    events = _events(recording["interactions"][0]["response"]["body"], "text/event-stream")
    signed = [
        p
        for e in events
        for c in e["candidates"]
        for p in c["content"].get("parts", [])
        if "thoughtSignature" in p
    ]
    assert signed, "the recording has a signed part"
    body = (
        "data: "
        + json.dumps(
            {
                "candidates": [
                    {
                        "content": {
                            "role": "model",
                            "parts": [
                                {"functionCall": {"name": "f", "args": {"a": 1}}, "thoughtSignature": "SIG"}
                            ],
                        },
                        "finishReason": "STOP",
                    }
                ]
            }
        )
        + "\r\n\r\n"
    )
    server.replies.append(Reply(body=body))
    model = GoogleModel(
        "gemini-3-pro",
        base_url=server.url + "/v1beta",
        api_key=API_KEY,
        max_retries=0,
        generate_id=counter_ids(),
    )
    parts = await _collect(model, {"prompt": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]})
    call = next(p for p in parts if p["type"] == "tool-call")
    assert call["providerMetadata"] == {"google": {"thoughtSignature": "SIG"}}
    assert parts[-1]["finishReason"] == "tool-calls"
    _, contents = convert_to_google_contents(
        [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool-call",
                        "toolCallId": call["toolCallId"],
                        "toolName": "f",
                        "input": call["input"],
                        "providerOptions": call["providerMetadata"],
                    }
                ],
            },
        ]
    )
    assert contents[1]["parts"][0] == {
        "functionCall": {"name": "f", "args": {"a": 1}},
        "thoughtSignature": "SIG",
    }


async def test_code_execution_is_a_provider_executed_call_and_result(server: ReplayServer) -> None:
    recording = load("google/code-execution-parts.json")
    await test_streamed_recording(server, "google/code-execution-parts.json")
    events = _events(recording["interactions"][0]["response"]["body"], "text/event-stream")
    code = next(
        p["executableCode"]
        for e in events
        for c in e["candidates"]
        for p in c["content"].get("parts", [])
        if "executableCode" in p
    )
    output = next(
        p["codeExecutionResult"]
        for e in events
        for c in e["candidates"]
        for p in c["content"].get("parts", [])
        if "codeExecutionResult" in p
    )
    server.replies.append(Reply(body=recording["interactions"][0]["response"]["body"]))
    model = _model(server, "", recording)
    parts = await _collect(
        model,
        _options(
            recording["interactions"][0]["request"]["body"],
            _first_prompt(recording["interactions"][0]["request"]["body"]),
        ),
    )
    call = next(p for p in parts if p["type"] == "tool-call")
    result = next(p for p in parts if p["type"] == "tool-result")
    assert call["providerExecuted"] is True and json.loads(call["input"]) == code
    assert result["toolCallId"] == call["toolCallId"]
    assert result["result"] == {"outcome": output["outcome"], "output": output["output"]}
    assert server.received[-1].body["tools"] == [{"codeExecution": {}}]


async def test_grounding_chunks_are_sources_once_each(server: ReplayServer) -> None:
    recording = load("google/web-search-grounding-metadata.json")
    response = recording["interactions"][0]["response"]
    uris: list[str] = []
    for e in _events(response["body"], response["contentType"]):
        for c in e.get("candidates") or []:
            for chunk in (c.get("groundingMetadata") or {}).get("groundingChunks") or []:
                if chunk.get("web", {}).get("uri") not in uris:
                    uris.append(chunk["web"]["uri"])
    assert uris, "the recording has grounding chunks"
    server.replies.append(Reply(body=response["body"]))
    model = _model(server, "", recording)
    body = recording["interactions"][0]["request"]["body"]
    parts = await _collect(model, _options(body, _first_prompt(body)))
    assert [p["url"] for p in parts if p["type"] == "source"] == uris
    assert "groundingMetadata" in parts[-1]["providerMetadata"]["google"]


@pytest.mark.parametrize("name", ONE_SHOT)
async def test_one_shot_recording_as_a_stream(server: ReplayServer, name: str) -> None:
    recording = load(name)
    interaction = recording["interactions"][0]
    response = interaction["response"]
    server.replies.append(Reply(body="data: " + json.dumps(json.loads(response["body"])) + "\r\n\r\n"))
    model = _model(server, name, recording)
    parts = await _collect(
        model, _options(interaction["request"]["body"], _first_prompt(interaction["request"]["body"]))
    )
    _assert_facts(parts, _facts(response))


def test_finish_reasons() -> None:
    assert map_google_finish_reason("STOP", False) == "stop"
    assert map_google_finish_reason("STOP", True) == "tool-calls"
    assert map_google_finish_reason("MAX_TOKENS", False) == "length"
    assert map_google_finish_reason("SAFETY", False) == "content-filter"
    assert map_google_finish_reason("MALFORMED_FUNCTION_CALL", False) == "error"
    assert map_google_finish_reason("OTHER", False) == "other"
    assert map_google_finish_reason(None, False) == "unknown"


async def test_error_404_is_an_api_call_error(server: ReplayServer) -> None:
    recording = load("google/error-404-model-not-found.json")
    response = recording["interactions"][0]["response"]
    server.replies.append(Reply(status=404, content_type=response["contentType"], body=response["body"]))
    model = GoogleModel("gemini-3.6-flahs", base_url=server.url + "/v1beta", api_key=API_KEY, max_retries=0)
    parts = await _collect(
        model, {"prompt": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]}
    )
    assert [p["type"] for p in parts] == ["error"]
    error = parts[0]["error"]
    assert isinstance(error, APICallError)
    assert error.status_code == 404
    assert error.message == json.loads(response["body"])["error"]["message"]
    assert API_KEY not in error.client_message


async def test_a_stream_cut_before_a_finish_reason_is_an_error(server: ReplayServer) -> None:
    recording = load("google/text-stream-usage.json")
    body = recording["interactions"][0]["response"]["body"]
    server.replies.append(Reply(body=body.split("\r\n\r\n")[0] + "\r\n\r\n"))
    model = GoogleModel(
        "gemini-2.0-flash-exp", base_url=server.url + "/v1beta", api_key=API_KEY, max_retries=0
    )
    parts = await _collect(model, {"prompt": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]})
    assert parts[-1]["type"] == "error"
    assert "finishReason" in str(parts[-1]["error"])


def test_router_google(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentstream.models import MissingAPIKeyError

    monkeypatch.delenv("GOOGLE_GENERATIVE_AI_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError, match="GOOGLE_GENERATIVE_AI_API_KEY"):
        resolve_model("google/gemini-2.5-flash")
    monkeypatch.setenv("GOOGLE_GENERATIVE_AI_API_KEY", "k")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9/v1beta")
    model = resolve_model("google/gemini-2.5-flash")
    assert isinstance(model, GoogleModel)
    assert model._url == "http://127.0.0.1:9/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"


def test_openapi_schema() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "a": {"type": ["string", "null"]},
            "b": {"const": "x"},
            "c": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "d": {"type": "array", "items": {"type": "object", "properties": {"e": {"type": "boolean"}}}},
        },
        "required": ["a"],
    }
    assert openapi_schema(schema) == {
        "type": "object",
        "required": ["a"],
        "properties": {
            "a": {"type": "string", "nullable": True},
            "b": {"enum": ["x"]},
            "c": {"type": "integer", "nullable": True},
            "d": {"type": "array", "items": {"type": "object", "properties": {"e": {"type": "boolean"}}}},
        },
    }
    assert openapi_schema({"type": "object", "properties": {}}) is None


async def test_an_agent_sends_the_thought_signature_back(server: ReplayServer) -> None:
    """The loop keeps a call's provider metadata for the next request (Gemini 3 requires it)."""
    from agentstream import Agent, tool

    @tool
    async def f(a: int) -> dict[str, int]:
        """F."""
        return {"a": a}

    def event(obj: dict[str, Any]) -> str:
        return "data: " + json.dumps(obj) + "\r\n\r\n"

    usage = {"promptTokenCount": 3, "candidatesTokenCount": 2, "totalTokenCount": 5}
    call = {"functionCall": {"name": "f", "args": {"a": 1}}, "thoughtSignature": "SIG"}
    server.replies.append(
        Reply(
            body=event(
                {
                    "candidates": [{"content": {"role": "model", "parts": [call]}, "finishReason": "STOP"}],
                    "usageMetadata": usage,
                }
            )
        )
    )
    server.replies.append(
        Reply(
            body=event(
                {
                    "candidates": [
                        {"content": {"role": "model", "parts": [{"text": "done"}]}, "finishReason": "STOP"}
                    ],
                    "usageMetadata": usage,
                }
            )
        )
    )
    model = GoogleModel("gemini-3-pro", base_url=server.url + "/v1beta", api_key=API_KEY, max_retries=0)
    output = Agent(id="a", model=model, tools=[f]).stream("go")
    assert await output.text == "done"
    replayed = server.received[1].body["contents"][1]
    assert replayed == {"role": "model", "parts": [call]}


async def test_the_signature_survives_a_tool_s_model_output(server: ReplayServer) -> None:
    """A tool with ``to_model_output`` adds Mastra's own provider option; Gemini's stays beside it."""
    from agentstream import Agent
    from agentstream.tools import Tool

    async def run(args: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"a": args["a"], "secret": "not for the model"}

    tool = Tool(
        id="f",
        description="F.",
        input_schema={"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
        execute=run,
        to_model_output=lambda result: {"type": "json", "value": {"a": result["a"]}},
    )

    def event(obj: dict[str, Any]) -> str:
        return "data: " + json.dumps(obj) + "\r\n\r\n"

    call = {"functionCall": {"name": "f", "args": {"a": 1}}, "thoughtSignature": "SIG"}
    for parts in ([call], [{"text": "done"}]):
        candidate = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}
        server.replies.append(Reply(body=event({"candidates": [candidate]})))
    model = GoogleModel("gemini-3-pro", base_url=server.url + "/v1beta", api_key=API_KEY, max_retries=0)
    assert await Agent(id="a", model=model, tools=[tool]).stream("go").text == "done"
    contents = server.received[1].body["contents"]
    assert contents[1] == {"role": "model", "parts": [call]}
    assert contents[2]["parts"][0]["functionResponse"]["response"]["content"] == {"a": 1}
