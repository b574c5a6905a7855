"""Per-SSE-event cost of the OpenAI chat provider vs. plain ``json.loads`` of the same payloads.

The provider runs end to end (httpx request, httpx-sse parsing, JSON decode, part construction)
over a recorded stream served from memory by ``httpx.MockTransport``; the baseline only decodes
each event's JSON. Both are measured in this run, and the ratio is printed.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import httpx

from agentstream.models import OpenAIChatModel

ROOT = Path(__file__).resolve().parents[1]
RECORDING = (
    ROOT / "tests" / "data" / "provider-recordings" / "huggingface" / "together-deepseek-r1-think-tags.json"
)
ROUNDS = 20


def main() -> None:
    recording = json.loads(RECORDING.read_text(encoding="utf-8"))
    body = recording["interactions"][0]["response"]["body"].encode("utf-8")
    payloads = [
        line[5:].strip()
        for block in body.decode("utf-8").split("\n\n")
        for line in block.split("\n")
        if line.startswith("data:") and line[5:].strip() != "[DONE]"
    ]
    events = len(payloads)

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    async def run_provider() -> float:
        client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
        model = OpenAIChatModel(
            "m", base_url="http://bench.local/v1", api_key="k", http_client=client, parse_think_tags=True
        )
        best = float("inf")
        for _ in range(ROUNDS):
            start = time.perf_counter()
            count = 0
            async for _part in model.do_stream({"prompt": [{"role": "user", "content": "hi"}]}):
                count += 1
            best = min(best, time.perf_counter() - start)
        await client.aclose()
        return best

    def run_json() -> float:
        best = float("inf")
        for _ in range(ROUNDS):
            start = time.perf_counter()
            for payload in payloads:
                json.loads(payload)
            best = min(best, time.perf_counter() - start)
        return best

    provider = asyncio.run(run_provider())
    baseline = run_json()
    print(f"recording: {RECORDING.name} ({events} events, {len(body) / 1024:.0f} KiB), best of {ROUNDS}")
    print(f"provider end to end: {provider / events * 1e6:8.2f} µs/event")
    print(f"json.loads only:     {baseline / events * 1e6:8.2f} µs/event")
    print(f"ratio provider/json.loads: {provider / baseline:.1f}x")


if __name__ == "__main__":
    main()
