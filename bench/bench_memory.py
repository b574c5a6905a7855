"""Semantic-recall bench: insert throughput and recall latency of the vector stores at N messages,
against a brute-force scan measured in the same run.

    .venv/bin/python bench/bench_memory.py [N ...]        # default: 10000

Per N and store (the brute-force reference = ``InMemoryVectorStore``, an exact cosine scan in
Python; sqlite-vec in a SQLite file; pgvector when a pgvector database is reachable through
``AGENTSTREAM_TEST_PGVECTOR_DSN`` or the ``pgserver`` wheel is installed):

* insert: N messages of 384-dimension HashEmbedder vectors (embedding time excluded: vectors are
  computed once before), upserted in batches of 100 (messages/s);
* recall: ``top_k=4`` queries scoped to one resource of 10 (p50 / p99 ms over 50 queries; 10 above
  10k messages, where the reference scan takes seconds each), and the
  same unscoped;
* agreement: the fraction of the top-4 scores (4 decimals) equal to the reference's, position by
  position (1.0 = the same answer; ids are not compared: the corpus has ties).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from agentstream.memory import HashEmbedder, InMemoryVectorStore, VectorStore

DIM = 384
WORDS = (
    "paris pizza guitar dog rain python coffee train music river mountain book garden winter city "
    "cat tea bicycle ocean museum market school doctor movie football piano forest bread lamp"
).split()


def corpus(n: int) -> list[str]:
    out = []
    for i in range(n):
        picks = [WORDS[(i * 7 + k * 13) % len(WORDS)] for k in range(6)]
        out.append(f"message {i}: " + " ".join(picks))
    return out


async def _stores(tmp: Path) -> list[tuple[str, VectorStore, Any]]:
    from agentstream.memory import SqliteVecStore

    stores: list[tuple[str, VectorStore, Any]] = [
        ("brute-force scan (reference)", InMemoryVectorStore(), None),
        ("sqlite-vec (file)", SqliteVecStore(tmp / "vec.db"), None),
    ]
    dsn = os.environ.get("AGENTSTREAM_TEST_PGVECTOR_DSN")
    server = None
    if not dsn:
        try:
            import pgserver

            server = pgserver.get_server(str(tmp / "pg"), cleanup_mode="stop")
            dsn = server.get_uri()
        except ImportError:
            dsn = None
    if dsn:
        from agentstream.memory import PgVectorStore

        stores.append(
            ("pgvector (exact scoped scan)", PgVectorStore(dsn, schema=f"b_{uuid.uuid4().hex[:8]}"), server)
        )
    return stores


async def bench(n: int) -> None:
    texts = corpus(n)
    vectors = await HashEmbedder(DIM).embed(texts)
    n_queries = 50 if n <= 10_000 else 10  # the reference scan of 100k takes seconds per query
    queries = await HashEmbedder(DIM).embed(
        [f"{WORDS[i % len(WORDS)]} {WORDS[(i * 3) % len(WORDS)]}" for i in range(n_queries)]
    )
    ids = [f"m{i}" for i in range(n)]
    meta = [{"message_id": ids[i], "thread_id": f"t{i % 100}", "resource_id": f"r{i % 10}"} for i in range(n)]
    with tempfile.TemporaryDirectory() as tmp:
        stores = await _stores(Path(tmp))
        reference: dict[tuple[int, bool], list[float]] = {}
        print(f"\n== N = {n:,} messages, dimension {DIM}")
        base: dict[str, float] = {}
        for name, store, _server in stores:
            await store.create_index("bench", DIM)
            start = time.perf_counter()
            for at in range(0, n, 100):
                await store.upsert("bench", ids[at : at + 100], vectors[at : at + 100], meta[at : at + 100])
            insert_s = time.perf_counter() - start
            line = f"{name:<32} insert {n / insert_s:>9,.0f} msg/s"
            for scoped in (True, False):
                times, agree = [], []
                for qi, q in enumerate(queries):
                    where = {"resource_id": f"r{qi % 10}"} if scoped else None
                    t0 = time.perf_counter()
                    found = [round(m.score, 4) for m in await store.query("bench", q, top_k=4, filter=where)]
                    times.append((time.perf_counter() - t0) * 1000)
                    want = reference.setdefault((qi, scoped), found)
                    # by score, not id: the corpus has many identical vectors, any of a tie is right
                    agree.append(sum(a == b for a, b in zip(found, want, strict=False)) / max(1, len(want)))
                p50 = statistics.median(times)
                p99 = sorted(times)[int(len(times) * 0.99) - 1]
                label = "scoped" if scoped else "all"
                key = f"{label}"
                ratio = f" ({base[key] / p50:5.1f}x ref)" if key in base else ""
                base.setdefault(key, p50)
                line += f" | recall {label} p50 {p50:7.2f} ms p99 {p99:7.2f} ms{ratio} agree {statistics.mean(agree):.2f}"
            print(line)
        for _name, store, server in stores:
            close = getattr(store, "close", None)
            if close is not None:
                await close()
            if server is not None:
                server.cleanup()


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [10_000]
    for n in sizes:
        asyncio.run(bench(n))


if __name__ == "__main__":
    main()
