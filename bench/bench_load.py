"""Load: 500 concurrent ``useChat`` requests on ONE uvicorn process, with and without smoothing.

The bench starts the server itself (``python bench/bench_load.py --serve PORT``, 127.0.0.1, one
process, stops by itself after ``SERVER_MAX_S`` or when the bench goes away), then for each mode
fires ``N_REQUESTS`` chat requests at once against an agent whose model streams ``N_TOKENS``
text-deltas per call. Every response is parsed as SSE and its assembled text must equal the
expected text (no failed request, no lost or duplicated chunk); timings are printed, never asserted.

Figures: time to first byte (first body byte) and to first text-delta, p50/p99; total tokens/s
(model tokens delivered / wall time of the burst); server CPU per token (``/proc/<pid>/stat``
utime+stime delta / tokens); memory per open stream (peak server RSS during the burst minus the
RSS before it, / the most streams open at once). Mode ``smooth`` uses
``smooth_stream(delay_in_ms=10)`` (word chunking); ``raw`` is the same requests without it, as the
same-run reference. Run: ``.venv/bin/python bench/bench_load.py`` (``--requests N`` to scale).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from _token_model import TokenModel, tokens

N_REQUESTS = 500
N_TOKENS = 300
DELAY_MS = 10
SERVER_MAX_S = 240.0
BURST_TIMEOUT_S = 90.0
TOKENS = tokens(N_TOKENS)
EXPECTED = "".join(TOKENS)


# --------------------------------------------------------------------------------------------- server


def _watchdog(deadline_s: float) -> None:
    """Exit the server after ``deadline_s`` or as soon as the bench process that started it is gone."""
    parent = os.getppid()
    start = time.monotonic()
    while time.monotonic() - start < deadline_s and os.getppid() == parent:
        time.sleep(0.5)
    os._exit(3)


def serve(port: int) -> None:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from agentstream._mastra import Mastra
    from agentstream.agent import Agent
    from agentstream.ai_sdk import smooth_stream
    from agentstream.server import chat_route

    threading.Thread(target=_watchdog, args=(SERVER_MAX_S,), daemon=True).start()
    mastra = Mastra(agents={"bench": Agent(id="bench", instructions="Be brief.", model=TokenModel(N_TOKENS))})

    async def health(_: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    app = Starlette(
        routes=[
            Route("/health", health),
            chat_route(
                mastra, "/smooth/{agent_id}", experimental_transform=smooth_stream(delay_in_ms=DELAY_MS)
            ),
            chat_route(mastra, "/raw/{agent_id}"),
        ]
    )
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, backlog=2048)


# --------------------------------------------------------------------------------------------- client


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is field 3 (state): utime is field 14, stime field 15
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def assemble(body: bytes) -> tuple[str, list[str]]:
    """The text of a UI message stream (SSE) and its chunk types; raises on a malformed stream."""
    text: list[str] = []
    types: list[str] = []
    done = False
    for frame in body.decode("utf-8").split("\n\n"):
        if not frame:
            continue
        data = "\n".join(line[5:].lstrip() for line in frame.split("\n") if line.startswith("data:"))
        if not data:
            continue  # heartbeat comment
        if done:
            raise ValueError("a frame after [DONE]")
        if data == "[DONE]":
            done = True
            continue
        chunk = json.loads(data)
        types.append(chunk["type"])
        if chunk["type"] == "text-delta":
            text.append(chunk["delta"])
        elif chunk["type"] == "error":
            raise ValueError(f"error chunk: {chunk}")
    if not done:
        raise ValueError("no [DONE]")
    return "".join(text), types


@dataclass
class Burst:
    mode: str
    ttfb: list[float] = field(default_factory=list)
    ttft: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    open_now: int = 0
    open_max: int = 0
    wall: float = 0.0
    cpu: float = 0.0
    rss_before: int = 0
    rss_peak: int = 0
    open_at_peak: int = 0
    chunks: int = 0


async def one_request(client: Any, url: str, index: int, burst: Burst, start_gate: asyncio.Event) -> None:
    payload = {
        "id": f"chat-{index}",
        "messages": [{"id": f"u{index}", "role": "user", "parts": [{"type": "text", "text": "Go."}]}],
        "trigger": "submit-message",
    }
    await start_gate.wait()
    t0 = time.perf_counter()
    pieces: list[bytes] = []
    opened = False
    try:
        async with client.stream("POST", url, json=payload) as response:
            if response.status_code != 200:
                burst.failures.append(f"#{index}: HTTP {response.status_code}")
                return
            burst.open_now += 1
            burst.open_max = max(burst.open_max, burst.open_now)
            opened = True
            first_token = False
            async for piece in response.aiter_bytes():
                if not pieces:
                    burst.ttfb.append(time.perf_counter() - t0)
                if not first_token and b'"text-delta"' in piece:
                    first_token = True
                    burst.ttft.append(time.perf_counter() - t0)
                pieces.append(piece)
        text, types = assemble(b"".join(pieces))
        if text != EXPECTED:
            burst.failures.append(f"#{index}: text differs ({len(text)} vs {len(EXPECTED)} chars)")
        elif types[0] != "start" or types[-1] != "finish":
            burst.failures.append(f"#{index}: chunk types {types[:2]}…{types[-2:]}")
        burst.chunks += len(types)
    except Exception as exc:
        burst.failures.append(f"#{index}: {type(exc).__name__}: {exc}")
    finally:
        if opened:
            burst.open_now -= 1


async def run_burst(client: Any, base: str, pid: int, mode: str, n: int) -> Burst:
    burst = Burst(mode)
    gate = asyncio.Event()
    url = f"{base}/{mode}/bench"
    tasks = [asyncio.ensure_future(one_request(client, url, i, burst, gate)) for i in range(n)]
    await asyncio.sleep(0.2)  # let every task reach the gate
    burst.rss_before = burst.rss_peak = _rss_bytes(pid)
    cpu0 = _cpu_seconds(pid)
    t0 = time.perf_counter()
    gate.set()
    all_done = asyncio.ensure_future(asyncio.wait_for(asyncio.gather(*tasks), BURST_TIMEOUT_S))
    while not all_done.done():
        rss = _rss_bytes(pid)
        if rss > burst.rss_peak:
            burst.rss_peak, burst.open_at_peak = rss, burst.open_now
        await asyncio.sleep(0.05)
    burst.wall = time.perf_counter() - t0
    burst.cpu = _cpu_seconds(pid) - cpu0
    try:
        all_done.result()
    except TimeoutError:
        burst.failures.append(f"burst timed out after {BURST_TIMEOUT_S:.0f}s")
    return burst


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def report(b: Burst, n: int) -> None:
    tokens = n * N_TOKENS
    streams = max(b.open_max, 1)
    print(
        f"{b.mode:<7} ok {n - len(b.failures)}/{n}  wall {b.wall:6.2f}s  "
        f"TTFB p50 {pct(b.ttfb, 50) * 1e3:7.1f} ms p99 {pct(b.ttfb, 99) * 1e3:7.1f} ms  "
        f"first token p50 {pct(b.ttft, 50) * 1e3:7.1f} ms p99 {pct(b.ttft, 99) * 1e3:7.1f} ms"
    )
    print(
        f"{'':<7} {tokens / b.wall:9,.0f} tokens/s  ({b.chunks / b.wall:,.0f} UI chunks/s)  "
        f"server CPU {b.cpu:6.2f}s = {b.cpu / tokens * 1e6:6.1f} us/token  "
        f"RSS {b.rss_before / 2**20:.0f}→{b.rss_peak / 2**20:.0f} MiB: "
        f"{(b.rss_peak - b.rss_before) / streams / 1024:6.1f} KiB per open stream "
        f"(max open {b.open_max}, at peak {b.open_at_peak})"
    )
    for failure in b.failures[:5]:
        print(f"        FAILED {failure}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """``bench_load.py --serve PORT`` as a subprocess: one uvicorn process on 127.0.0.1."""

    def __init__(self) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--serve", str(self.port)], stdin=subprocess.DEVNULL
        )

    async def ready(self, client: Any) -> None:
        import httpx

        for _ in range(150):
            try:
                if (await client.get(f"{self.base}/health")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}")
            await asyncio.sleep(0.1)
        raise RuntimeError("server did not start")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


async def main(n: int) -> int:
    import httpx

    limits = httpx.Limits(max_connections=n + 16, max_keepalive_connections=n + 16)
    print(
        f"{n} concurrent chat requests x {N_TOKENS} tokens; per mode a fresh single uvicorn process; "
        f"{os.cpu_count()} CPUs shared with the httpx client; Python {sys.version.split()[0]}"
    )
    failed = 0
    for mode in ("smooth", "raw"):
        server = Server()
        try:
            async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(60.0)) as client:
                await server.ready(client)
                warm = await run_burst(client, server.base, server.process.pid, mode, 4)
                if warm.failures:
                    raise RuntimeError(f"warm-up failed: {warm.failures[:3]}")
                client_cpu = time.process_time()
                burst = await run_burst(client, server.base, server.process.pid, mode, n)
                client_cpu = time.process_time() - client_cpu
        finally:
            server.stop()
        report(burst, n)
        print(f"{'':<7} (client process CPU {client_cpu:.2f}s)")
        failed += len(burst.failures)
    print("all responses complete and exact" if not failed else f"{failed} FAILED request(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument("--requests", type=int, default=N_REQUESTS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
    else:
        sys.exit(asyncio.run(main(args.requests)))
