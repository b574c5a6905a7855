"""Record what the real Mastra server (``reference-server.mjs``) answers, for
``test_reference.py`` to compare ours with: ``python -m tests.mastra_api.record_reference``
(rewrites ``tests/data/mastra-api/reference.json``; needs ``scripts/mastra-clients.sh``).

Kept: the discovery routes' bodies, the keys of an agent, a tool and a ``generate`` answer, the
chunk types of a streamed answer with a tool call, and the frames a thread subscriber gets for a
``send-message`` run. Ids, times and texts vary run to run; keys, types and orders do not.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import httpx

from tests.mastra_api.conftest import reference_server

OUT = Path(__file__).resolve().parents[1] / "data" / "mastra-api" / "reference.json"
DISCOVERY = [
    "/api/auth/capabilities",
    "/api/workspaces",
    "/api/observability/feedback",
    "/api/processors",
    "/api/experiments/review-summary",
    "/api/editor/builder/settings",
    "/api/mcp/v0/servers",
    "/api/scores/scorers",
    "/api/system/packages",
    "/api/editor/builder/models/available",
    "/api/channels/platforms",
    "/api/agents/demo-agent/voice/speakers",
]


def sse(text: str) -> list[dict[str, Any]]:
    frames = [f.removeprefix("data: ") for f in text.split("\n\n") if f.startswith("data: ")]
    return [json.loads(f) for f in frames if f != "[DONE]"]


def subscribed_frames(base: str) -> tuple[dict[str, Any], list[str]]:
    thread = {"resourceId": "rec-user", "threadId": "rec-thread"}
    frames: list[str] = []
    done = threading.Event()

    def follow() -> None:
        with httpx.stream(
            "POST", f"{base}/api/agents/demo-agent/threads/subscribe", json=thread, timeout=30
        ) as r:
            for line in r.iter_lines():
                if line.startswith("data: "):
                    frames.append(json.loads(line[6:])["type"])
                    if frames[-1] == "finish":
                        done.set()
                        return

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    done.wait(2)  # the subscription is open before the message goes
    message = {"message": {"contents": "What's the weather in Paris?", "metadata": {"clientMessageId": "m1"}}}
    sent = httpx.post(
        f"{base}/api/agents/demo-agent/send-message", json={**message, **thread}, timeout=30
    ).json()
    done.wait(30)
    return sent, frames


def record(base: str) -> dict[str, Any]:
    with httpx.Client(base_url=base, timeout=60) as c:
        agents = c.get("/api/agents").json()
        tool = c.get("/api/tools/weather").json()
        streamed = c.post("/api/agents/demo-agent/stream", json={"messages": "What's the weather in Paris?"})
        generated = c.post(
            "/api/agents/demo-agent/generate", json={"messages": "Explain how rainbows form"}
        ).json()
        missing = c.get("/api/agents/no-such-agent")
        discovery = {path: c.get(path).json() for path in DISCOVERY}
    sent, frames = subscribed_frames(base)
    return {
        "discovery": discovery,
        "agentListKeys": sorted(agents["demo-agent"]),
        "agentKeys": sorted(c_get(base, "/api/agents/demo-agent")),
        "toolKeys": sorted(tool),
        "toolInputSchema": json.loads(tool["inputSchema"]),
        "streamTypes": [chunk["type"] for chunk in sse(streamed.text)],
        "streamChunkKeys": sorted({k for chunk in sse(streamed.text) for k in chunk}),
        "generateKeys": sorted(generated),
        "notFound": {"status": missing.status_code, "body": missing.json()},
        "sendMessageKeys": sorted(sent),
        "signalKeys": sorted(sent["signal"]),
        "subscribedTypes": frames,
    }


def c_get(base: str, path: str) -> dict[str, Any]:
    answer: dict[str, Any] = httpx.get(base + path, timeout=30).json()
    return answer


def main() -> None:
    with reference_server() as base:
        recorded = record(base)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
