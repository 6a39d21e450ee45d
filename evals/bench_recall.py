"""Benchmark the recall arms: ingest throughput, and recall latency lexical-only against hybrid.

    python -m recallfs.evals.bench_recall                         # 10k and 100k memories, CPU
    python -m recallfs.evals.bench_recall --sizes 10000 --queries 50 --ingest-rows 1000

Measures, in one run:
- ingest throughput: `ingest_records` of fresh rows into a fresh store, with the real model embedding
  every row (rows/s end to end), the same with the model as sentence-transformers loads it (stock
  Linear layers), with `RECALLFS_EMBED_PRECISION=bfloat16`, and with embedding off (the write + FTS
  share), in alternating rounds (`--ingest-rounds`); the embedder's bulk kernels are chosen by its first
  job (query/bulk_encoder.py) and printed;
- recall latency at each size: `recall()` in process, p50/p95 over distinct queries (no query-vector
  cache hits), after a warm-up, for `--arm lexical` and `--arm fused` (hybrid, calibrated fusion: the
  default), with their ratio; hybrid with rank fusion (`fusion=rrf`) to price the calibration, and
  hybrid with `RECALLFS_VECTOR_SEARCH=exact` (every readable vector scanned) to price the inverted lists
  (query/ivf_lists.py). The modes take turns, 10 queries each (lexical-only, then hybrid on the same
  queries, then the other two on queries of their own), and the process's collector is set as the
  daemon sets it (`--default-gc`: not).

The synthetic stores (one workspace; 65% turns, 30% facts, 5% summaries) are built once and cached
under --cache (default /tmp/recallfs-bench-recall). To keep building 100k memories to minutes on a small
CPU, a store's vectors are the real model's embeddings of a pool of distinct base sentences (default
5,000), each row taking its base sentence's vector; row texts add row-specific words, so the lexical
arm sees distinct rows. A flat index scans every vector whatever its values, so search cost is that
of 100k distinct vectors. Use --pool 0 to embed every row instead.

Targets (issue 4): ingest >= 300 rows/s on CPU; warm hybrid p50 <= 30 ms and p95 <= 60 ms at 100k;
hybrid no more than twice lexical-only. GPU runs (faiss-gpu + CUDA embeddings) use the same script.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from recallfs.evals.bench_model import serving_embedder
from recallfs.query.collector import tune_gc
from recallfs.query.embedder import Embedder
from recallfs.query.ingest_file import ingest_records
from recallfs.query.recall import recall
from recallfs.query.records import MemoryRecord
from recallfs.query.semantic import SemanticSearch
from recallfs.query.settings import resolve
from recallfs.query.store import Store
from recallfs.query.vector_meta import adopt_model
from recallfs.query.vector_write import write_vectors
from recallfs.query.vectors import ensure_indexes
from recallfs.scope.principal import Principal

ORG, WS, AGENT = "bench", "synthetic", "bench"
PRINCIPAL = Principal(ORG, WS, AGENT)
TARGETS = {"ingest_rows_s": 300.0, "hybrid_p50_ms_100k": 30.0, "hybrid_p95_ms_100k": 60.0, "ratio": 1.5}  # issue 13

_SUBJECTS = ["Maya", "the team", "Priya", "our client", "the backend", "Lee", "the on-call engineer",
             "the design group", "Sam", "the release manager", "Jordan", "the data pipeline"]
_VERBS = ["moved", "fixed", "reviewed", "planned", "deployed", "tested", "documented", "cancelled",
          "rewrote", "measured", "scheduled", "discussed", "approved", "migrated", "debugged"]
_OBJECTS = ["the billing service", "a flaky integration test", "the docs site", "the quarterly roadmap",
            "the database backup", "a memory leak", "the onboarding guide", "the staging cluster",
            "a new caching layer", "the login page", "the holiday rota", "the analytics dashboard",
            "a trip to Lisbon", "the kitchen renovation", "a running plan", "the budget spreadsheet",
            "a birthday party", "the garden fence", "a pottery class", "the car insurance"]
_WHEN = ["on Monday", "last week", "before the launch", "after lunch", "over the weekend", "in March",
         "yesterday", "during the retro", "at the offsite", "this morning"]
_WHY = ["because latency doubled", "so the audit passes", "to save money", "after a customer complaint",
        "since the vendor changed", "to unblock the mobile team", "for the demo", "as agreed with legal",
        "because it kept failing", "to make room for new hires"]
_EXTRA = ("alpha beta gamma delta kiwi mango cedar maple falcon heron otter lynx quartz cobalt amber ivory "
          "harbor canyon meadow summit glacier prairie tundra delta lagoon reef atlas orbit vector kernel "
          "cipher beacon ledger quill prism tensor matrix sonnet ballad sketch mural fresco").split()


def base_sentences(n: int, rng: random.Random) -> list[str]:
    """n distinct, meaningful base sentences."""
    seen: dict[str, None] = {}
    while len(seen) < n:
        s = (f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} {rng.choice(_WHEN)} "
             f"{rng.choice(_WHY)}")
        if s in seen:
            s = f"{s}, noted {rng.choice(_EXTRA)} {len(seen)}"
        seen[s] = None
    return list(seen)


def synthetic_records(size: int, pool: list[str], rng: random.Random) -> tuple[list[MemoryRecord], list[int]]:
    """`size` records and, for each, the index of its base sentence in `pool`."""
    start = datetime(2025, 1, 1)
    records, bases = [], []
    for i in range(size):
        b = rng.randrange(len(pool))
        words = " ".join(rng.sample(_EXTRA, 2))
        r = rng.random()
        when = start + timedelta(minutes=i)
        if r < 0.65:
            session = f"s{i // 50}"
            rec = MemoryRecord(table="turns", source_id=f"t{i}", content=f"{pool[b]} ({words} {i})",
                               created_at=when, org=ORG, workspace=WS, agent=AGENT, session=session,
                               seq=i % 50, speaker=rng.choice(["maya", "lee", "sam"]), kind="turn")
        elif r < 0.95:
            rec = MemoryRecord(table="facts", source_id=f"f{i}", content=f"{pool[b]}; tagged {words} #{i}",
                               created_at=when, org=ORG, workspace=WS, agent=AGENT, kind="fact",
                               tags=[rng.choice(_EXTRA)])
        else:
            rest = " ".join(pool[rng.randrange(len(pool))] + "." for _ in range(3))
            rec = MemoryRecord(table="summaries", source_id=f"S{i}", content=f"{pool[b]}. {rest} ({words})",
                               created_at=when, org=ORG, workspace=WS, agent=AGENT, kind="summary",
                               session=f"s{i // 50}", title=f"Session {i // 50}")
        records.append(rec)
        bases.append(b)
    return records, bases


def pool_vectors(pool: list[str], embedder: Embedder, cache: Path) -> np.ndarray:
    """The pool's embeddings, cached next to the stores (every size shares one pool)."""
    path = cache / f"pool-{len(pool)}-{embedder.model_id.replace('@', '-')}.npy"
    if path.exists():
        return np.load(path)
    t0 = time.perf_counter()
    vecs = embedder.embed(pool, progress=_progress("embed pool"))
    print(f"  embedded {len(pool)} base sentences in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    np.save(path, vecs)
    return vecs


def build_store(path: Path, size: int, embedder: Embedder, pool_size: int, seed: int = 7) -> None:
    """Write `size` memories, then their vectors, then the FAISS indexes."""
    rng = random.Random(seed)
    if pool_size <= 0:
        records, _ = synthetic_records(size, base_sentences(min(size, 20000), rng), rng)
        with Store(path) as store:
            ingest_records(store, records, embedder=embedder, embed_progress=_progress("embed"))
            ensure_indexes(store)
        return
    pool = base_sentences(pool_size, rng)
    records, bases = synthetic_records(size, pool, rng)
    pool_vecs = pool_vectors(pool, embedder, path.parent)
    with Store(path) as store:
        ingest_records(store, records, embedder=None)
        by_source = {(r.table, r.source_id): b for r, b in zip(records, bases, strict=True)}
        write_pool_vectors(store, by_source, pool_vecs, embedder)
        ensure_indexes(store)


def write_pool_vectors(
    store: Store, bases: dict[tuple[str, str], int], pool_vecs: np.ndarray, embedder: Embedder,
    spread: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
) -> None:
    """Each row's vector from its base sentence's (`bases`: (table, source id) -> row of `pool_vecs`),
    written as the embedder's. `spread(vectors, rids)`: each row's own variant of its base vector."""
    schema = store.schema_for(PRINCIPAL)
    assert schema is not None
    with store.transaction() as tx:
        adopt_model(tx, embedder.model_id, embedder.dim)
    for table in ("facts", "summaries", "turns"):
        rows = store.cursor().execute(f"SELECT rid, source_id FROM {schema}.{table} ORDER BY rid").fetchall()
        rids = np.array([int(r[0]) for r in rows], dtype=np.int64)
        idx = np.array([bases[(table, str(r[1]))] for r in rows], dtype=np.int64)
        for s in range(0, len(rids), 50_000):
            part = slice(s, s + 50_000)
            vectors = pool_vecs[idx[part]]
            with store.transaction() as tx:
                write_vectors(tx, schema, table, embedder.model_id, rids[part],
                              spread(vectors, rids[part]) if spread is not None else vectors)


def _progress(label: str) -> Any:
    last = [0.0]

    def report(done: int, total: int) -> None:
        now = time.perf_counter()
        if now - last[0] > 10 or done == total:
            last[0] = now
            print(f"  {label}: {done}/{total}", file=sys.stderr)

    return report


def stock_embedder(embedder: Embedder, precision: str | None = None) -> Embedder:
    """A fresh copy of the model: as sentence-transformers runs it (`precision` None: the injected
    model is run as it is, no kernel choice), or as recallfs runs it at `precision`."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(embedder.model_path, device=embedder.device, local_files_only=True)
    if precision is None:
        return Embedder(encoder=_Plain(model), model_id=embedder.model_id, dim=embedder.dim)
    emb = Embedder(encoder=model, model_id=embedder.model_id, dim=embedder.dim)
    emb.embed_precision = precision
    return emb


class _Plain:
    """The model's encode() alone: an encoder the embedder does not choose kernels for."""

    def __init__(self, model: Any) -> None:
        self._model = model

    def encode(self, inputs: list[str], **kwargs: Any) -> Any:
        return self._model.encode(inputs, **kwargs)


def measure_ingest(embedder: Embedder, rows: int, rounds: int) -> dict[str, list[float]]:
    """End-to-end ingest of the same rows into fresh stores, in alternating rounds so that a busy
    machine weighs on every variant alike: without embedding, embedding with the stock model, and
    embedding with the embedder as loaded. Rows/s per round."""
    pool = base_sentences(rows, random.Random(11))  # distinct rows: every one is really embedded
    variants = (("no_embed", None), ("stock", stock_embedder(embedder)), ("embed", embedder),
                ("bfloat16", stock_embedder(embedder, "bfloat16")))
    out: dict[str, list[float]] = {label: [] for label, _ in variants}
    with tempfile.TemporaryDirectory(prefix="recallfs-bench-ingest-") as tmp:
        for n in range(rounds):
            for label, emb in variants:
                records, _ = synthetic_records(rows, pool, random.Random(3))
                with Store(Path(tmp) / f"{label}-{n}.duckdb") as store:
                    t0 = time.perf_counter()
                    ingest_records(store, records, embedder=emb)
                    out[label].append(rows / (time.perf_counter() - t0))
    return out


def queries(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out: dict[str, None] = {}
    while len(out) < n:
        q = rng.choice([
            f"what did {rng.choice(_SUBJECTS)} do about {rng.choice(_OBJECTS)}",
            f"why was {rng.choice(_OBJECTS)} {rng.choice(_VERBS)}",
            f"{rng.choice(_OBJECTS)} {rng.choice(_WHEN)}",
            f"who {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} {rng.choice(_WHY)}",
        ]) + f" {rng.choice(_EXTRA)}"
        out[q] = None
    return list(out)


BLOCK = 10  # queries each mode runs before the next takes its turn


def measure_recall(
    path: Path, embedder: Embedder, n_queries: int, budget_ms: float, *, tuned_gc: bool = True,
) -> dict[str, Any]:
    arm = SemanticSearch(embedder, budget_ms=budget_ms)
    exact = SemanticSearch(embedder, budget_ms=budget_ms, exact=True)  # the baseline of the inverted lists
    out: dict[str, Any] = {}
    with Store(path, read_only=True, threads=resolve().serve_threads) as store:  # as a mount opens it
        for q in queries(5, seed=1):  # warm: FAISS indexes loaded, caches filled, kernels warm
            recall(store, PRINCIPAL, q, arm="fused", semantic=arm)
            recall(store, PRINCIPAL, q, arm="lexical", semantic=arm)
        if tuned_gc:  # as the daemon does once set up (query/collector.py)
            tune_gc()
        plain = queries(n_queries, seed=2)
        seen = set(plain)
        # Rank fusion gets queries of its own: on the hybrid run's queries it would find every query
        # vector cached and look some 15 ms faster than it is.
        own = [q for q in queries(4 * n_queries, seed=3) if q not in seen][:n_queries]
        seen.update(own)
        own_exact = [q for q in queries(6 * n_queries, seed=4) if q not in seen][:n_queries]
        modes = {"lexical": ("lexical", "calibrated", plain, arm), "hybrid": ("fused", "calibrated", plain, arm),
                 "hybrid_rrf": ("fused", "rrf", own, arm), "hybrid_exact": ("fused", "calibrated", own_exact, exact)}
        times: dict[str, list[float]] = {mode: [] for mode in modes}
        stages: dict[str, dict[str, list[float]]] = {mode: {} for mode in modes}
        degraded = dict.fromkeys(modes, 0)
        # The modes take turns, BLOCK queries each, so that each ratio compares recalls made under the
        # same conditions (on a shared machine speed drifts over the minutes a mode-after-mode run
        # takes), while each mode still runs mostly after itself, as a stream of recalls does (a
        # hybrid recall's scans leave the CPU caches cold for whatever follows).
        for block in range(0, n_queries, BLOCK):
            for mode, (arm_name, fusion, qs, semantic) in modes.items():
                for q in qs[block: block + BLOCK]:
                    t0 = time.perf_counter()
                    result = recall(store, PRINCIPAL, q, arm=arm_name, semantic=semantic, fusion=fusion)
                    times[mode].append((time.perf_counter() - t0) * 1000)
                    degraded[mode] += int(arm_name == "fused" and result.degraded)
                    for name, ms in result.timings_ms.items():
                        stages[mode].setdefault(name, []).append(ms)
        for mode, measured in times.items():
            out[mode] = {
                "p50": statistics.median(measured), "p95": float(np.percentile(measured, 95)),
                "stages": {name: statistics.median(v + [0.0] * (len(measured) - len(v)))
                           for name, v in stages[mode].items()},
                "degraded": degraded[mode],
            }
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench_recall", description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--sizes", default="10000,100000", help="store sizes, comma separated")
    p.add_argument("--queries", type=int, default=100, help="distinct queries per mode and size")
    p.add_argument("--ingest-rows", type=int, default=2000, help="rows for the ingest throughput figure")
    p.add_argument("--ingest-rounds", type=int, default=3, help="alternating rounds of the ingest variants")
    p.add_argument("--pool", type=int, default=5000, help="distinct base sentences embedded per store (0: all)")
    p.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "recallfs-bench-recall")
    p.add_argument("--budget-ms", type=float, default=2000, help="query embedding budget during the run")
    p.add_argument("--default-gc", action="store_true",
                   help="keep CPython's collector settings (default: the daemon's, query/collector.py)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    embedder = serving_embedder("bench_recall")
    if embedder is None:
        return 1
    import faiss
    import torch

    device = (f"{embedder.device} (torch {torch.get_num_threads()} threads, query path {embedder.query_path} "
              f"{embedder.query_dtype}), "
              f"faiss GPUs: {faiss.get_num_gpus()}")
    print(f"model {embedder.model_id} ({embedder.dim}-d) on {device}; DuckDB threads "
          f"{resolve().serve_threads or 'every core'} (RECALLFS_SERVE_THREADS); {os.cpu_count()} CPUs; "
          f"load average {os.getloadavg()[0]:.1f}; collector "
          f"{'CPython defaults' if args.default_gc else 'as the daemon sets it (query/collector.py)'}")

    ingest = measure_ingest(embedder, args.ingest_rows, args.ingest_rounds) if args.ingest_rows > 0 else {}
    rows: list[tuple[int, dict[str, Any]]] = []
    for size in (int(s) for s in args.sizes.split(",") if s.strip()):
        path = _cached_store(args.cache, size, embedder, args.pool)
        rows.append((size, measure_recall(path, embedder, args.queries, args.budget_ms,
                                          tuned_gc=not args.default_gc)))
    _print_report(args, ingest, rows, embedder.bulk_path)
    return 0


def _cached_store(cache: Path, size: int, embedder: Embedder, pool: int) -> Path:
    """A built store of `size` memories, reused across runs; built beside and renamed so a crash leaves none."""
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"store-{size}-pool{pool}-{embedder.model_id.replace('@', '-')}.duckdb"
    if path.exists():
        return path
    print(f"building {path} ({size} memories)...", file=sys.stderr)
    t0 = time.perf_counter()
    tmp = path.with_suffix(".building")
    for stale in (tmp, Path(str(tmp) + ".wal")):
        stale.unlink(missing_ok=True)
    build_store(tmp, size, embedder, pool)
    os.replace(tmp, path)
    folder = Path(str(tmp) + ".faiss")
    if folder.exists():
        os.replace(folder, Path(str(path) + ".faiss"))
    print(f"  built in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return path


def _print_ingest(args: argparse.Namespace, ingest: dict[str, list[float]], bulk_path: str) -> None:
    """Median and range of each variant, and the embedder against the stock model round by round."""
    print(f"ingest, {args.ingest_rows} rows, {args.ingest_rounds} alternating rounds (rows/s, median [range]; "
          f"target >= {TARGETS['ingest_rows_s']:.0f} with embedding):")
    names = {"no_embed": "without embedding", "stock": "embedding, stock model", "embed": "embedding (recallfs)",
             "bfloat16": "embedding, bfloat16"}
    for label, name in names.items():
        vals = ingest[label]
        print(f"  {name:<24} {statistics.median(vals):6.0f}  [{min(vals):.0f}-{max(vals):.0f}]")
    print(f"  recallfs's bulk kernels, chosen by its first job: {bulk_path}")
    ratios = [b / a for a, b in zip(ingest["stock"], ingest["embed"], strict=True)]
    print("  recallfs / stock per round: " + ", ".join(f"{r:.2f}x" for r in ratios))


def _print_report(args: argparse.Namespace, ingest: dict[str, list[float]],
                  rows: list[tuple[int, dict[str, Any]]], bulk_path: str) -> None:
    print()
    if ingest:
        _print_ingest(args, ingest, bulk_path)
    print()
    print("| memories | mode | p50 ms | p95 ms | lexical arm ms | semantic arm ms | hybrid/lexical p50 | p95 |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for size, r in rows:
        lx, hy = r["lexical"], r["hybrid"]
        print(f"| {size:,} | lexical-only | {lx['p50']:.1f} | {lx['p95']:.1f} | "
              f"{lx['stages'].get('lexical', 0):.1f} | - | | |")
        print(f"| {size:,} | hybrid | {hy['p50']:.1f} | {hy['p95']:.1f} | {hy['stages'].get('lexical', 0):.1f} | "
              f"{hy['stages'].get('semantic', 0):.1f} | {hy['p50'] / lx['p50']:.2f}x | {hy['p95'] / lx['p95']:.2f}x |")
        for mode, label in (("hybrid_rrf", "hybrid, rank fusion"), ("hybrid_exact", "hybrid, exact vector search")):
            rf = r[mode]
            print(f"| {size:,} | {label} | {rf['p50']:.1f} | {rf['p95']:.1f} | "
                  f"{rf['stages'].get('lexical', 0):.1f} | {rf['stages'].get('semantic', 0):.1f} | "
                  f"{rf['p50'] / lx['p50']:.2f}x | {rf['p95'] / lx['p95']:.2f}x |")
        if hy["degraded"]:
            print(f"|  | (hybrid answers degraded: {hy['degraded']} of {args.queries}) | | | | | | |")
    print()
    print("median ms per recall stage (timings_ms):")
    for size, r in rows:
        for mode in ("lexical", "hybrid", "hybrid_rrf", "hybrid_exact"):
            st = r[mode]["stages"]
            print(f"  {size:>7,} {mode:<10} " + ", ".join(f"{k} {v:.1f}" for k, v in st.items() if k != "total"))
    print()
    print(f"targets: hybrid p50 <= {TARGETS['hybrid_p50_ms_100k']:.0f} ms and p95 <= "
          f"{TARGETS['hybrid_p95_ms_100k']:.0f} ms at 100k; hybrid/lexical <= {TARGETS['ratio']:g}x")


if __name__ == "__main__":
    sys.exit(main())
