"""Benchmark one memory written at a time into a large store, as an agent writes to `inbox/`, and the
recall that comes right after it.

    python -m recallfs.evals.bench_small_writes                   # the 100k bench-recall store, 8 rounds
    python -m recallfs.evals.bench_small_writes --size 10000 --rounds 4

Each round, in process on a copy of the store bench_recall builds and caches (`--cache`, `--pool`):
- a hybrid recall with nothing written before it (the steady state: every cache of this generation warm);
- one fact written with `ingest_records`, the model embedding it (the path `inbox/` and a one-record
  `recallfs ingest` take): its transaction, the full-text index's upkeep and the embedding;
- a hybrid recall right after it, on another query: the first of a new store generation, so every
  per-generation cache (postings delta, readable rows, currentness links, the vector index's extension)
  is rebuilt in it.
It prints the medians, and the first recall after a write against the steady recall of the same run.
What the mount adds to a write (the catalog of the new generation, invalidations) is not in these
figures: `ls`/`cat` through a mount would show it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from recallfs.evals.bench_model import serving_embedder
from recallfs.evals.bench_recall import AGENT, ORG, PRINCIPAL, WS, _cached_store, queries
from recallfs.query.collector import tune_gc
from recallfs.query.ingest_file import ingest_records
from recallfs.query.recall import recall
from recallfs.query.records import MemoryRecord
from recallfs.query.semantic import SemanticSearch
from recallfs.query.settings import resolve
from recallfs.query.store import Store


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench_small_writes", description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--size", type=int, default=100_000, help="memories in the store")
    p.add_argument("--rounds", type=int, default=8, help="writes (each with a recall before and after)")
    p.add_argument("--pool", type=int, default=5000, help="as bench_recall: distinct base sentences embedded")
    p.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "recallfs-bench-recall")
    return p


def _fact(i: int) -> MemoryRecord:
    return MemoryRecord(table="facts", source_id=f"small-write-{i}-{time.time_ns()}",
                        content=f"Small write {i}: the heron rota moved to the west wing after the audit",
                        created_at=datetime.now(), org=ORG, workspace=WS, agent=AGENT, kind="fact")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    embedder = serving_embedder("bench_small_writes")
    if embedder is None:
        return 1
    source = _cached_store(args.cache, args.size, embedder, args.pool)
    arm = SemanticSearch(embedder)
    qs = queries(2 * args.rounds + 5, seed=7)
    steady, writes, after = [], [], []
    with tempfile.TemporaryDirectory(prefix="recallfs-bench-writes-") as tmp:
        path = Path(tmp) / "store.duckdb"
        shutil.copyfile(source, path)
        shutil.copytree(str(source) + ".faiss", str(path) + ".faiss")
        with Store(path, threads=resolve().serve_threads) as store:
            for q in qs[:5]:  # warm: indexes loaded, caches filled
                recall(store, PRINCIPAL, q, semantic=arm)
            tune_gc()
            for i in range(args.rounds):
                t0 = time.perf_counter()
                recall(store, PRINCIPAL, qs[5 + 2 * i], semantic=arm)
                steady.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                ingest_records(store, [_fact(i)], embedder=embedder)
                writes.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                recall(store, PRINCIPAL, qs[6 + 2 * i], semantic=arm)
                after.append((time.perf_counter() - t0) * 1000)
    _report(args, steady, writes, after)
    return 0


def _report(args: argparse.Namespace, steady: list[float], writes: list[float], after: list[float]) -> None:
    med = statistics.median
    print(f"{args.size:,} memories (pool {args.pool}), {args.rounds} rounds; load average {os.getloadavg()[0]:.1f}")
    print("| measure | p50 ms | range ms |")
    print("|---|---:|---:|")
    for name, values in (("hybrid recall, nothing written (steady)", steady), ("one fact written", writes),
                         ("hybrid recall right after the write", after)):
        print(f"| {name} | {med(values):.0f} | {min(values):.0f}-{max(values):.0f} |")
    print(f"first recall after a write / steady recall, p50: {med(after) / med(steady):.1f}x")


if __name__ == "__main__":
    sys.exit(main())
