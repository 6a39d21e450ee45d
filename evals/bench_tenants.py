"""Many tenants: scoped recall latency in a store of 1 workspace against one of 500, in one run.

    python -m recallfs.evals.bench_tenants                      # 500 workspaces, 60 queries, 5 rounds
    python -m recallfs.evals.bench_tenants --workspaces 50 --queries 20

Both stores are built under --cache (default /tmp/recallfs-bench-tenants; never in the repository)
from the LoCoMo file (default ../shared/data/locomo10.json): the 500-workspace store imports each of
the 10 conversations 50 times under distinct workspace names (`<sample_id>-cNN`); the 1-workspace
store holds only `<first sample_id>-c00`, the workspace both measurements read. The build is
lexical-only (no embedding), which keeps 435k rows to minutes; the semantic arm's cost is per
partition as well (one FAISS index per partition and table), and it is not measured here.

Recall runs in process (`recall(..., arm="lexical")`) with the first --queries questions of that
conversation, after a warm-up pass; the two stores alternate query by query, so drifting machine
load hits both alike. Reported: p50 and p95 per store and the p50 ratio (target <= 1.1).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from recallfs.query.importers import read_locomo
from recallfs.query.ingest_file import ingest_records
from recallfs.query.recall import recall
from recallfs.query.records import MemoryRecord
from recallfs.query.store import Store
from recallfs.scope.principal import Principal

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo10.json"
ORG = "locomo"


def copies(records: list[MemoryRecord], n_workspaces: int) -> list[list[MemoryRecord]]:
    """Batches (one per copy of the data set) of records re-homed into workspaces `<sample>-cNN`."""
    samples = sorted({r.workspace for r in records})
    rounds = -(-n_workspaces // len(samples))
    out: list[list[MemoryRecord]] = []
    made = 0
    for c in range(rounds):
        batch = []
        for sample in samples:
            if made >= n_workspaces:
                break
            batch += [dataclasses.replace(r, workspace=f"{sample}-c{c:02d}") for r in records if r.workspace == sample]
            made += 1
        out.append(batch)
    return out


def build(path: Path, batches: list[list[MemoryRecord]]) -> float:
    """Ingest the batches into a fresh store; returns seconds. An existing complete store is reused."""
    done = path.with_suffix(".done")
    if path.exists() and done.exists():
        return float(done.read_text())
    path.unlink(missing_ok=True)
    t0 = time.perf_counter()
    with Store(path) as store:
        for i, batch in enumerate(batches):
            ingest_records(store, batch, embedder=None)
            print(f"  {path.name}: batch {i + 1}/{len(batches)} ({len(batch)} rows)", file=sys.stderr)
    seconds = time.perf_counter() - t0
    done.write_text(f"{seconds:.1f}")
    return seconds


def questions(data: Path, n: int) -> list[str]:
    sample = json.loads(data.read_text(encoding="utf-8"))[0]
    return [str(q["question"]) for q in sample["qa"][:n]]


def _ms(store: Store, principal: Principal, query: str) -> float:
    t0 = time.perf_counter()
    result = recall(store, principal, query, arm="lexical")
    elapsed = (time.perf_counter() - t0) * 1000
    assert result.workspace == principal.workspace_path
    return elapsed


def measure(small: Store, large: Store, principal: Principal, queries: list[str], rounds: int) -> dict[str, Any]:
    for q in queries:  # warm-up: FTS indexes, catalog pages, the policy lookup
        _ms(small, principal, q)
        _ms(large, principal, q)
    times: dict[str, list[float]] = {"1": [], "many": []}
    for r in range(rounds):
        for i, q in enumerate(queries):
            # Alternate which store goes first, so neither always runs on a cache the other warmed.
            order = [("1", small), ("many", large)] if (i + r) % 2 == 0 else [("many", large), ("1", small)]
            for label, store in order:
                times[label].append(_ms(store, principal, q))

    def pct(xs: list[float], p: float) -> float:
        return statistics.quantiles(xs, n=100)[int(p) - 1]

    out: dict[str, Any] = {
        label: {"p50_ms": round(statistics.median(xs), 2), "p95_ms": round(pct(xs, 95), 2), "n": len(xs)}
        for label, xs in times.items()}
    out["p50_ratio"] = round(out["many"]["p50_ms"] / out["1"]["p50_ms"], 3)
    out["p95_ratio"] = round(out["many"]["p95_ms"] / out["1"]["p95_ms"], 3)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--workspaces", type=int, default=500)
    p.add_argument("--queries", type=int, default=60)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--cache", type=Path, default=Path("/tmp/recallfs-bench-tenants"))
    args = p.parse_args(argv)
    if not args.data.exists():
        print(f"no LoCoMo file at {args.data}", file=sys.stderr)
        return 1
    args.cache.mkdir(parents=True, exist_ok=True)
    records = read_locomo(args.data, org=ORG, workspace="unused", agent="default")
    batches = copies(records, args.workspaces)
    first = batches[0][0].workspace
    small_path = args.cache / "tenants-1.duckdb"
    large_path = args.cache / f"tenants-{args.workspaces}.duckdb"
    build_small = build(small_path, [[r for r in batches[0] if r.workspace == first]])
    build_large = build(large_path, batches)
    principal = Principal(ORG, first, "default")
    with Store(small_path, read_only=True) as small, Store(large_path, read_only=True) as large:
        n_large = len(large.workspaces())
        rows_large = sum(_rows(large, large.partition(o, w)) for o, w in large.workspaces())
        report = {
            "workspace": principal.workspace_path, "workspaces": {"1": len(small.workspaces()), "many": n_large},
            "rows": {"1": _rows(small, small.schema_for(principal)), "many": rows_large},
            "build_s": {"1": round(build_small, 1), "many": round(build_large, 1)},
            "queries": args.queries, "rounds": args.rounds, "arm": "lexical",
            **measure(small, large, principal, questions(args.data, args.queries), args.rounds),
        }
    print(json.dumps(report, indent=2))
    print(f"scoped recall p50: 1 workspace {report['1']['p50_ms']} ms, {n_large} workspaces "
          f"{report['many']['p50_ms']} ms, ratio {report['p50_ratio']} (target <= 1.1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())


def _rows(store: Store, schema: str | None) -> int:
    return sum(store.table_counts(schema).values()) if schema is not None else 0
