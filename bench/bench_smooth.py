"""``smooth_stream`` benchmarks against the real Mastra ``smoothStream`` measured in the same run.

Run: ``.venv/bin/python bench/bench_smooth.py [--cold] [--repeat N] [--skip-node] [--skip-mastra-no-whitespace]``.

1. English throughput: 1 MB of English in ~222,918 text-deltas of 1-8 chars (a seeded mulberry32
   generator), word chunking, no delay. The same chunks are written to ``.cache/reference-bench/
   input.jsonl`` and timed through Mastra's ``smoothStream`` by ``bench/reference/smooth.mjs``
   (``@mastra/core`` pinned in ``bench/reference/package.json``, installed into
   ``.cache/reference-bench`` by ``bench/reference/install.sh``). The ratio to a bare async
   generator passthrough is printed too. Goals (issue 29): >= 0.4x the passthrough after warm-up,
   >= 3x Mastra's input chunks/s cold.
   ``--cold``: instead, one pass without warm-up in a fresh process, as a server's first request
   sees it, for ours, the passthrough and Mastra (``smooth.mjs throughput --cold``): the median of
   three processes each.
2. Whitespace-free text (ASCII and CJK, 4-char deltas, word chunking): Mastra is cubic here
   (``smooth.mjs no-whitespace``); ours must be linear and under 20 ms for 4,000 chars, with
   identical output.
3. Linearity of every chunking mode: time for N and 4N characters.

Throughput figures are CPU time (``time.process_time``; Node's ``process.cpuUsage()``, all its
threads): on the shared 2-core machine wall time mostly measures the neighbours. Wall-clock rates
are printed beside them.

Without node/npm the Mastra columns are skipped with a note; the Python figures still print.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from agentstream.chunks import ChunkFrom, TextDelta, TextDeltaPayload
from agentstream.stream import smooth_stream

ROOT = Path(__file__).resolve().parents[1]
INSTALL = ROOT / "bench" / "reference" / "install.sh"
CACHE = ROOT / ".cache" / "reference-bench"
INPUT = CACHE / "input.jsonl"


def note(msg: str) -> None:
    print(f"note: {msg}", flush=True)


def prepare_reference() -> bool:
    """Install the Mastra reference (``bench/reference``); False, with a note, when it cannot run."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        note("node/npm not found: Mastra figures skipped")
        return False
    proc = subprocess.run(["bash", str(INSTALL)], capture_output=True, text=True)
    if proc.returncode != 0:
        note(f"{INSTALL.relative_to(ROOT)} failed ({proc.stderr.strip()[-300:]}): Mastra figures skipped")
        return False
    return True


def node_json(*args: str) -> dict[str, Any] | None:
    proc = subprocess.run(["node", "smooth.mjs", *args], cwd=CACHE, capture_output=True, text=True)
    if proc.returncode != 0:
        note(f"node smooth.mjs {' '.join(args)} failed: {proc.stderr.strip()[-300:]}")
        return None
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def write_input(chunks: list[TextDelta]) -> None:
    """The English chunks as Mastra wire JSON lines, for ``smooth.mjs throughput``."""
    INPUT.parent.mkdir(parents=True, exist_ok=True)
    lines = (
        json.dumps(
            {
                "type": "text-delta",
                "runId": "bench",
                "from": "AGENT",
                "payload": {"id": "txt-1", "text": c.payload.text},
            }
        )
        for c in chunks
    )
    INPUT.write_text("\n".join(lines) + "\n", encoding="utf-8")


# --- the English input (a seeded generator: the same chunks every run) ------------------------


def _mulberry32(seed: int) -> Callable[[], float]:
    a = seed & 0xFFFFFFFF

    def imul(x: int, y: int) -> int:
        return (x * y) & 0xFFFFFFFF

    def rand() -> float:
        nonlocal a
        a = (a + 0x6D2B79F5) & 0xFFFFFFFF
        t = a
        t = imul(t ^ (t >> 15), t | 1)
        t ^= (t + imul(t ^ (t >> 7), t | 61)) & 0xFFFFFFFF
        return ((t ^ (t >> 14)) & 0xFFFFFFFF) / 4294967296

    return rand


_WORDS = (
    "the of and to in a is that for it as was with be by on not he I this are or his from at which but have an "
    "they you were her she there been one all we their has would when if so no will more out up into do any your what "
    "time could some them other than then now only its people about over also new first two may way these like after "
    "stream chunk buffer token model agent reasoning answer question weather Paris tool result message provider "
    "delay word line text delta smooth output input network server client request response quickly carefully"
).split(" ")
_PUNCT = [",", ",", ".", ".", ".", "?", "!", ";", ":"]


def english_chunks(n: int = 1_000_000, seed: int = 20250101) -> list[TextDelta]:
    rand = _mulberry32(seed)
    parts: list[str] = []
    length = 0
    sentence_start = True
    while length < n:
        w = _WORDS[int(rand() * len(_WORDS))]
        if sentence_start:
            w = w[0].upper() + w[1:]
        sentence_start = False
        if rand() < 0.12:
            p = _PUNCT[int(rand() * len(_PUNCT))]
            w += p
            sentence_start = p in ".?!"
        sep = "\n\n" if sentence_start and rand() < 0.15 else " "
        parts.append(w + sep)
        length += len(w) + len(sep)
    text = "".join(parts)[:n]
    chunks: list[TextDelta] = []
    i = 0
    while i < len(text):
        size = 1 + int(rand() * 8)
        chunks.append(delta(text[i : i + size], "bench"))
        i += size
    return chunks


def delta(text: str, run_id: str = "bench") -> TextDelta:
    return TextDelta(run_id=run_id, from_=ChunkFrom.AGENT, payload=TextDeltaPayload(id="txt-1", text=text))


# --- timing ----------------------------------------------------------------------------------


async def _source(chunks: list[Any]) -> AsyncIterator[Any]:
    for c in chunks:
        yield c


async def _passthrough(stream: AsyncIterator[Any]) -> AsyncIterator[Any]:
    async for c in stream:
        yield c


async def _drain(stream: AsyncIterator[Any]) -> list[str]:
    return [c.payload.text async for c in stream]


def timed_cpu(
    make: Callable[[AsyncIterator[Any]], AsyncIterator[Any]], chunks: list[Any], repeat: int
) -> tuple[float, float, list[str]]:
    """The best wall and the best CPU seconds (``time.process_time``) of ``repeat`` passes."""
    best = best_cpu = float("inf")
    pieces: list[str] = []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        pieces = asyncio.run(_drain(make(_source(chunks))))
        best_cpu = min(best_cpu, time.process_time() - cpu)
        best = min(best, time.perf_counter() - start)
    return best, best_cpu, pieces


def timed(
    make: Callable[[AsyncIterator[Any]], AsyncIterator[Any]], chunks: list[Any], repeat: int
) -> tuple[float, list[str]]:
    best, _, pieces = timed_cpu(make, chunks, repeat)
    return best, pieces


def english(repeat: int, with_node: bool) -> None:
    print("\n== English, word chunking, no delay (reference input) ==", flush=True)
    chunks: list[Any] = english_chunks()
    text = "".join(c.payload.text for c in chunks)
    print(f"input: {len(chunks):,} deltas, {len(text):,} chars (mulberry32, seed 20250101)")
    mastra = None
    if with_node:
        write_input(chunks)
        mastra = node_json("throughput", str(INPUT))
    timed(lambda s: smooth_stream(delay_in_ms=None)(s), chunks[:20_000], 1)  # warm-up
    pass_s, pass_cpu, _ = timed_cpu(_passthrough, chunks, repeat)
    ours_s, ours_cpu, pieces = timed_cpu(lambda s: smooth_stream(delay_in_ms=None)(s), chunks, repeat)
    assert "".join(pieces) == text, "output text differs from input text"
    ours = len(chunks) / ours_s
    # CPU time is the figure on a shared machine (wall time there mostly measures the neighbours);
    # the wall-clock rate is printed beside it.
    print(
        f"python passthrough (async gen)   {len(chunks) / pass_cpu:>12,.0f} chunks/CPU-s  {pass_cpu:.3f} CPU-s"
        f"  (wall {pass_s:.3f} s)"
    )
    print(
        f"agentstream smooth_stream         {len(chunks) / ours_cpu:>12,.0f} chunks/CPU-s  {ours_cpu:.3f} CPU-s"
        f"  (wall {ours_s:.3f} s)  out={len(pieces):,}  = {pass_cpu / ours_cpu:.2f}x of passthrough "
        f"(goal >= 0.4x; wall {pass_s / ours_s:.2f}x)"
    )
    if mastra:
        m, mw = mastra["smoothWord"]["chunksInPerCpuSec"], mastra["smoothWord"]["chunksInPerSec"]
        print(
            f"mastra smoothStream (node)        {m:>12,} chunks/CPU-s  (wall {mw:,} chunks/s)  "
            f"out={mastra['smoothWord']['outputChunks']:,}"
        )
        print(
            f"mastra no-op TransformStream      {mastra['passthrough']['chunksInPerCpuSec']:>12,} chunks/CPU-s"
        )
        print(
            f"ratio ours / mastra: {len(chunks) / ours_cpu / m:.2f}x CPU (wall {ours / mw:.2f}x), both warmed up"
        )
        if mastra["smoothWord"]["outputChunks"] != len(pieces):
            print("WARNING: output chunk count differs from Mastra's")


def _cold_child(kind: str) -> None:
    """One pass over the English input in this (fresh) process; prints ``{"seconds", "out"}``."""
    chunks: list[Any] = english_chunks()
    make: Callable[[AsyncIterator[Any]], AsyncIterator[Any]] = (
        _passthrough if kind == "passthrough" else smooth_stream(delay_in_ms=None)
    )
    start, cpu = time.perf_counter(), time.process_time()
    pieces = asyncio.run(_drain(make(_source(chunks))))
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    assert "".join(pieces) == "".join(c.payload.text for c in chunks)
    print(json.dumps({"seconds": seconds, "cpuSeconds": cpu_seconds, "out": len(pieces)}))


def _cold_runs(
    command: list[str], cwd: Path, pick: Callable[[dict[str, Any]], dict[str, Any]]
) -> tuple[float, float] | None:
    """The medians of three fresh processes' one-pass CPU and wall seconds (``None`` with a note
    if one fails); ``pick`` finds the ``{"cpuSeconds", "seconds"}`` of the pass in the output."""
    cpu, wall = [], []
    for _ in range(3):
        proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
        if proc.returncode != 0:
            note(f"{' '.join(command[:3])} failed: {proc.stderr.strip()[-300:]}")
            return None
        result = pick(json.loads(proc.stdout.strip().splitlines()[-1]))
        cpu.append(float(result["cpuSeconds"]))
        wall.append(float(result["seconds"]))
    return sorted(cpu)[1], sorted(wall)[1]


def english_cold(with_node: bool) -> None:
    print("\n== English, word chunking, no delay: one cold pass per fresh process (median of 3) ==")
    chunks = english_chunks()
    me = [sys.executable, str(Path(__file__).resolve()), "--cold-child"]
    runs = _cold_runs([*me, "smooth"], ROOT, lambda r: r), _cold_runs([*me, "passthrough"], ROOT, lambda r: r)
    if runs[0] is None or runs[1] is None:
        return
    (ours, ours_wall), (passthrough, passthrough_wall) = runs
    n = len(chunks)
    print(
        f"python passthrough (async gen)   {n / passthrough:>12,.0f} chunks/CPU-s  {passthrough:.3f} CPU-s"
        f"  (wall {passthrough_wall:.3f} s)"
    )
    print(
        f"agentstream smooth_stream         {n / ours:>12,.0f} chunks/CPU-s  {ours:.3f} CPU-s  (wall {ours_wall:.3f} s)"
        f"  = {passthrough / ours:.2f}x of passthrough (wall {passthrough_wall / ours_wall:.2f}x)"
    )
    if with_node:
        write_input(chunks)
        mastra_runs = _cold_runs(
            ["node", "smooth.mjs", "throughput", str(INPUT), "--cold"], CACHE, lambda r: r["smoothWord"]
        )
        if mastra_runs is not None:
            mastra, mastra_wall = mastra_runs
            print(
                f"mastra smoothStream (node), cold  {n / mastra:>12,.0f} chunks/CPU-s  {mastra:.3f} CPU-s"
                f"  (wall {mastra_wall:.3f} s)"
            )
            print(
                f"ratio ours / mastra, both cold: {mastra / ours:.2f}x CPU (goal >= 3x; wall {mastra_wall / ours_wall:.2f}x)"
            )


def no_whitespace(with_node: bool, sizes: list[int]) -> None:
    print("\n== whitespace-free text, 4-char deltas, word chunking ==", flush=True)
    mastra_rows: dict[tuple[str, int], float] = {}
    if with_node:
        result = node_json("no-whitespace", ",".join(map(str, sizes)))
        for row in (result or {}).get("rows", []):
            mastra_rows[(row["text"], row["chars"])] = row["smoothSeconds"]
    for n in sizes:
        for label, ch in (("ascii", "a"), ("cjk", "\u6f22")):
            text = ch * n
            chunks = [delta(text[i : i + 4]) for i in range(0, n, 4)]
            secs, pieces = timed(lambda s: smooth_stream(delay_in_ms=None)(s), chunks, 3)
            assert pieces == [text], "output differs from Mastra's (one piece at flush)"
            m = mastra_rows.get((label, n))
            ref = f"  mastra {m:8.3f} s  ({m / secs:,.0f}x)" if m else ""
            print(f"{label:5} {n:>7,} chars  ours {secs * 1000:8.2f} ms{ref}")


def linearity() -> None:
    print("\n== linearity per chunking mode (time for N and 4N chars) ==", flush=True)
    modes: list[tuple[str, Any, str]] = [
        ("word", "word", "abc漢字"),
        ("line", "line", "abc漢字"),
        ("grapheme", "grapheme", "ab😀 漢"),
        ("regex /[^,]*,/", "/[^,]*,/", "abc,"),
    ]
    try:
        from agentstream.stream import Segmenter

        modes.append(("segmenter ja word", Segmenter("ja", "word"), "こんにちは世界。"))
    except ImportError:
        note("icu4py missing: segmenter mode skipped")
    for name, chunking, unit in modes:
        row = []
        for n in (50_000, 200_000):
            text = (unit * (n // len(unit) + 1))[:n]
            for size, label in ((4, "4-char deltas"), (n, "one delta")):
                chunks = [delta(text[i : i + size]) for i in range(0, n, size)]
                secs, pieces = timed(
                    lambda s, c=chunking: smooth_stream(delay_in_ms=None, chunking=c)(s), chunks, 1
                )
                assert "".join(pieces) == text
                row.append(f"{n:>7,} {label}: {secs * 1000:8.1f} ms")
        print(f"{name:<20} " + " | ".join(row), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-node", action="store_true", help="do not run the Mastra reference")
    parser.add_argument(
        "--skip-mastra-no-whitespace", action="store_true", help="its 4,000-char rows take ~10 s"
    )
    parser.add_argument("--no-whitespace-sizes", default="1000,2000,4000")
    parser.add_argument("--cold", action="store_true", help="English: one pass per fresh process, no warm-up")
    parser.add_argument("--cold-child", choices=["smooth", "passthrough"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold_child:
        _cold_child(args.cold_child)
        return
    with_node = not args.skip_node and prepare_reference()
    if args.cold:
        english_cold(with_node)
    else:
        english(args.repeat, with_node)
    no_whitespace(
        with_node and not args.skip_mastra_no_whitespace,
        [int(x) for x in args.no_whitespace_sizes.split(",")],
    )
    linearity()


if __name__ == "__main__":
    sys.exit(main())
