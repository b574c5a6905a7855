"""Amazon Bedrock ``ConverseStream`` against its recorded event streams, over a real loopback server.

The recorded bodies are the exact AWS event-stream bytes; the server writes one frame per write.
`_frames` is a reader of that framing independent of botocore's (it checks both CRCs), and the
expectations are the facts it reads from the recorded payloads: text, reasoning, tool calls, the stop
reason and the usage counters. The SigV4 test recomputes the signature from the AWS specification.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import struct
from typing import Any
from urllib.parse import unquote

import pytest

from agentstream.models import MissingAPIKeyError, resolve_model
from agentstream.models._bedrock import BedrockModel, map_bedrock_stop_reason

from .conftest import API_KEY, ReplayServer, Reply, counter_ids, load

STREAMED = [
    "bedrock/text-stream.json",
    "bedrock/tool-use-two-turns-stream.json",
    "bedrock/reasoning-content-signature-stream.json",
    "bedrock/native-json-output-stream.json",
    "bedrock/server-tool-code-interpreter-stream.json",
]


def _frames(body_b64: str) -> list[tuple[dict[str, str], dict[str, Any], bytes]]:
    data, at, out = base64.b64decode(body_b64), 0, []
    while at < len(data):
        total, head_len = struct.unpack(">II", data[at : at + 8])
        assert binascii.crc32(data[at : at + 8]) == struct.unpack(">I", data[at + 8 : at + 12])[0]
        assert (
            binascii.crc32(data[at : at + total - 4])
            == struct.unpack(">I", data[at + total - 4 : at + total])[0]
        )
        headers, pos, end = {}, at + 12, at + 12 + head_len
        while pos < end:
            name_len = data[pos]
            name = data[pos + 1 : pos + 1 + name_len].decode()
            pos += 1 + name_len + 1  # the value-type byte: 7 (string) in every recorded frame
            value_len = struct.unpack(">H", data[pos : pos + 2])[0]
            headers[name] = data[pos + 2 : pos + 2 + value_len].decode()
            pos += 2 + value_len
        out.append((headers, json.loads(data[end : at + total - 4]), data[at : at + total]))
        at += total
    return out


def _facts(body_b64: str) -> dict[str, Any]:
    text, reasoning, calls, stop, usage = "", "", [], None, {}
    inputs: dict[int, list[Any]] = {}
    for headers, payload, _ in _frames(body_b64):
        kind = headers[":event-type"]
        if kind == "contentBlockStart" and "toolUse" in payload["start"]:
            use = payload["start"]["toolUse"]
            inputs[payload["contentBlockIndex"]] = [use["name"], "", use.get("type") == "server_tool_use"]
        elif kind == "contentBlockDelta":
            delta = payload["delta"]
            text += delta.get("text", "")
            reasoning += (delta.get("reasoningContent") or {}).get("text", "")
            if "toolUse" in delta:
                inputs[payload["contentBlockIndex"]][1] += delta["toolUse"]["input"]
        elif kind == "messageStop":
            stop = payload["stopReason"]
        elif kind == "metadata":
            usage = payload["usage"]
    calls = [(name, json.loads(raw)) for name, raw, server in inputs.values() if not server]
    return {"text": text, "reasoning": reasoning, "calls": calls, "stop": stop, "usage": usage}


def _model(server: ReplayServer, model_id: str = "us.amazon.nova-micro-v1:0", **kw: Any) -> BedrockModel:
    return BedrockModel(
        model_id,
        region="us-east-1",
        base_url=server.url,
        api_key=API_KEY,
        max_retries=0,
        generate_id=counter_ids(),
        **kw,
    )


def _prompt(body: dict[str, Any]) -> list[dict[str, Any]]:
    prompt: list[dict[str, Any]] = [
        {"role": "system", "content": s["text"]} for s in body.get("system") or []
    ]
    first = body["messages"][0]
    prompt.append(
        {"role": "user", "content": [{"type": "text", "text": c["text"]} for c in first["content"]]}
    )
    return prompt


def _tools(body: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for t in (body.get("toolConfig") or {}).get("tools") or []:
        if "systemTool" in t:
            name = t["systemTool"]["name"]
            out.append({"type": "provider-defined", "id": f"bedrock.{name}", "name": name, "args": {}})
        else:
            spec = t["toolSpec"]
            out.append(
                {
                    "type": "function",
                    "name": spec["name"],
                    "description": spec.get("description", ""),
                    "inputSchema": spec["inputSchema"]["json"],
                }
            )
    return out


def _choice(body: dict[str, Any]) -> dict[str, Any] | None:
    choice = (body.get("toolConfig") or {}).get("toolChoice")
    return {"type": "required"} if choice == {"any": {}} else None


async def _collect(model: BedrockModel, options: Any) -> list[dict[str, Any]]:
    return [dict(p) async for p in model.do_stream(options)]


@pytest.mark.parametrize("name", STREAMED)
async def test_recorded_stream(server: ReplayServer, name: str) -> None:
    recording = load(name)
    interaction = recording["interactions"][0]
    body = interaction["request"]["body"]
    frames = [raw for _, _, raw in _frames(interaction["response"]["body"])]
    server.replies.append(Reply(content_type=interaction["response"]["contentType"], frames=frames))
    model_id = unquote(interaction["request"]["path"].split("/")[2])
    options = {"prompt": _prompt(body), "tools": _tools(body), "tool_choice": _choice(body)}
    parts = await _collect(_model(server, model_id), options)
    sent = server.received[0]
    assert sent.path == interaction["request"]["path"]
    if body.get("toolConfig"):
        assert sent.body["toolConfig"] == body["toolConfig"]
    assert sent.body["messages"] == body["messages"]
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    facts = _facts(interaction["response"]["body"])
    assert "".join(p["delta"] for p in parts if p["type"] == "text-delta") == facts["text"]
    assert "".join(p["delta"] for p in parts if p["type"] == "reasoning-delta") == facts["reasoning"]
    calls = [
        (p["toolName"], json.loads(p["input"]))
        for p in parts
        if p["type"] == "tool-call" and not p.get("providerExecuted")
    ]
    assert calls == facts["calls"]
    finish = parts[-1]
    assert finish["finishReason"] == map_bedrock_stop_reason(facts["stop"])
    assert finish["usage"]["inputTokens"] == facts["usage"]["inputTokens"]
    assert finish["usage"]["outputTokens"] == facts["usage"]["outputTokens"]
    assert finish["usage"]["totalTokens"] == facts["usage"]["totalTokens"]
    assert API_KEY not in repr(parts)


async def test_reasoning_signature_is_kept_for_the_next_turn(server: ReplayServer) -> None:
    from agentstream.models._bedrock_prompt import convert_to_bedrock_messages

    recording = load("bedrock/reasoning-content-signature-stream.json")
    body = recording["interactions"][0]["response"]["body"]
    signature = next(
        p["delta"]["reasoningContent"]["signature"]
        for _, p, _ in _frames(body)
        if "signature" in (p.get("delta") or {}).get("reasoningContent", {})
    )
    server.replies.append(Reply(frames=[raw for _, _, raw in _frames(body)]))
    parts = await _collect(_model(server), {"prompt": [{"role": "user", "content": "Hello"}]})
    signed = [p for p in parts if p.get("providerMetadata", {}).get("bedrock", {}).get("signature")]
    assert [p["providerMetadata"]["bedrock"]["signature"] for p in signed] == [signature]
    text = "".join(p["delta"] for p in parts if p["type"] == "reasoning-delta")
    _, messages = convert_to_bedrock_messages(
        [
            {"role": "user", "content": "Hello"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "reasoning",
                        "text": text,
                        "providerOptions": {"bedrock": {"signature": signature}},
                    }
                ],
            },
        ]
    )
    assert messages[1]["content"] == [
        {"reasoningContent": {"reasoningText": {"text": text, "signature": signature}}}
    ]


async def test_tool_turn_sends_the_recorded_conversation(server: ReplayServer) -> None:
    recording = load("bedrock/tool-use-two-turns-stream.json")
    first, second = recording["interactions"]
    for it in (first, second):
        server.replies.append(Reply(frames=[raw for _, _, raw in _frames(it["response"]["body"])]))
    model = _model(server)
    body = first["request"]["body"]
    options = {"prompt": _prompt(body), "tools": _tools(body), "top_p": 0.5}
    parts = await _collect(model, options)
    text = "".join(p["delta"] for p in parts if p["type"] == "text-delta")
    call = next(p for p in parts if p["type"] == "tool-call")
    prompt = [
        *options["prompt"],
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": text},
                {
                    "type": "tool-call",
                    "toolCallId": call["toolCallId"],
                    "toolName": call["toolName"],
                    "input": call["input"],
                },
            ],
        },
        {
            "role": "tool",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": call["toolCallId"],
                    "toolName": call["toolName"],
                    "output": {"type": "text", "value": "30°C"},
                }
            ],
        },
    ]
    await _collect(model, {**options, "prompt": prompt})
    recorded = second["request"]["body"]
    assert server.received[1].body["messages"][:2] == recorded["messages"][:2]
    ours, theirs = server.received[1].body["messages"][2], recorded["messages"][2]
    assert ours["content"][0]["toolResult"]["toolUseId"] == theirs["content"][0]["toolResult"]["toolUseId"]
    assert ours["content"][0]["toolResult"]["content"] == theirs["content"][0]["toolResult"]["content"]
    assert server.received[0].body["inferenceConfig"] == {"topP": 0.5} == body["inferenceConfig"]


async def test_error_400_is_an_api_call_error(server: ReplayServer) -> None:
    recording = load("bedrock/error-400-stream-request.json")
    response = recording["interactions"][0]["response"]
    server.replies.append(Reply(status=400, content_type=response["contentType"], body=response["body"]))
    parts = await _collect(_model(server), {"prompt": [{"role": "user", "content": "hello"}]})
    assert [p["type"] for p in parts] == ["error"]
    assert parts[0]["error"].status_code == 400
    assert parts[0]["error"].message == json.loads(response["body"])["message"]


def _exception_frame(kind: str, message: str) -> bytes:
    headers = b""
    for name, value in (
        (":message-type", "exception"),
        (":exception-type", kind),
        (":content-type", "application/json"),
    ):
        headers += (
            bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(value)) + value.encode()
        )
    payload = json.dumps({"message": message}).encode()
    total = 12 + len(headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(headers))
    head = prelude + struct.pack(">I", binascii.crc32(prelude)) + headers + payload
    return head + struct.pack(">I", binascii.crc32(head))


async def test_exception_frame_is_an_error_part(server: ReplayServer) -> None:
    frames = [
        raw for _, _, raw in _frames(load("bedrock/text-stream.json")["interactions"][0]["response"]["body"])
    ]
    server.replies.append(Reply(frames=[*frames[:3], _exception_frame("throttlingException", "slow down")]))
    parts = await _collect(_model(server), {"prompt": [{"role": "user", "content": "hi"}]})
    errors = [p for p in parts if p["type"] == "error"]
    assert len(errors) == 1 and "throttlingException: slow down" in str(errors[0]["error"])
    assert parts[-1] == {**parts[-1], "type": "finish", "finishReason": "error"}


def _sigv4(secret: str, date: str, region: str, string_to_sign: str) -> str:
    key = ("AWS4" + secret).encode()
    for part in (date, region, "bedrock", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, string_to_sign.encode(), hashlib.sha256).hexdigest()


async def test_sigv4_signature(server: ReplayServer) -> None:
    """The Authorization header is the AWS Signature Version 4 of exactly the request that was sent."""
    frames = [
        raw for _, _, raw in _frames(load("bedrock/text-stream.json")["interactions"][0]["response"]["body"])
    ]
    server.replies.append(Reply(frames=frames))
    model = BedrockModel(
        "us.amazon.nova-micro-v1:0",
        region="eu-west-1",
        base_url=server.url,
        access_key_id="AKIDEXAMPLE",
        secret_access_key="SECRET/KEY",
        session_token="TOKEN",
        max_retries=0,
    )
    await _collect(model, {"prompt": [{"role": "user", "content": "hi"}]})
    sent = server.received[0]
    auth = sent.headers["authorization"]
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    fields = dict(f.strip().split("=", 1) for f in auth.removeprefix("AWS4-HMAC-SHA256 ").split(","))
    _, date, region, service, _ = fields["Credential"].split("/")
    assert (region, service) == ("eu-west-1", "bedrock")
    assert sent.headers["x-amz-security-token"] == "TOKEN"
    signed = fields["SignedHeaders"].split(";")
    assert {"host", "x-amz-date", "content-type"} <= set(signed)
    raw = json.dumps(sent.body, ensure_ascii=False, separators=(",", ":")).encode()
    canonical = "\n".join(
        [
            "POST",
            "/model/us.amazon.nova-micro-v1%253A0/converse-stream",
            "",
            *[f"{h}:{sent.headers[h].strip()}" for h in signed],
            "",
            fields["SignedHeaders"],
            hashlib.sha256(raw).hexdigest(),
        ]
    )
    string_to_sign = "\n".join(
        [
            "AWS4-HMAC-SHA256",
            sent.headers["x-amz-date"],
            f"{date}/eu-west-1/bedrock/aws4_request",
            hashlib.sha256(canonical.encode()).hexdigest(),
        ]
    )
    assert fields["Signature"] == _sigv4("SECRET/KEY", date, "eu-west-1", string_to_sign)
    assert "SECRET/KEY" not in repr(sent.headers)


def test_router(monkeypatch: pytest.MonkeyPatch) -> None:
    for env in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_BEARER_TOKEN_BEDROCK", "AWS_BEDROCK_BASE_URL"):
        monkeypatch.delenv(env, raising=False)
    with pytest.raises(MissingAPIKeyError, match="AWS_REGION"):
        resolve_model("bedrock/us.amazon.nova-micro-v1:0")
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-key")
    model = resolve_model("bedrock/us.amazon.nova-micro-v1:0")
    assert isinstance(model, BedrockModel)
    assert (
        model._url
        == "https://bedrock-runtime.us-west-2.amazonaws.com/model/us.amazon.nova-micro-v1%3A0/converse-stream"
    )
    monkeypatch.setenv("AWS_BEDROCK_BASE_URL", "http://127.0.0.1:9")
    model = resolve_model("bedrock/m")
    assert isinstance(model, BedrockModel) and model._url == "http://127.0.0.1:9/model/m/converse-stream"
