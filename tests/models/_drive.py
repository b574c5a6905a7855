"""Drive a provider through every turn of a recording, building each next prompt from its own output."""

from __future__ import annotations

import json
from typing import Any

from agentstream.models import CallOptions

from .conftest import ReplayServer


def v2_tools(body: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for tool in body.get("tools") or []:
        if "function" in tool:  # chat completions
            fn = tool["function"]
            out.append(
                {
                    "type": "function",
                    "name": fn["name"],
                    "description": fn.get("description", ""),
                    "inputSchema": fn.get("parameters"),
                }
            )
        elif tool.get("type") == "function":  # responses
            out.append(
                {
                    "type": "function",
                    "name": tool["name"],
                    "description": tool.get("description", ""),
                    "inputSchema": tool.get("parameters"),
                }
            )
        elif "input_schema" in tool:  # anthropic custom tool
            out.append(
                {
                    "type": "function",
                    "name": tool["name"],
                    "description": tool.get("description", ""),
                    "inputSchema": tool["input_schema"],
                }
            )
    return out


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, dict))


def first_prompt(body: dict[str, Any]) -> list[dict[str, Any]]:
    prompt = []
    for m in body.get("messages") or body.get("input") or []:
        role = m.get("role")
        if role in ("system", "developer"):
            prompt.append({"role": "system", "content": _text(m["content"])})
        elif role == "user":
            prompt.append({"role": "user", "content": [{"type": "text", "text": _text(m["content"])}]})
    return prompt


def prompt_from_chat_request(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A recorded Chat Completions request's messages as a V2 prompt (for turns the client did not derive)."""
    prompt: list[dict[str, Any]] = []
    for m in body["messages"]:
        if m["role"] in ("system", "user"):
            prompt.extend(first_prompt({"messages": [m]}))
        elif m["role"] == "assistant":
            content: list[dict[str, Any]] = [{"type": "text", "text": m.get("content") or ""}]
            for tc in m.get("tool_calls") or []:
                content.append(
                    {
                        "type": "tool-call",
                        "toolCallId": tc["id"],
                        "toolName": tc["function"]["name"],
                        "input": json.loads(tc["function"]["arguments"]),
                    }
                )
            prompt.append({"role": "assistant", "content": content})
        elif m["role"] == "tool":
            prompt.append(
                {
                    "role": "tool",
                    "content": [
                        {
                            "type": "tool-result",
                            "toolCallId": m["tool_call_id"],
                            "toolName": "",
                            "output": {"type": "text", "value": m["content"]},
                        }
                    ],
                }
            )
    return prompt


def tool_choice(body: dict[str, Any]) -> dict[str, Any] | None:
    choice = body.get("tool_choice")
    if choice in ("auto", "none", "required"):
        return {"type": choice}
    if isinstance(choice, dict) and choice.get("type") in ("auto", "any"):
        return {"type": "auto" if choice["type"] == "auto" else "required"}
    return None


def next_prompt(prompt: list[dict[str, Any]], parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Append the assistant turn made of ``parts`` and a tool result for every client tool call."""
    content: list[dict[str, Any]] = []
    by_id: dict[str, dict[str, Any]] = {}
    results = []
    for part in parts:
        kind = part["type"]
        if kind in ("text-start", "reasoning-start"):
            entry: dict[str, Any] = {"type": kind.split("-")[0], "text": ""}
            meta = part.get("providerMetadata")
            if meta:
                entry["providerOptions"] = json.loads(json.dumps(meta))
            by_id[part["id"]] = entry
            content.append(entry)
        elif kind in ("text-delta", "reasoning-delta"):
            entry = by_id[part["id"]]
            entry["text"] += part["delta"]
            for key, value in (part.get("providerMetadata") or {}).items():
                entry.setdefault("providerOptions", {}).setdefault(key, {}).update(value)
        elif kind == "tool-call":
            call = {
                "type": "tool-call",
                "toolCallId": part["toolCallId"],
                "toolName": part["toolName"],
                "input": json.loads(part["input"]),
            }
            if part.get("providerExecuted"):
                call["providerExecuted"] = True
            else:
                results.append(
                    {
                        "type": "tool-result",
                        "toolCallId": part["toolCallId"],
                        "toolName": part["toolName"],
                        "output": {"type": "text", "value": "ok"},
                    }
                )
            if part.get("providerMetadata"):
                call["providerOptions"] = part["providerMetadata"]
            content.append(call)
        elif kind == "tool-result":
            content.append(
                {
                    "type": "tool-result",
                    "toolCallId": part["toolCallId"],
                    "toolName": part["toolName"],
                    "output": {"type": "json", "value": part["result"]},
                }
            )
    out = [*prompt, {"role": "assistant", "content": content}]
    if results:
        out.append({"role": "tool", "content": results})
    return out


async def drive(
    server: ReplayServer,
    model: Any,
    recording: dict[str, Any],
    turns: int | None = None,
    recorded_prompts: bool = False,
    **options: Any,
) -> list[list[dict[str, Any]]]:
    """Run ``turns`` turns (default: all) and check each request against the recorded one."""
    interactions = recording["interactions"][: turns or len(recording["interactions"])]
    server.queue_recording({"interactions": interactions})
    first = interactions[0]["request"]["body"]
    prompt = first_prompt(first)
    call: CallOptions = {"prompt": prompt, **options}  # type: ignore[typeddict-item]
    if first.get("tools"):
        call["tools"] = v2_tools(first)
        call["tool_choice"] = tool_choice(first)
    outputs = []
    for n, interaction in enumerate(interactions):
        if recorded_prompts:
            prompt = prompt_from_chat_request(interaction["request"]["body"])
        call["prompt"] = prompt
        parts = [part async for part in model.do_stream(call)]
        outputs.append(parts)
        got, want = server.received[n], interaction["request"]
        assert (got.method, got.path) == (want["method"], want["path"])
        assert got.body["model"] == want["body"]["model"]
        assert got.body["stream"] is True
        key = "messages" if "messages" in want["body"] else "input"
        assert len(got.body[key]) == len(want["body"][key]), (got.body[key], want["body"][key])
        assert [t.get("name") or t.get("function", {}).get("name") for t in got.body.get("tools", [])] == [
            t.get("name") or t.get("function", {}).get("name")
            for t in want["body"].get("tools", [])
            if "function" in t or t.get("type") == "function" or "input_schema" in t
        ]
        prompt = next_prompt(prompt, parts)
    return outputs
