"""The relevance floor's sweep (evals/floor_sweep.py) on the memory_dev sets, read in place.

    python -m recallfs.evals.floor_devsets --set madial|mtbenchplus|realmem [--personas 2] [--arm ...]

Not an eval harness (that is `recallfs eval --dataset realmem|madial|mtbenchplus`): each set, read by
its adapter in evals/devsets.py, is written as generic JSONL records to a temporary file, ingested
with `recallfs ingest` (FTS and embeddings, as a user would), and every question runs once through
recall() with the floor off; the sweep then counts, per candidate floor, the questions whose gold hit
would leave the top 10. Shapes: ../shared/data/SOURCES.md.

How each set becomes records and questions (workspaces, queries, gold, RealMem's `until:`) is said
once, in evals/devsets.py; here RealMem takes the first N personas (`--personas`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from recallfs.evals import devsets
from recallfs.evals.devsets import DevSet
from recallfs.evals.floor_sweep import MEASURE_COSINE, any_shared_word, evidence, sweep
from recallfs.query.query_syntax import RecallOptions

TOP = 10


def load_set(name: str, personas: int) -> DevSet:
    """The set through its one adapter (evals/devsets.py); RealMem limited to the first `personas`."""
    return devsets.load(name, personas=personas if name == "realmem" else None)


def _ingest(records: list[dict[str, Any]], store: Path) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as fh:
        fh.write("\n".join(json.dumps(r) for r in records) + "\n")
    env = {**os.environ, "RECALLFS_STORE": str(store), "RECALLFS_WORKSPACE": "dev/dev", "RECALLFS_AGENT": "dev"}
    recallfs = Path(sys.executable).parent / "recallfs"
    subprocess.run([str(recallfs), "ingest", "--no-progress", fh.name], env=env, check=True, stdout=sys.stderr)
    os.unlink(fh.name)


def measure(dev: DevSet, store_path: Path, arm: str, fusion: str) -> dict[str, Any]:
    from recallfs.evals.semantic_probe import load_semantic
    from recallfs.query import settings as settings_mod
    from recallfs.query.recall import recall
    from recallfs.query.store import Store
    from recallfs.ranking.stage_config import StageConfig
    from recallfs.scope.principal import Principal

    semantic, _ = load_semantic(settings_mod.resolve()) if arm != "lexical" else (None, "off")
    stages = StageConfig(relevance_floor=0.0, floor_cosine=MEASURE_COSINE)
    gold: list[Any] = []
    with Store(store_path, read_only=True) as store:
        level = devsets.LEVEL[dev.name]
        for q in dev.questions:
            org, name = q.workspace.split("/")
            units, until, query = q.gold, q.until, q.query
            result = recall(store, Principal(org, name, "dev"), query, semantic=semantic, k=TOP, arm=arm,
                            fusion=fusion, stages=stages, options=RecallOptions(until=until))
            key = "session" if level == "session" else "source_id"
            gold.append([any_shared_word(result),
                         [evidence(h) for h in result.hits if str(h.row[key]) in units]])
    return {"questions": len(gold), "rows": sweep(gold), "gold": gold}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m recallfs.evals.floor_devsets")
    parser.add_argument("--set", choices=("madial", "mtbenchplus", "realmem"), required=True)
    parser.add_argument("--personas", type=int, default=2, help="RealMem: how many personas")
    parser.add_argument("--arm", choices=("fused", "lexical", "semantic"), default="fused")
    parser.add_argument("--fusion", choices=("calibrated", "rrf"), default="calibrated")
    parser.add_argument("--store", type=Path, help="reuse this store (built on first use)")
    args = parser.parse_args(argv)
    dev = load_set(args.set, args.personas)
    store = args.store or Path(tempfile.mkdtemp()) / "dev.duckdb"
    if not store.exists():
        _ingest(dev.records, store)
    report = {"set": args.set, "arm": args.arm, "fusion": args.fusion, **measure(dev, store, args.arm, args.fusion)}
    json.dump(report, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
