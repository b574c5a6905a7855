"""Whole ``handleChatStream`` conversations (``conformance/aisdk/chat-*.json``, ``kind: handleChatStream``).

Each action's requests are the exact JSON a real ``ai`` chat client sent. They go to
``handle_chat_stream`` over an agent whose model answers each call with the recording's next
``modelSteps`` entry; the UI chunks must match ``expectedUiChunks``. The server's random ids (the
recording's ``<id:N>``) are learned from our responses and put into the later requests, as the
client would have done.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agentstream import Mastra
from agentstream.agent import Agent
from agentstream.ai_sdk import handle_chat_stream
from agentstream.testing import ScriptedModel
from tests.agent.vector_tools import tools_for
from tests.conformance import load, params, vector_files

CHATS = [p for p in vector_files("aisdk") if load(p).get("kind") == "handleChatStream"]
_PLACEHOLDER = re.compile(r"<id:\d+>")


def _learn(expected: Any, actual: Any, ids: dict[str, str]) -> None:
    """Record which of our ids stand where the recording has ``<id:N>`` (inside strings too)."""
    if isinstance(expected, str) and isinstance(actual, str) and _PLACEHOLDER.search(expected):
        names = _PLACEHOLDER.findall(expected)
        pattern = "^" + "(.+?)".join(re.escape(part) for part in _PLACEHOLDER.split(expected)) + "$"
        match = re.match(pattern, actual)
        if match:
            for name, value in zip(names, match.groups(), strict=True):
                ids.setdefault(name, value)
    elif isinstance(expected, dict) and isinstance(actual, dict):
        for key in expected.keys() & actual.keys():
            _learn(expected[key], actual[key], ids)
    elif isinstance(expected, list) and isinstance(actual, list):
        for e, a in zip(expected, actual, strict=False):
            _learn(e, a, ids)


def _substitute(value: Any, ids: dict[str, str]) -> Any:
    text = json.dumps(value)
    for name, actual in ids.items():
        text = text.replace(name, actual)
    return json.loads(text)


def _agent(vector: dict[str, Any], model: ScriptedModel) -> Agent:
    spec = vector["agent"]
    return Agent(
        id=spec["id"],
        name=spec["name"],
        instructions=spec["instructions"],
        model=model,
        tools=tools_for(vector),
    )


def _snake(options: dict[str, Any]) -> dict[str, Any]:
    return {re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower(): value for key, value in options.items()}


@pytest.mark.parametrize("path", params("aisdk", CHATS))
async def test_conversation(path: Path) -> None:
    vector = load(path)
    model = ScriptedModel(vector["modelSteps"])
    agent = _agent(vector, model)
    mastra = Mastra(agents={vector["agent"]["registeredAs"]: agent})
    server = vector["server"]
    ids: dict[str, str] = {}
    for action in vector["actions"]:
        for exchange in action["exchanges"]:
            body = _substitute(exchange["request"]["body"], ids)
            parts = [
                part
                async for part in await handle_chat_stream(
                    mastra=mastra,
                    agent_id=vector["agent"]["id"],
                    params=body,
                    version=server["version"],
                    default_options=_snake(server.get("defaultOptions") or {}),
                )
            ]
            expected = exchange["expectedUiChunks"]
            _learn(expected, parts, ids)
            assert _substitute(expected, ids) == parts
