"""Failure paths over a real loopback server: HTTP errors, retries, broken streams, aborts."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import quote

import pytest

from agentstream import AbortController, AbortError
from agentstream.models import AnthropicModel, APICallError, OpenAIChatModel, OpenAIResponsesModel

from .conftest import API_KEY, ReplayServer, Reply, load

PROMPT: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
CHUNK = 'data: {"id":"c1","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"%s"}}]}'


class SleepRecorder:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def chat(server: ReplayServer, **kw: Any) -> OpenAIChatModel:
    return OpenAIChatModel("gpt-4o", base_url=server.url + "/v1", api_key=API_KEY, **kw)


async def collect(model: Any, **options: Any) -> list[dict[str, Any]]:
    return [p async for p in model.do_stream({"prompt": PROMPT, **options})]


@pytest.mark.parametrize(
    ("name", "cls", "base", "status", "message"),
    [
        (
            "openai-chat/error-404-model-not-found.json",
            OpenAIChatModel,
            "/v1",
            404,
            "The model `gpt-5.2-proo` does not exist or you do not have access to it.",
        ),
        (
            "openai-chat/error-400-unsupported-value.json",
            OpenAIChatModel,
            "/v1",
            400,
            "Unsupported value: 'messages[0].role' does not support 'system' with this model.",
        ),
        (
            "groq/error-404-model-not-found.json",
            OpenAIChatModel,
            "/openai/v1",
            404,
            "The model `non-existent` does not exist or you do not have access to it.",
        ),
        (
            "openai-responses/error-400-stream-request.json",
            OpenAIResponsesModel,
            "/v1",
            400,
            "Invalid 'temperature': decimal below minimum value. Expected a value >= 0, but got -1 instead.",
        ),
        ("anthropic/error-404-not-found.json", AnthropicModel, "/v1", 404, "model: claude-sonet-4-5"),
        ("anthropic/error-400-invalid-request.json", AnthropicModel, "/v1", 400, None),
    ],
)
async def test_recorded_http_errors(
    server: ReplayServer, name: str, cls: Any, base: str, status: int, message: str | None
) -> None:
    recording = load(name)
    server.queue_recording(recording)
    body = recording["interactions"][0]["request"]["body"]
    sleep = SleepRecorder()
    model = cls(body["model"], base_url=server.url + base, api_key=API_KEY, sleep=sleep)
    parts = await collect(model)
    assert [p["type"] for p in parts] == ["error"]
    error = parts[0]["error"]
    assert isinstance(error, APICallError)
    assert error.status_code == status and not error.is_retryable
    expected = message or json.loads(recording["interactions"][0]["response"]["body"])["error"]["message"]
    assert error.message == expected
    assert str(error) == f"{model.provider} (status {status}): {expected}"
    assert (
        API_KEY not in str(error)
        and API_KEY not in repr(error)
        and API_KEY not in (error.response_body or "")
    )
    assert sleep.delays == []  # 4xx is not retried
    assert server.received[0].path == recording["interactions"][0]["request"]["path"]
    assert API_KEY in (
        server.received[0].headers.get("authorization", "") + server.received[0].headers.get("x-api-key", "")
    )


async def test_401_error_never_contains_the_key_even_if_echoed(server: ReplayServer) -> None:
    echoed = {
        "error": {
            "message": f"Incorrect API key provided: {API_KEY}.",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }
    }
    server.replies.append(Reply(status=401, content_type="application/json", body=json.dumps(echoed)))
    [part] = await collect(chat(server))
    error = part["error"]
    assert error.status_code == 401
    assert error.message == "Incorrect API key provided: ***."
    for text in (str(error), repr(error), error.message, error.response_body or ""):
        assert API_KEY not in text


async def test_429_then_200_is_retried_with_backoff_and_retry_after(server: ReplayServer) -> None:
    rate_limited = json.dumps({"error": {"message": "Rate limit reached", "type": "requests"}})
    server.replies.append(Reply(status=429, content_type="application/json", body=rate_limited))
    server.replies.append(
        Reply(status=503, content_type="application/json", body="{}", headers={"retry-after": "3"})
    )
    server.queue_recording(load("openai-chat/text-stream-usage.json"))
    sleep = SleepRecorder()
    parts = await collect(chat(server, sleep=sleep))
    assert sleep.delays == [0.5, 3.0]  # 0.5·2^0, then the server's retry-after
    assert len(server.received) == 3
    assert parts[0]["type"] == "stream-start" and parts[-1]["finishReason"] == "stop"
    assert (
        "".join(p["delta"] for p in parts if p["type"] == "text-delta")
        == "The capital of Mexico is Mexico City."
    )


async def test_retries_exhausted_gives_the_last_error(server: ReplayServer) -> None:
    for _ in range(3):
        server.replies.append(
            Reply(status=500, content_type="application/json", body='{"error": {"message": "boom"}}')
        )
    sleep = SleepRecorder()
    [part] = await collect(chat(server, sleep=sleep))
    assert sleep.delays == [0.5, 1.0]
    assert part["error"].status_code == 500 and part["error"].message == "boom" and part["error"].is_retryable


async def test_connection_refused_is_retried_then_reported() -> None:
    srv = ReplayServer()
    await srv.start()
    url = srv.url
    await srv.stop()  # nothing listens on this port any more
    sleep = SleepRecorder()
    model = OpenAIChatModel("m", base_url=url, api_key=API_KEY, sleep=sleep)
    [part] = await collect(model)
    assert sleep.delays == [0.5, 1.0]
    assert part["error"].status_code is None and "cannot connect" in part["error"].message


async def test_connection_cut_mid_stream_yields_error_not_hang(server: ReplayServer) -> None:
    body = load("openai-chat/text-stream-usage.json")["interactions"][0]["response"]["body"]
    server.replies.append(Reply(body=body, cut_after_events=4))
    sleep = SleepRecorder()
    parts = await asyncio.wait_for(collect(chat(server, sleep=sleep)), timeout=30)
    types = [p["type"] for p in parts]
    assert types == [
        "stream-start",
        "response-metadata",
        "text-start",
        "text-delta",
        "text-delta",
        "text-delta",
        "error",
    ]
    error = parts[-1]["error"]
    assert isinstance(error, APICallError) and "connection lost mid-stream" in error.message
    assert sleep.delays == []  # never retried once parts were yielded


async def test_malformed_json_event_is_an_error_part(server: ReplayServer) -> None:
    body = (
        "\n\n".join([CHUNK % "Hel", 'data: {"id": "c1", "choices": [', CHUNK % "lo", "data: [DONE]"]) + "\n\n"
    )
    server.replies.append(Reply(body=body))
    parts = await collect(chat(server))
    assert [p["type"] for p in parts] == [
        "stream-start",
        "response-metadata",
        "text-start",
        "text-delta",
        "error",
        "text-delta",
        "text-end",
        "finish",
    ]
    error = parts[4]["error"]
    assert "Invalid JSON in SSE event data" in error.message and '{"id": "c1", "choices": [' in error.message
    assert parts[-1]["finishReason"] == "error"


async def test_non_sse_200_response_is_an_error(server: ReplayServer) -> None:
    server.replies.append(Reply(content_type="text/html", body="<html>proxy login</html>"))
    parts = await collect(chat(server))
    assert [p["type"] for p in parts] == ["stream-start", "error"]
    assert "expected an SSE stream" in parts[1]["error"].message


async def test_abort_mid_stream_cancels_the_request(server: ReplayServer) -> None:
    body = load("openai-chat/text-stream-usage.json")["interactions"][0]["response"]["body"]
    server.replies.append(Reply(body=body, hang_after_events=3))
    controller = AbortController()
    seen: list[str] = []
    with pytest.raises(AbortError):
        async for part in chat(server).do_stream({"prompt": PROMPT, "abort_signal": controller.signal}):
            seen.append(part["type"])
            if part["type"] == "text-delta":
                await server.hung.wait()  # the server now holds the stream open, sending nothing
                controller.abort()
    assert seen == ["stream-start", "response-metadata", "text-start", "text-delta"]
    await asyncio.wait_for(server.closed_by_client.wait(), timeout=30)  # the socket was closed


async def test_already_aborted_signal_sends_nothing(server: ReplayServer) -> None:
    controller = AbortController()
    controller.abort()
    with pytest.raises(AbortError):
        await collect(chat(server), abort_signal=controller.signal)
    assert server.received == []


async def test_abort_during_retry_sleep(server: ReplayServer) -> None:
    server.replies.append(Reply(status=503, content_type="application/json", body="{}"))
    controller = AbortController()

    async def sleep(delay: float) -> None:
        controller.abort()
        await asyncio.Event().wait()  # would sleep forever

    with pytest.raises(AbortError):
        await collect(chat(server, sleep=sleep), abort_signal=controller.signal)


async def test_consumer_closing_early_closes_the_connection(server: ReplayServer) -> None:
    body = load("openai-chat/text-stream-usage.json")["interactions"][0]["response"]["body"]
    server.replies.append(Reply(body=body, hang_after_events=3))
    controller = AbortController()  # signal present: exercises the reader-task path too
    stream = chat(server).do_stream({"prompt": PROMPT, "abort_signal": controller.signal})
    async for part in stream:
        if part["type"] == "text-delta":
            break
    await stream.aclose()  # type: ignore[attr-defined]
    await asyncio.wait_for(server.closed_by_client.wait(), timeout=30)


# --- a stream that stops early: never retried once parts are out, one error part ---------------

TEXT = "\n\n".join([CHUNK % "Hello ", CHUNK % "world"]) + "\n\n"  # no finish_reason, no [DONE]


async def test_stream_ending_without_done_is_one_error_part_and_no_retry(server: ReplayServer) -> None:
    server.replies += [Reply(body=TEXT), Reply(body=TEXT)]
    sleep = SleepRecorder()
    parts = await collect(chat(server, sleep=sleep))
    assert [p["type"] for p in parts] == [
        "stream-start",
        "response-metadata",
        "text-start",
        "text-delta",
        "text-delta",
        "error",
    ]
    error = parts[-1]["error"]
    assert error.message == "the response stream ended before [DONE]" and not error.is_retryable
    assert len(server.received) == 1 and sleep.delays == []


async def test_agent_calls_the_model_once_for_a_cut_stream(server: ReplayServer) -> None:
    # The reported bug: finish "unknown" made the loop call the model again, 5 times in one message.
    from agentstream import Agent

    server.replies += [Reply(body=TEXT) for _ in range(5)]
    output = Agent(id="a", instructions="Be brief.", model=chat(server, sleep=SleepRecorder())).stream("hi")
    chunks = [c async for c in output.full_stream]
    assert len(server.received) == 1
    assert await output.text == "Hello world"
    assert [c.type for c in chunks].count("error") == 1
    assert [c.type for c in chunks].count("step-start") == 1


@pytest.mark.parametrize(
    ("name", "cls", "marker", "drop"),
    [
        ("anthropic/text-minimal.json", AnthropicModel, "message_stop", 3),  # cut before message_delta
        ("openai-responses/text-with-logprobs.json", OpenAIResponsesModel, "response.completed", 1),
    ],
)
async def test_every_provider_reports_a_missing_end_marker(
    server: ReplayServer, name: str, cls: Any, marker: str, drop: int
) -> None:
    recording = load(name)
    events = [e for e in recording["interactions"][0]["response"]["body"].split("\n\n") if e.strip()]
    server.replies.append(Reply(body="\n\n".join(events[:-drop]) + "\n\n"))
    model = cls(
        recording["interactions"][0]["request"]["body"]["model"],
        base_url=server.url + "/v1",
        api_key=API_KEY,
        sleep=SleepRecorder(),
    )
    parts = await collect(model)
    assert parts[-1]["type"] == "error" and "finish" not in [p["type"] for p in parts]
    assert parts[-1]["error"].message == f"the response stream ended before {marker}"
    assert any(p["type"] == "text-delta" for p in parts)
    assert len(server.received) == 1


async def test_cut_before_the_first_event_is_retried(server: ReplayServer) -> None:
    body = load("openai-chat/text-stream-usage.json")["interactions"][0]["response"]["body"]
    server.replies += [Reply(body=body, cut_after_events=0), Reply(body=""), Reply(body=body)]
    sleep = SleepRecorder()
    parts = await collect(chat(server, sleep=sleep))
    assert len(server.received) == 3 and sleep.delays == [0.5, 1.0]
    assert [p["type"] for p in parts].count("stream-start") == 1 and parts[-1]["finishReason"] == "stop"
    assert (
        "".join(p["delta"] for p in parts if p["type"] == "text-delta")
        == "The capital of Mexico is Mexico City."
    )


async def test_cut_before_the_first_event_every_time_is_one_error(server: ReplayServer) -> None:
    server.replies += [Reply(body="") for _ in range(3)]
    parts = await collect(chat(server, sleep=SleepRecorder()))
    assert [p["type"] for p in parts] == ["error"]
    assert parts[0]["error"].message == "the response stream ended before [DONE]"
    assert len(server.received) == 3


# --- what an error says, and to whom ------------------------------------------------------------


async def test_connection_error_names_the_url_without_secrets() -> None:
    srv = ReplayServer()
    await srv.start()
    url = srv.url
    await srv.stop()
    model = OpenAIChatModel(
        "m",
        base_url=f"http://user:{API_KEY}@{url[7:]}/v1",
        api_key=API_KEY,
        sleep=SleepRecorder(),
        max_retries=0,
    )
    [part] = await collect(model)
    error = part["error"]
    assert str(error).startswith("openai: cannot connect: ")
    assert str(error).endswith(f"({url}/v1/chat/completions)")  # the URL that failed, without user info
    assert url not in error.client_message  # what a client may see has no URL
    assert API_KEY not in str(error) + repr(error) + error.url


async def test_error_keeps_response_headers_and_redacts_every_spelling(server: ReplayServer) -> None:
    key = "sk-a/b+c=d&e0123456789"
    body = json.dumps({"error": {"message": f"bad key {key}"}, "url": f"?k={quote(key, safe='')}"})
    server.replies.append(
        Reply(
            status=401,
            content_type="application/json",
            body=body.replace("/", "\\/"),
            headers={"x-request-id": "req-1"},
        )
    )
    model = OpenAIChatModel("m", base_url=server.url + "/v1", api_key=key, sleep=SleepRecorder())
    [part] = await collect(model)
    error = part["error"]
    assert error.message == "bad key ***"
    assert error.response_headers["x-request-id"] == "req-1"
    for text in (str(error), error.response_body or "", json.dumps(error.data)):
        assert key not in text and quote(key, safe="") not in text and key.replace("/", "\\/") not in text
