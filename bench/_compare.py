"""Before and after in one run: a benchmark's figures on this tree and on another source tree.

A benchmark built on this module measures with `cpu_time` (the process's CPU time: the paths are
single-threaded and CPU-bound, and on a shared machine wall time mostly measures the neighbours),
returns its figures as ``{name: µs}`` from ``measure(cold)``, and calls `main`. ``--compare SRC``
runs the same script with ``PYTHONPATH=SRC`` (e.g. ``/work/main/src`` or an unpacked older commit)
and with this tree's ``src``, alternately, ``--rounds`` times each, in fresh processes, and prints
both columns; the best of the rounds counts. ``--cold`` measures one pass without warm-up, as a
process's first request sees it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

cpu_time = time.process_time

Figures = dict[str, float]
"""A benchmark's result: figure name → µs (per token, per chunk, ...)."""


def parse(argv: list[str] | None = None, doc: str | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cold", action="store_true", help="one pass, no warm-up")
    parser.add_argument("--compare", metavar="SRC", help="also run on the package in SRC (before/after)")
    parser.add_argument("--rounds", type=int, default=3, help="processes per tree with --compare")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def _run_in(script: str, src: str, cold: bool) -> Figures:
    env = {**os.environ, "PYTHONPATH": src}
    args = [sys.executable, script, "--json", *(["--cold"] if cold else [])]
    proc = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{script} with PYTHONPATH={src} failed: {proc.stderr.strip()[-500:]}")
    figures: Figures = json.loads(proc.stdout.strip().splitlines()[-1])
    return figures


def _best(runs: list[Figures]) -> Figures:
    return {k: min(r[k] for r in runs) for k in runs[0]}


def main(
    script: str,
    measure: Callable[[bool], Figures],
    report: Callable[[Figures], list[str]],
    argv: list[str] | None = None,
) -> None:
    """Measure, then print ``report(figures)``; with ``--compare``, both trees' figures."""
    args = parse(argv)
    if args.json:
        print(json.dumps(measure(args.cold)))
        return
    if not args.compare:
        for line in report(measure(args.cold)):
            print(line)
        return
    here = str(ROOT / "src")
    before: list[Figures] = []
    after: list[Figures] = []
    for _ in range(max(1, args.rounds)):
        before.append(_run_in(script, args.compare, args.cold))
        after.append(_run_in(script, here, args.cold))
    b, a = _best(before), _best(after)
    mode = "cold, one pass" if args.cold else "warm, best of passes"
    print(f"before: {args.compare}  after: {here}  ({mode}; best of {len(before)} processes each)")
    print(f"{'figure (µs, CPU time)':<60} {'before':>9} {'after':>9} {'after/before':>13}")
    for key in b:
        print(f"{key:<60} {b[key]:9.3f} {a[key]:9.3f} {a[key] / b[key]:12.2f}x")
    print("-- after:")
    for line in report(a):
        print(line)
