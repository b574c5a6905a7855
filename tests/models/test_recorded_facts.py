"""What each provider recording itself shows, against what our providers make of it.

`tests/data/provider-snapshots/` holds our own output (a regression snapshot that can agree with a
mistake). Here the facts come from the recording's raw SSE bytes, read by a small reader of this
file's own (not our providers' parser): each turn's text, the client tool calls (id, name, argument
text), the usage (input and output tokens) and the finish reason, in the provider's own words, with
the provider-to-AI-SDK finish-reason names written out below.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from ._cases import ANTHROPIC, CASES, CHAT, RECORDED_PROMPTS, RESPONSES
from ._drive import drive
from .conftest import ReplayServer, load
from .test_recordings import make

# The provider's finish reason -> the AI SDK's (LanguageModelV2FinishReason).
CHAT_FINISH = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool-calls",
    "content_filter": "content-filter",
}
ANTHROPIC_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool-calls",
    "max_tokens": "length",
}


@dataclass
class Facts:
    text: str = ""
    tool_calls: list[tuple[str, str, str]] = field(default_factory=list)  # (id, name, arguments)
    input_tokens: int | None = None
    output_tokens: int | None = None
    finish: str = "unknown"  # the AI SDK's name when the provider gives no reason


def sse_data(body: str) -> list[tuple[str | None, Any]]:
    """``(event name, parsed data)`` per SSE event; ``[DONE]`` and comment-only events dropped."""
    events: list[tuple[str | None, Any]] = []
    for block in re.split(r"\r?\n\r?\n", body):
        name, data = None, []
        for line in block.splitlines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
        if data and "\n".join(data).strip() != "[DONE]":
            events.append((name, json.loads("\n".join(data))))
    return events


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # Mistral's content parts: only "text" parts are answer text
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def chat_facts(body: str, *, think_tags: bool = False) -> Facts:
    facts, calls, errored = Facts(), {}, False
    for _, event in sse_data(body):
        errored = errored or "error" in event  # an in-stream error event ends the answer as "error"
        for choice in event.get("choices") or []:
            delta = choice.get("delta") or {}
            facts.text += _content_text(delta.get("content"))
            for call in delta.get("tool_calls") or []:
                slot = calls.setdefault(call["index"], ["", "", ""])
                slot[0] = slot[0] or call.get("id") or ""
                slot[1] = slot[1] or (call.get("function") or {}).get("name") or ""
                slot[2] += (call.get("function") or {}).get("arguments") or ""
            if choice.get("finish_reason"):
                facts.finish = CHAT_FINISH.get(choice["finish_reason"], "unknown")
        # Groq reports usage under ``x_groq``; the others at the top level (in the last chunk)
        usage = event.get("usage") or (event.get("x_groq") or {}).get("usage")
        if usage:
            facts.input_tokens = usage.get("prompt_tokens")
            facts.output_tokens = usage.get("completion_tokens")
    if errored:
        facts.finish = "error"
    if think_tags:
        facts.text = re.sub(r"<think>.*?</think>", "", facts.text, flags=re.DOTALL)
    facts.tool_calls = [tuple(calls[i]) for i in sorted(calls)]  # type: ignore[misc]
    return facts


def responses_facts(body: str) -> Facts:
    facts = Facts()
    for _, event in sse_data(body):
        kind = event.get("type")
        if kind == "response.output_text.delta":
            facts.text += event["delta"]
        elif kind == "response.output_item.done" and event["item"].get("type") == "function_call":
            item = event["item"]
            facts.tool_calls.append((item["call_id"], item["name"], item["arguments"]))
        elif kind in ("response.completed", "response.incomplete"):
            response = event["response"]
            facts.input_tokens = response["usage"]["input_tokens"]
            facts.output_tokens = response["usage"]["output_tokens"]
            reason = (response.get("incomplete_details") or {}).get("reason")
            if reason == "max_output_tokens":
                facts.finish = "length"
            elif reason == "content_filter":
                facts.finish = "content-filter"
            else:
                facts.finish = "tool-calls" if facts.tool_calls else "stop"
    return facts


def anthropic_facts(body: str) -> Facts:
    facts, blocks = Facts(), {}
    for _, event in sse_data(body):
        kind = event.get("type")
        if kind == "message_start":
            facts.input_tokens = event["message"]["usage"]["input_tokens"]
        elif kind == "content_block_start" and event["content_block"]["type"] == "tool_use":
            block = event["content_block"]
            blocks[event["index"]] = [block["id"], block["name"], ""]
        elif kind == "content_block_delta":
            delta = event["delta"]
            if delta["type"] == "text_delta":
                facts.text += delta["text"]
            elif delta["type"] == "input_json_delta" and event["index"] in blocks:
                blocks[event["index"]][2] += delta["partial_json"]
        elif kind == "message_delta":
            # The final count: with server tools the input grows past message_start's figure.
            facts.input_tokens = event["usage"].get("input_tokens", facts.input_tokens)
            facts.output_tokens = event["usage"]["output_tokens"]
            reason = event["delta"].get("stop_reason")
            facts.finish = ANTHROPIC_FINISH.get(reason, "unknown") if reason else "unknown"
    facts.tool_calls = [(i, n, a or "{}") for i, n, a in (blocks[k] for k in sorted(blocks))]
    return facts


def recorded_facts(api: str, body: str, options: dict[str, Any]) -> Facts:
    if api == CHAT:
        return chat_facts(body, think_tags=bool(options.get("parse_think_tags")))
    if api == RESPONSES:
        return responses_facts(body)
    assert api == ANTHROPIC
    return anthropic_facts(body)


def produced_facts(parts: list[dict[str, Any]]) -> Facts:
    finish = next(p for p in parts if p["type"] == "finish")
    return Facts(
        text="".join(p["delta"] for p in parts if p["type"] == "text-delta"),
        tool_calls=[
            (p["toolCallId"], p["toolName"], p["input"])
            for p in parts
            if p["type"] == "tool-call" and not p.get("providerExecuted")
        ],
        input_tokens=finish["usage"].get("inputTokens"),
        output_tokens=finish["usage"].get("outputTokens"),
        finish=finish["finishReason"],
    )


@pytest.mark.parametrize("name", sorted(CASES))
async def test_what_the_recording_shows(server: ReplayServer, name: str) -> None:
    api, base, options, turns = CASES[name]
    recording = load(name)
    model = make(api, server, recording, base, **options)
    outputs = await drive(server, model, recording, turns, recorded_prompts=name in RECORDED_PROMPTS)
    for turn, parts in enumerate(outputs):
        want = recorded_facts(api, recording["interactions"][turn]["response"]["body"], options)
        got = produced_facts(parts)
        assert got.text.strip() == want.text.strip(), f"turn {turn}: text"
        assert got.tool_calls == want.tool_calls, f"turn {turn}: tool calls"
        assert (got.input_tokens, got.output_tokens) == (want.input_tokens, want.output_tokens), (
            f"turn {turn}: usage"
        )
        assert got.finish == want.finish, f"turn {turn}: finish reason"


def test_the_reader_is_not_our_parser() -> None:
    """The reader above sees what a hand-read of a recording sees (the first OpenAI chat turn)."""
    body = load("openai-chat/tool-call-then-text-two-turns.json")["interactions"][0]["response"]["body"]
    facts = chat_facts(body)
    assert facts.tool_calls == [("call_ZR5UUuTt3pf61kjwAJIYdVMj", "get_capital", '{"country":"UK"}')]
    assert (facts.input_tokens, facts.output_tokens, facts.finish) == (53, 15, "tool-calls")
