"""The real AI SDK clients (``node-client.mjs``: ai@7 ``Chat``, ai@6, ai@5, ai@6.0.230 strict) against a
live ``chat_route`` on loopback: one uvicorn server per scenario, every client version per scenario.

Each scenario scripts the model (``LanguageModelV2`` stream parts), sends what ``useChat`` sends and
asserts the message the real client assembled, part by part, plus what the model was prompted with.
Every run exits 0 except the error scenarios: an ``error`` chunk is what makes useChat show an error,
and node-client reports that with exit code 1 (see ``check_error``). Needs node and the installed
clients (``scripts/clients.sh``): skipped without them, a failure when ``CI`` is set.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette

from agentstream import Mastra, tool
from agentstream.agent import Agent
from agentstream.models._base import CallOptions
from agentstream.server import chat_route
from agentstream.testing import RecordedCall, ScriptedModel
from tests.ai_sdk._support import require_clients

CLIENTS = ["v7", "v6", "v5", "v6-strict"]
USAGE = {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}
START = {"type": "stream-start", "warnings": []}


def finish(reason: str = "stop") -> dict[str, Any]:
    return {"type": "finish", "finishReason": reason, "usage": USAGE}


def text(*deltas: str, id: str = "t1") -> list[dict[str, Any]]:
    return [
        {"type": "text-start", "id": id},
        *({"type": "text-delta", "id": id, "delta": d} for d in deltas),
        {"type": "text-end", "id": id},
    ]


@tool
def weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "temperatureC": 21, "sky": "sunny"}


class ReplayingModel:
    """A ``ScriptedModel`` per client run: :meth:`reset` rewinds the script before each run."""

    specification_version = "v2"
    provider = "mock-provider"
    model_id = "mock-model-id"

    def __init__(self, steps: list[Any]) -> None:
        self._steps = steps
        self.current = ScriptedModel(steps)

    def reset(self) -> None:
        self.current = ScriptedModel(self._steps)

    @property
    def calls(self) -> list[RecordedCall]:
        return self.current.calls

    def do_stream(self, options: CallOptions) -> Any:
        return self.current.do_stream(options)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serve(model: ReplayingModel) -> Iterator[str]:
    import uvicorn

    mastra = Mastra(
        agents={"weather": Agent(id="weather", instructions="Be brief.", model=model, tools=[weather])}
    )
    route = chat_route(
        mastra, "/api/chat", agent="weather", heartbeat_ms=50, send_reasoning=True, send_sources=True
    )
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(Starlette(routes=[route]), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 10
    while not server.started and time.time() < deadline:
        time.sleep(0.02)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}/api/chat"
    finally:
        server.should_exit = True
        thread.join(5)


def run_client(url: str, client: str, body: dict[str, Any] | None, prompt: str) -> tuple[int, dict[str, Any]]:
    """Run ``node-client.mjs`` (``--chunks``: the report lists the parsed SSE chunks too)."""
    clients = require_clients()
    with tempfile.TemporaryDirectory() as tmp:
        # --strict: a failed conformance check (no [DONE], unbalanced steps, ...) fails the run too.
        args = ["node", str(clients / "node-client.mjs"), url, "--ai", client, "--chunks", "--strict"]
        if body is None:
            args += ["--prompt", prompt]
        else:
            path = Path(tmp) / "body.json"
            path.write_text(json.dumps(body))
            args.append(f"@{path}")
        result = subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=clients)
    try:
        report = json.loads(result.stdout)
    except ValueError:
        pytest.fail(f"node-client printed no report (exit {result.returncode}): {result.stderr[-2000:]}")
    report["_stderr"] = result.stderr
    return result.returncode, report


# --- scenarios -----------------------------------------------------------------------------------

Check = Callable[[dict[str, Any], list[RecordedCall], str], None]


@dataclass
class Scenario:
    steps: list[Any]
    check: Check
    body: dict[str, Any] | None = None  # posted verbatim (its messages seed the chat); None: --prompt
    prompt: str = "Weather in Berlin?"
    exit_code: int = 0


SYSTEM = {"role": "system", "content": "Be brief."}
ASK = {"role": "user", "content": [{"type": "text", "text": "Weather in Berlin?"}]}
WEATHER = {"city": "Berlin", "temperatureC": 21, "sky": "sunny"}


def chunk_types(report: dict[str, Any]) -> list[str]:
    return [e["chunk"]["type"] for e in report["chunks"] if "chunk" in e]


def assistant_parts(report: dict[str, Any], *, after: str = "user") -> list[dict[str, Any]]:
    assert report["status"] == "ready" and report["error"] is None, report["error"]
    assert [m["role"] for m in report["messages"]][-2:] == [after, "assistant"]
    parts: list[dict[str, Any]] = report["assistantMessage"]["parts"]
    return parts


def check_plain(report: dict[str, Any], calls: list[RecordedCall], client: str) -> None:
    assert assistant_parts(report) == [
        {"type": "step-start"},
        {"type": "text", "text": "Sunny in Berlin.", "state": "done"},
    ]
    assert [c.prompt for c in calls] == [[SYSTEM, ASK]]


def check_reasoning(report: dict[str, Any], calls: list[RecordedCall], client: str) -> None:
    reasoning: dict[str, Any] = {"type": "reasoning", "text": "Berlin is in Germany.", "state": "done"}
    if client != "v6-strict":
        # ai@5.0.277, ai@6.0.326 and ai@7 keep the reasoning-start id on the part; ai@6.0.230 does not.
        reasoning = {"type": "reasoning", "id": "r1", **reasoning}
    assert assistant_parts(report) == [
        {"type": "step-start"},
        reasoning,
        {"type": "text", "text": "Sunny.", "state": "done"},
    ]
    assert chunk_types(report).count("reasoning-delta") == 2


def check_tool(report: dict[str, Any], calls: list[RecordedCall], client: str) -> None:
    assert assistant_parts(report) == [
        {"type": "step-start"},
        {
            "type": "tool-weather",
            "toolCallId": "call-1",
            "state": "output-available",
            "input": {"city": "Berlin"},
            "output": WEATHER,  # what the Python tool returned
        },
        {"type": "step-start"},
        {"type": "text", "text": "21°C and sunny.", "state": "done"},
    ]
    types = chunk_types(report)
    # The call's input streamed (start, two deltas) before the parsed input and the tool's output.
    tool_chunks = [t for t in types if t.startswith("tool-")]
    assert tool_chunks == [
        "tool-input-start",
        "tool-input-delta",
        "tool-input-delta",
        "tool-input-available",
        "tool-output-available",
    ]
    assert types.count("start-step") == 2
    # The second model call answers from the tool result.
    assert len(calls) == 2
    call, result = calls[1].prompt[-2:]
    assert call == {
        "role": "assistant",
        "content": [
            {"type": "tool-call", "toolCallId": "call-1", "toolName": "weather", "input": {"city": "Berlin"}}
        ],
    }
    assert result["role"] == "tool"
    assert [{k: p[k] for k in ("type", "toolCallId", "toolName", "output")} for p in result["content"]] == [
        {
            "type": "tool-result",
            "toolCallId": "call-1",
            "toolName": "weather",
            "output": {"type": "json", "value": WEATHER},
        }
    ]


def check_sources(report: dict[str, Any], calls: list[RecordedCall], client: str) -> None:
    assert assistant_parts(report) == [
        {"type": "step-start"},
        {"type": "source-url", "sourceId": "s1", "url": "https://example.com/berlin", "title": "Berlin"},
        {"type": "text", "text": "Sunny.", "state": "done"},
    ]


HISTORY: list[dict[str, Any]] = [
    {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Weather in Berlin?"}]},
    {
        "id": "a1",
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {
                "type": "tool-weather",
                "toolCallId": "call-1",
                "state": "output-available",
                "input": {"city": "Berlin"},
                "output": WEATHER,
            },
            {"type": "step-start"},
            {"type": "text", "text": "21°C and sunny.", "state": "done"},
        ],
    },
]
FOLLOW_UP = {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "And tomorrow?"}]}


def check_multi_turn(report: dict[str, Any], calls: list[RecordedCall], client: str) -> None:
    assert assistant_parts(report) == [
        {"type": "step-start"},
        {"type": "text", "text": "Cloudy tomorrow.", "state": "done"},
    ]
    # The history stays as sent and the answer is a new message after the follow-up question.
    assert report["messages"][:3] == [*HISTORY, FOLLOW_UP]
    assert len(report["messages"]) == 4 and report["assistantMessage"]["id"] not in ("a1", "u2")
    # The model saw the converted history: one assistant message per step, the tool result between.
    assert [c.prompt for c in calls] == [
        [
            SYSTEM,
            ASK,
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool-call",
                        "toolCallId": "call-1",
                        "toolName": "weather",
                        "input": {"city": "Berlin"},
                    }
                ],
            },
            {
                "role": "tool",
                "content": [
                    {
                        "type": "tool-result",
                        "toolCallId": "call-1",
                        "toolName": "weather",
                        "output": {"type": "json", "value": WEATHER},
                    }
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "21°C and sunny."}]},
            {"role": "user", "content": [{"type": "text", "text": "And tomorrow?"}]},
        ]
    ]


def check_regenerate(report: dict[str, Any], calls: list[RecordedCall], client: str) -> None:
    # The server dropped the trailing assistant message: the model only saw the question ...
    assert [c.prompt for c in calls] == [[SYSTEM, ASK]]
    # ... and answered as a new message (a new id, not a continuation of "a1").
    start = report["chunks"][0]["chunk"]
    assert start["type"] == "start" and start["messageId"] != "a1"
    # node-client regenerates as useChat's regenerate() does: the client drops "a1" before it sends,
    # so the chat ends with the question and the new answer, and every check passes (--strict).
    assert report["mode"] == "regenerate"
    assert report["messages"][:1] == HISTORY[:1]
    assert len(report["messages"]) == 2
    assert report["assistantMessage"]["id"] == start["messageId"]
    assert assistant_parts(report) == [
        {"type": "step-start"},
        {"type": "text", "text": "Regenerated.", "state": "done"},
    ]


ERROR_TEXT = "Error: upstream exploded"


def check_error(report: dict[str, Any], calls: list[RecordedCall], client: str) -> None:
    # An ``error`` chunk is what makes useChat show an error: node-client exits 1 with status
    # "error" for it (its documented semantics), so this scenario asserts that instead of exit 0.
    assert report["status"] == "error"
    assert report["error"]["kind"] == "error-chunk"  # the server sent {"type": "error"}
    assert report["error"]["message"] == ERROR_TEXT
    errors = [e["chunk"] for e in report["chunks"] if e.get("chunk", {}).get("type") == "error"]
    assert errors == [{"type": "error", "errorText": ERROR_TEXT}]
    # Nothing else failed: a well-formed stream that ended in an error. After the error the run
    # only closes its step and itself (Mastra emits step-finish and finish after an error); how much
    # of that tail the client still reads is up to its own scheduling, so any prefix of it is fine.
    types = chunk_types(report)
    assert types[0] == "start"
    assert set(types[types.index("error") + 1 :]) <= {"finish-step", "finish"}
    assert report["onFinish"]["isError"] is True
    assert len(calls) == 1


def check_error_part(report: dict[str, Any], calls: list[RecordedCall], client: str) -> None:
    check_error(report, calls, client)
    # The text streamed before the error stays in the assembled message.
    assert report["assistantMessage"]["parts"] == [
        {"type": "step-start"},
        {"type": "text", "text": "Checking the sky.", "state": "done"},
    ]


ERROR = {"$error": {"name": "Error", "message": "upstream exploded"}}

SCENARIOS: dict[str, Scenario] = {
    "plain": Scenario([[START, *text("Sunny ", "in ", "Berlin."), finish()]], check_plain),
    "reasoning": Scenario(
        [
            [
                START,
                {"type": "reasoning-start", "id": "r1"},
                {"type": "reasoning-delta", "id": "r1", "delta": "Berlin is "},
                {"type": "reasoning-delta", "id": "r1", "delta": "in Germany."},
                {"type": "reasoning-end", "id": "r1"},
                *text("Sunny."),
                finish(),
            ]
        ],
        check_reasoning,
    ),
    "tool": Scenario(
        [
            [
                START,
                {"type": "tool-input-start", "id": "call-1", "toolName": "weather"},
                {"type": "tool-input-delta", "id": "call-1", "delta": '{"city":'},
                {"type": "tool-input-delta", "id": "call-1", "delta": '"Berlin"}'},
                {"type": "tool-input-end", "id": "call-1"},
                {
                    "type": "tool-call",
                    "toolCallId": "call-1",
                    "toolName": "weather",
                    "input": '{"city":"Berlin"}',
                },
                finish("tool-calls"),
            ],
            [START, *text("21°C and sunny."), finish()],
        ],
        check_tool,
    ),
    "sources": Scenario(
        [
            [
                START,
                {
                    "type": "source",
                    "sourceType": "url",
                    "id": "s1",
                    "url": "https://example.com/berlin",
                    "title": "Berlin",
                },
                *text("Sunny."),
                finish(),
            ]
        ],
        check_sources,
    ),
    "multi-turn": Scenario(
        [[START, *text("Cloudy tomorrow."), finish()]],
        check_multi_turn,
        body={"id": "chat-1", "messages": [*HISTORY, FOLLOW_UP], "trigger": "submit-message"},
    ),
    "regenerate": Scenario(
        [[START, *text("Regenerated."), finish()]],
        check_regenerate,
        body={"id": "chat-1", "messages": HISTORY, "trigger": "regenerate-message", "messageId": "a1"},
    ),
    "error": Scenario([{"throws": ERROR}], check_error, exit_code=1),
    "error-part": Scenario(
        [[START, *text("Checking ", "the sky."), {"type": "error", "error": ERROR}, finish("error")]],
        check_error_part,
        exit_code=1,
    ),
}


@pytest.fixture(scope="module", params=list(SCENARIOS))
def live(request: pytest.FixtureRequest) -> Iterator[tuple[str, ReplayingModel, Scenario]]:
    """One live server per scenario, shared by the client versions."""
    require_clients()  # skip (or fail under CI) before starting a server
    scenario = SCENARIOS[request.param]
    model = ReplayingModel(scenario.steps)
    with serve(model) as url:
        yield url, model, scenario


@pytest.mark.parametrize("client", CLIENTS)
def test_real_client(live: tuple[str, ReplayingModel, Scenario], client: str) -> None:
    url, model, scenario = live
    model.reset()
    code, report = run_client(url, client, scenario.body, scenario.prompt)
    assert code == scenario.exit_code, (report["_stderr"], report["error"], report["checks"])
    assert report["http"]["status"] == 200
    scenario.check(report, model.calls, client)
