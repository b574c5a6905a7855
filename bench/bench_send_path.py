"""The send path alone: CPU per SSE frame from ``SSEStreamResponse`` through Starlette and the
uvicorn protocol of `serving_config` to the transport, without sockets, a model or pacing.

Run: ``PYTHONPATH=src .venv/bin/python bench/bench_send_path.py [--rounds 3] [--compare OLD/src]``.

Each mode is a fresh process that feeds ``--requests`` requests, one connection each, to the
protocol class `serving_config` picks (a transport that keeps nothing); each answer is
``--frames`` text-delta chunks streamed by ``SSEStreamResponse`` from a Starlette route (what the
chat routes answer with, no heartbeat). The figure is the process's CPU time per frame, best of
the rounds, modes interleaved round by round. Modes: ``httptools`` (the default where httptools is
installed), ``h11`` (``serving_config(http="h11")``) and, with ``--compare``, ``before``: another
tree's ``src`` with its own default. What a socket write costs is not in it
(``bench/bench_serve.py`` has the whole path). Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


class _Transport:
    """The asyncio transport surface uvicorn's protocols use; drops what is written."""

    def __init__(self) -> None:
        self.written = 0
        self.closed = False

    def write(self, data: bytes) -> None:
        self.written += len(data)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(name, default)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    abort = close

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        pass


async def _worker(http: str, requests: int, frames: int) -> float:
    from starlette.applications import Starlette
    from starlette.routing import Route
    from uvicorn.server import ServerState

    from agentstream.ai_sdk import SSEStreamResponse
    from agentstream.server import serving_config

    chunk = {"type": "text-delta", "id": "0", "delta": "tok1 "}

    async def endpoint(request: Any) -> SSEStreamResponse:
        async def chunks() -> Any:
            for _ in range(frames):
                yield chunk

        return SSEStreamResponse(chunks(), heartbeat_ms=0)

    app = Starlette(routes=[Route("/api/chat", endpoint, methods=["POST"])])
    options = {} if http == "default" else {"http": http}
    config = serving_config(app, log_level="critical", **options)
    config.load()
    state = ServerState()
    body = b'{"messages": []}'
    request = (
        b"POST /api/chat HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        + f"content-length: {len(body)}\r\n\r\n".encode()
        + body
    )

    async def one() -> int:
        transport = _Transport()
        protocol = config.http_protocol_class(config=config, server_state=state, app_state={})
        protocol.connection_made(transport)
        protocol.data_received(request)
        await asyncio.gather(*state.tasks)
        protocol.connection_lost(None)
        return transport.written

    for _ in range(3):  # warm-up
        await one()
    started = time.process_time()
    written = 0
    for _ in range(requests):
        written += await one()
    cpu = time.process_time() - started
    assert written > requests * frames * 40, "the answers did not stream"
    return cpu / (requests * frames)


def _run(src: Path, http: str, requests: int, frames: int) -> float:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, __file__, "--worker", http, "--requests", str(requests), "--frames", str(frames)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(json.loads(out.stdout)["per_frame"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--compare", type=Path, metavar="SRC", help="another tree's src, as `before`")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        per_frame = asyncio.run(_worker(args.worker, args.requests, args.frames))
        print(json.dumps({"per_frame": per_frame}))
        return
    src = ROOT / "src"
    modes: list[tuple[str, Path, str]] = [("httptools", src, "httptools"), ("h11", src, "h11")]
    if args.compare is not None:
        modes.append(("before", args.compare.resolve(), "default"))
    best: dict[str, float] = {}
    print(f"{args.requests} answers x {args.frames} frames; CPU µs per frame (best of {args.rounds})")
    for round_no in range(1, args.rounds + 1):
        for name, tree, http in modes:
            value = _run(tree, http, args.requests, args.frames)
            best[name] = min(best.get(name, float("inf")), value)
            print(f"round {round_no} {name:<10} {value * 1e6:7.2f} µs/frame", flush=True)
    print()
    for name, value in best.items():
        print(f"{name:<10} {value * 1e6:7.2f} µs/frame")
    if "before" in best:
        for name in ("httptools", "h11"):
            print(f"before / {name}: {best['before'] / best[name]:.2f}x")


if __name__ == "__main__":
    main()
