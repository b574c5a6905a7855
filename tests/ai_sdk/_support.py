"""Shared helpers for the AI SDK tests: vector inputs as Python chunks, and the real node clients."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from agentstream.chunks import decode_chunk
from tests import _services

REPO = Path(__file__).resolve().parents[2]
CLIENTS = REPO / ".cache" / "clients"

# JavaScript's built-in Error classes keep ``name`` on the prototype (not an own property), so
# JSON.stringify sees nothing; any other name was set on the instance and is serialised.
_JS_BUILTIN_ERRORS = {
    "Error",
    "TypeError",
    "RangeError",
    "SyntaxError",
    "ReferenceError",
    "EvalError",
    "URIError",
    "AggregateError",
}


def make_error(spec: dict[str, Any]) -> BaseException:
    """An exception instance for a vector's ``{"$error": {name, message, ...}}``."""
    name = spec.get("name", "Error")
    # A dynamically named Exception subclass: the class name plays JavaScript's prototype ``name``.
    cls = type(name, (Exception,), {})
    error = cls(spec.get("message", ""))
    if name not in _JS_BUILTIN_ERRORS:
        error.name = name  # an own property, as a custom JS error class sets it
    for key, value in spec.items():
        if key not in ("name", "message", "stack"):
            setattr(error, key, from_vector(value))
    return error


def from_vector(value: Any) -> Any:
    """A vector value as a Python producer would hold it: exceptions, bytes, ISO dates."""
    if isinstance(value, list):
        return [from_vector(v) for v in value if not _undefined(v)]
    if isinstance(value, dict):
        if len(value) == 1:
            ((key, inner),) = value.items()
            if key == "$date":
                return inner
            if key == "$bytes":
                return base64.b64decode(inner)
            if key == "$error":
                return make_error(inner)
        return {k: from_vector(v) for k, v in value.items() if not _undefined(v)}
    return value


def _undefined(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and value.get("$undefined") is True


async def chunks_of(vector: dict[str, Any]) -> AsyncIterator[Any]:
    """The vector's input, decoded one chunk at a time (a bad chunk fails mid-stream, as in Mastra)."""
    for raw in vector["input"]:
        yield decode_chunk(from_vector(raw), unknown="keep")


def _masked(e: Any) -> str:
    message = str(e) if isinstance(e, BaseException) else None
    return "masked: " + (message if message else str(e))


# Python equivalents of the vectors' JavaScript function options.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    '({ part }) => (part.type === "finish" ? { usage: part.totalUsage, reason: part.finishReason } : undefined)': (
        lambda part: (
            {"usage": part["totalUsage"], "reason": part["finishReason"]}
            if part["type"] == "finish"
            else None
        )
    ),
    "({ part }) => ({ seen: part.type })": lambda part: {"seen": part["type"]},
    '(e) => "masked: " + (e && e.message ? e.message : String(e))': _masked,
}


def options_of(vector: dict[str, Any]) -> dict[str, Any]:
    """``to_ai_sdk_stream`` keyword arguments for a vector's camelCase options."""
    names = {
        "version": "version",
        "sendReasoning": "send_reasoning",
        "sendSources": "send_sources",
        "sendStart": "send_start",
        "sendFinish": "send_finish",
        "lastMessageId": "last_message_id",
        "messageMetadata": "message_metadata",
        "onError": "on_error",
        "experimentalTransform": "experimental_transform",
        "includeSubAgentMetadata": "include_sub_agent_metadata",
    }
    out: dict[str, Any] = {}
    for key, value in vector["options"].items():
        if key not in names:
            raise AssertionError(f"unmapped option {key!r} in {vector['name']}")
        if isinstance(value, dict) and "fn" in value:
            value = FUNCTIONS[value["fn"]]
        elif key == "experimentalTransform":
            value = smooth_factory(value["smooth"])
        out[names[key]] = value
    return out


def smooth_factory(options: dict[str, Any]) -> Any:
    from agentstream import ai_sdk

    smooth_stream = ai_sdk.smooth_stream
    kwargs: dict[str, Any] = {}
    if "delayInMs" in options:
        kwargs["delay_in_ms"] = options["delayInMs"]
    if "chunking" in options:
        kwargs["chunking"] = options["chunking"]
    return smooth_stream(**kwargs)


def require_clients() -> Path:
    """The installed client checks (installed on first use); the run ends with one line without node."""
    _services.require("node")
    return CLIENTS


def replay(body: bytes, client: str = "v7", *, strict: bool = False) -> tuple[int, dict[str, Any]]:
    """Run ``node node-client.mjs --replay`` (the real ``ai`` client) on an SSE body."""
    clients = require_clients()
    with tempfile.NamedTemporaryFile("wb", suffix=".sse", delete=False) as f:
        f.write(body)
        path = f.name
    try:
        args = ["node", str(clients / "node-client.mjs"), "--replay", path, "--ai", client]
        if strict:
            args.append("--strict")
        result = subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=clients)
    finally:
        os.unlink(path)
    return result.returncode, json.loads(result.stdout)
