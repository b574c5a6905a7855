"""Shared helpers for the benchmarks: best-of-N timing and ratio printing."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_of(fn: Callable[[], object], repeat: int = 5) -> float:
    """Fastest wall time of ``repeat`` runs, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def row(name: str, count: int, seconds: float, reference: float | None = None) -> str:
    rate = count / seconds
    ratio = f"  {reference / seconds:6.2f}x reference" if reference else ""
    return f"{name:<48} {rate:>14,.0f} /s  {seconds / count * 1e6:8.3f} us{ratio}"
