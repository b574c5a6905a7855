"""Serving concurrent chats: `agentstream serve` against the real Mastra stack, side by side in one run.

Run: ``.venv/bin/python bench/bench_serve.py [--chats 300] [--tokens 300] [--rounds 2]
[--modes a,b] [--compare OLD/src] [--profile DIR]`` (``--compare``: our modes again on another
commit's sources, interleaved, as ``before:<mode>``; ``--profile``: py-spy raw stacks of each mode's
last burst).

Each mode starts a fresh server process on loopback, warms it with a few chats, then sends
``--chats`` chats at once and reads every answer to the end (each answer's text is checked: no
failed chat, no lost or duplicated token). The figure is the server's CPU time (``/proc/<pid>/stat``
utime + stime of the server process and its children) per model token delivered (a chat that
ended early counts the tokens it got, and is reported as a failure); the modes run
interleaved round by round (the shared machine's load drifts) and the best round counts.

* ``mastra``: the Mastra stack (``bench/reference/mastra-chat-server.mjs``: `@mastra/core`'s Mastra
  in ``@mastra/deployer``'s ``createNodeServer``, what ``mastra dev``/``mastra build`` run, default
  configuration), ``POST /api/agents/bench/stream``: the reference.
* ``mastra-smooth``: the same Mastra server with its agent's answers through Mastra's own
  ``smoothStream`` (word chunking, 10 ms delay: ``--smooth``), the like-for-like reference for
  ``ours-chat``'s paced default; printed beside the goal's figure, not instead of it.
* ``ours-agent-stream``: ``agentstream serve`` (default configuration), the same Mastra route.
* ``ours-chat``: ``agentstream serve`` (default configuration: word smoothing with a 10 ms delay,
  15 s heartbeats, the in-memory stream store), ``POST /api/chat`` (the AI SDK UI message stream
  the chat page reads, each UI chunk written to the stream store so a reloaded page resumes).
* ``ours-chat-no-smooth``: the same without smoothing (``--no-smooth``): what pacing every word
  10 ms apart costs (each piece is its own event-loop wake-up, store append and socket write).
* ``ours-chat-redis``: the same with ``--stream-store redis://…`` (Redis at
  ``$AGENTSTREAM_BENCH_REDIS_URL`` or the test server of ``scripts/redis.sh``); its figure is also
  printed against ``ours-chat``'s (issue 29: within 1.5x).

The Mastra side needs node and the packages ``scripts/mastra-clients.sh`` installs into
``.cache/mastra-server``; without them its rows are skipped with a note. Figures are printed, never
asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
MASTRA_DIR = ROOT / ".cache" / "mastra-server"
RUN_DIR = MASTRA_DIR / "runs" / f"bench-serve-{os.getpid()}"
"""Where the Mastra server script runs (its imports resolve from ``.cache/mastra-server``);
removed at the end."""
REDIS_URL = os.environ.get("AGENTSTREAM_BENCH_REDIS_URL", "redis://127.0.0.1:56379/7")


def note(msg: str) -> None:
    print(f"note: {msg}", flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` and its (waited-for and live) children, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is field 3 (state): utime 14, stime 15, cutime 16, cstime 17
    ticks = sum(int(x) for x in fields[11:15])
    for child in _children(pid):
        with contextlib.suppress(OSError), open(f"/proc/{child}/stat") as f:
            ticks += sum(int(x) for x in f.read().rsplit(")", 1)[1].split()[11:13])
    return ticks / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            direct = [int(x) for x in f.read().split()]
    except OSError:
        return []
    return [c for d in direct for c in (d, *_children(d))]


# --------------------------------------------------------------------------------------------- servers


@dataclass
class Mode:
    name: str
    path: str
    ui: bool  # the AI SDK UI message stream (else Mastra's chunk stream)
    command: list[str] = field(default_factory=list)
    cwd: Path = BENCH
    env: dict[str, str] = field(default_factory=dict)


def modes(tokens: int, with_mastra: bool, with_redis: bool, compare: Path | None = None) -> list[Mode]:
    ours = [sys.executable, "-m", "agentstream", "serve", "--app", "_serve_app:mastra", "--port", "{port}"]
    # The caller's PYTHONPATH after the tree's src (absolute: the servers run in bench/), so
    # packages installed beside the venv (httptools in a --target dir...) reach the servers too.
    inherited = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {"PYTHONPATH": os.pathsep.join([str(ROOT / "src"), *inherited]), "BENCH_SERVE_TOKENS": str(tokens)}
    out = []
    if with_mastra:
        node = ["node", "mastra-chat-server.mjs", "--port", "{port}", "--tokens", str(tokens)]
        out.append(Mode("mastra", "/api/agents/bench/stream", False, node, RUN_DIR))
        # Like for like with our paced default: Mastra's smoothStream, word chunking, 10 ms.
        out.append(Mode("mastra-smooth", "/api/agents/bench/stream", False, [*node, "--smooth"], RUN_DIR))
    out.append(Mode("ours-agent-stream", "/api/agents/bench/stream", False, ours, env=env))
    out.append(Mode("ours-chat", "/api/chat", True, ours, env=env))
    out.append(Mode("ours-chat-no-smooth", "/api/chat", True, [*ours, "--no-smooth"], env=env))
    if with_redis:
        out.append(Mode("ours-chat-redis", "/api/chat", True, [*ours, "--stream-store", REDIS_URL], env=env))
    if compare is not None:  # the same modes on another tree's sources (``before:<mode>``)
        before = {**env, "PYTHONPATH": os.pathsep.join([str(compare), *inherited])}
        out += [
            Mode(f"before:{m.name}", m.path, m.ui, m.command, env=before)
            for m in out
            if not m.name.startswith("mastra")
        ]
    return out


def prepare_mastra() -> bool:
    if shutil.which("node") is None:
        note("node not found: the Mastra rows are skipped")
        return False
    if not (MASTRA_DIR / "node_modules" / "@mastra" / "deployer").is_dir():
        proc = subprocess.run(
            ["bash", str(ROOT / "scripts" / "mastra-clients.sh")], capture_output=True, text=True
        )
        if proc.returncode != 0:
            note(
                f"scripts/mastra-clients.sh failed ({proc.stderr.strip()[-300:]}): the Mastra rows are skipped"
            )
            return False
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(BENCH / "reference" / "mastra-chat-server.mjs", RUN_DIR / "mastra-chat-server.mjs")
    return True


def redis_answers() -> bool:
    try:
        import redis

        redis.Redis.from_url(REDIS_URL, socket_timeout=2).ping()
        return True
    except Exception as exc:  # any failure: the Redis row is skipped with its reason
        note(f"Redis at {REDIS_URL} does not answer ({exc}): the Redis row is skipped")
        return False


@contextlib.contextmanager
def server(mode: Mode) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    command = [part.replace("{port}", str(port)) for part in mode.command]
    log = tempfile.TemporaryFile()
    process = subprocess.Popen(
        command,
        cwd=mode.cwd,
        env={**os.environ, **mode.env},
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own group: stopped with its children, by its id
    )
    try:
        yield f"http://127.0.0.1:{port}", process
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(5)
        log.close()


# --------------------------------------------------------------------------------------------- client


def text_of(body: bytes, ui: bool) -> tuple[str, str | None]:
    """The answer's text from an SSE body (UI chunks' ``delta`` or Mastra chunks' ``payload.text``)
    and the first error chunk's JSON, if any."""
    text: list[str] = []
    error = None
    for frame in body.decode("utf-8").split("\n\n"):
        data = "\n".join(line[5:].lstrip() for line in frame.split("\n") if line.startswith("data:"))
        if not data or data == "[DONE]":
            continue
        chunk = json.loads(data)
        if chunk.get("type") == "text-delta":
            text.append(chunk["delta"] if ui else chunk["payload"]["text"])
        elif chunk.get("type") == "error" and error is None:
            error = data
    return "".join(text), error


async def one_chat(
    client: httpx.AsyncClient, url: str, ui: bool, index: int, expected: str
) -> tuple[str | None, int]:
    """``(failure or None, tokens delivered)`` of one chat read to its end."""
    if ui:
        body: dict[str, Any] = {
            "id": f"chat-{index}-{time.monotonic_ns()}",
            "messages": [{"id": f"u{index}", "role": "user", "parts": [{"type": "text", "text": "Go."}]}],
            "trigger": "submit-message",
        }
    else:
        body = {"messages": [{"role": "user", "content": "Go."}]}
    try:
        async with client.stream("POST", url, json=body) as response:
            if response.status_code != 200:
                return f"#{index}: HTTP {response.status_code}", 0
            data = b"".join([piece async for piece in response.aiter_bytes()])
    except Exception as exc:  # every failure is reported, none stops the burst
        return f"#{index}: {type(exc).__name__}: {exc}", 0
    text, error = text_of(data, ui)
    tokens = text.count("tok")
    if error is not None:
        return f"#{index}: error chunk after {tokens} tokens: {error[:200]}", tokens
    return (
        None if text == expected else f"#{index}: text differs ({len(text)} vs {len(expected)} chars)"
    ), tokens


async def wait_ready(client: httpx.AsyncClient, base: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 90
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        with contextlib.suppress(httpx.HTTPError):
            await client.get(f"{base}/api/agents", timeout=2)
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"server at {base} did not answer in 90 s")
        await asyncio.sleep(0.3)


@contextlib.contextmanager
def profiled(pid: int, out: Path | None) -> Iterator[None]:
    """py-spy recording ``pid`` (raw stacks, for a flame graph) into ``out`` while the block runs."""
    if out is None:
        yield
        return
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    command = [spy, "record", "--pid", str(pid), "--rate", "200", "--format", "raw", "-o", str(out)]
    recorder = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)  # attached before the burst starts
    try:
        yield
    finally:
        recorder.send_signal(signal.SIGINT)
        recorder.wait(30)


async def burst(
    mode: Mode, chats: int, tokens: int, profile: Path | None = None
) -> tuple[float, float, list[str]]:
    """``(server CPU s per token delivered, wall s, failures)`` of ``chats`` chats at once on a
    fresh server (recorded by py-spy into ``profile``, if given)."""
    expected = "".join(f"tok{i} " for i in range(tokens))
    limits = httpx.Limits(max_connections=chats + 8, max_keepalive_connections=chats + 8)
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(180)) as client:
        with server(mode) as (base, process):
            await wait_ready(client, base, process)
            url = base + mode.path
            for i in range(4):  # warm-up: imports, first requests
                failure, _ = await one_chat(client, url, mode.ui, -1 - i, expected)
                if failure is not None:
                    raise RuntimeError(f"{mode.name} warm-up failed: {failure}")
            await asyncio.sleep(0.5)
            with profiled(process.pid, profile):
                cpu0, wall0 = cpu_seconds(process.pid), time.perf_counter()
                results = await asyncio.gather(
                    *(one_chat(client, url, mode.ui, i, expected) for i in range(chats))
                )
                wall = time.perf_counter() - wall0
                cpu = cpu_seconds(process.pid) - cpu0
    delivered = sum(n for _, n in results)
    return cpu / max(delivered, 1), wall, [f for f, _ in results if f is not None]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chats", type=int, default=300)
    parser.add_argument("--tokens", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--skip-mastra", action="store_true")
    parser.add_argument("--modes", help="comma-separated mode names to run (default: all)")
    parser.add_argument(
        "--profile", metavar="DIR", help="record each mode's last burst with py-spy into DIR (raw stacks)"
    )
    parser.add_argument(
        "--compare",
        metavar="SRC",
        type=Path,
        help="also run our modes on the sources in SRC (a `git archive` of another commit's src), "
        "interleaved, as before:<mode>",
    )
    args = parser.parse_args()
    wanted = set(args.modes.split(",")) if args.modes else None
    with_mastra = (
        not args.skip_mastra
        and (wanted is None or bool(wanted & {"mastra", "mastra-smooth"}))
        and prepare_mastra()
    )
    all_modes = [
        m
        for m in modes(args.tokens, with_mastra, redis_answers(), args.compare)
        if wanted is None or m.name.removeprefix("before:") in wanted
    ]
    best: dict[str, float] = {}
    print(
        f"{args.chats} concurrent chats x {args.tokens} tokens; server CPU µs per token (best of {args.rounds})"
    )
    for round_no in range(1, args.rounds + 1):
        for mode in all_modes:
            profile = None
            if args.profile and round_no == args.rounds:
                Path(args.profile).mkdir(parents=True, exist_ok=True)
                profile = Path(args.profile) / f"{mode.name.replace(':', '-')}.txt"
            per_token, wall, failures = await burst(mode, args.chats, args.tokens, profile)
            best[mode.name] = min(best.get(mode.name, float("inf")), per_token)
            print(
                f"round {round_no} {mode.name:<26} {per_token * 1e6:8.2f} µs/token  wall {wall:6.2f} s"
                + (f"  FAILURES {len(failures)}: {failures[:3]}" if failures else ""),
                flush=True,
            )
    print()
    for name, value in best.items():
        print(f"{name:<26} {value * 1e6:8.2f} µs/token")
    for prefix in ("", "before:"):
        if "mastra" in best:
            for name in ("ours-agent-stream", "ours-chat", "ours-chat-no-smooth"):
                if prefix + name in best:
                    print(
                        f"mastra / {prefix}{name}: {best['mastra'] / best[prefix + name]:.2f}x less CPU "
                        "per token (goal >= 4.5x)"
                    )
        if "mastra-smooth" in best and prefix + "ours-chat" in best:
            print(
                f"mastra-smooth / {prefix}ours-chat: {best['mastra-smooth'] / best[prefix + 'ours-chat']:.2f}x "
                "less CPU per token, both paced (like for like; the goal is against unpaced mastra)"
            )
        redis, memory = prefix + "ours-chat-redis", prefix + "ours-chat"
        if redis in best and memory in best:
            print(f"{redis} / {memory}: {best[redis] / best[memory]:.2f}x (goal <= 1.5x)")


if __name__ == "__main__":
    try:
        asyncio.run(main())
    finally:
        shutil.rmtree(RUN_DIR, ignore_errors=True)
