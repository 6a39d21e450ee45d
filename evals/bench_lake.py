"""Two hosts on one DuckLake store, against a single-file store, measured in one run.

    python -m recallfs.evals.bench_lake                       # 2 x 5,000 records, 50 visibility trials
    python -m recallfs.evals.bench_lake --records 1000 --trials 10

A throwaway PostgreSQL (evals/pg_cluster.py) holds the catalog; the data path and each host's replica
and runtime directories are under --work (default a temporary directory). Each host is a real daemon
with its own mount, and the records go in through the real CLI, which hands them to its host's daemon.

Printed:
- concurrent ingest: each host ingests --records in batches of --batch at the same time; then the
  memories each mount lists and recalls, lost and duplicated;
- visibility: a fact ingested on host A, until `ls MOUNT_B/recall/<its word>/` shows it (p50 / p95);
- the same ingest into a single-file store and into the lake (rows/s), and `ls recall/<q>/` p50 on a
  mount of each, with their ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from recallfs.evals.pg_cluster import DB_USER, PORT, server_bin, start, stop

RECALLFS = str(Path(sys.executable).parent / "recallfs")
WORDS = "harbour lantern glacier orchard copper violet meadow falcon quartz river ember willow".split()


def run(env: dict[str, str], *args: str) -> str:
    proc = subprocess.run([RECALLFS, *args], env={**os.environ, **env}, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(f"recallfs {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


def write_batches(where: Path, host: str, records: int, batch: int) -> list[Path]:
    files = []
    for start_at in range(0, records, batch):
        path = where / f"{host}-{start_at:06d}.jsonl"
        with path.open("w") as fh:
            for i in range(start_at, min(records, start_at + batch)):
                words = " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7))
                fh.write(json.dumps({"type": "fact", "source_id": f"{host}-{i}", "created_at": "2026-06-01T10:00:00Z",
                                     "content": f"{unique_word(host, i)}: the {words} survey"}) + "\n")
        files.append(path)
    return files


def unique_word(host: str, i: int) -> str:
    """A word only record `i` of `host` holds: letters, which the tokenizer keeps whole, and a final q, so
    that Porter stemming takes no suffix off ("...ic" and "...ed" would stem alike)."""
    return f"{host}x" + "".join(chr(97 + int(d)) for d in f"{i:06d}") + "q"


def host_env(work: Path, host: str, store: str, semantic: bool) -> dict[str, str]:
    (work / host / "run").mkdir(parents=True, exist_ok=True)
    # listings uncapped: `ls facts/` counts every memory
    return {"RECALLFS_STORE": store, "RECALLFS_REPLICA_DIR": str(work / host / "replicas"),
            "XDG_RUNTIME_DIR": str(work / host / "run"), "RECALLFS_WORKSPACE": "bench/lake",
            "RECALLFS_AGENT": "bench", "RECALLFS_SEMANTIC": str(semantic).lower(), "RECALLFS_MAX_ROWS": "1000000"}


def recalled(path: Path, records: int) -> int:
    """How many records of both hosts `ls recall/<their own word>/` finds, each as its first hit."""
    found = 0
    for host in ("a", "b"):
        for i in range(records):
            names = os.listdir(path / "recall" / unique_word(host, i))
            found += any(n.startswith("01-") and unique_word(host, i) in n for n in names)
    return found


def mount(env: dict[str, str], path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    run(env, "mount", str(path))
    return path


def facts_listed(path: Path) -> list[str]:
    return [n for n in os.listdir(path / "facts") if n.endswith(".md")]


def concurrent_ingest(envs: list[dict[str, str]], files: list[list[Path]]) -> float:
    t0 = time.perf_counter()
    procs = [subprocess.Popen(["bash", "-c", " && ".join(f"{RECALLFS} ingest {f} > /dev/null" for f in fs)],
                              env={**os.environ, **env}) for env, fs in zip(envs, files, strict=True)]
    if any(p.wait() != 0 for p in procs):
        raise SystemExit("an ingest failed")
    return time.perf_counter() - t0


def visibility(env_a: dict[str, str], mount_b: Path, work: Path, trials: int) -> list[float]:
    waits = []
    for t in range(trials):
        word = f"qzvisible{t:03d}x"
        path = work / f"visible-{t}.jsonl"
        path.write_text(json.dumps({"type": "fact", "source_id": f"visible-{t}", "created_at": "2026-06-02T10:00:00Z",
                                    "content": f"{word} appeared"}) + "\n")
        run(env_a, "ingest", str(path))
        t0 = time.perf_counter()
        while not any(n.endswith(".md") for n in os.listdir(mount_b / "recall" / word)):
            if time.perf_counter() - t0 > 30:
                raise SystemExit(f"trial {t}: not visible on B after 30 s")
            time.sleep(0.02)
        waits.append(time.perf_counter() - t0)
    return waits


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_lake", description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=5000, help="records each host ingests (default 5000)")
    ap.add_argument("--batch", type=int, default=500, help="records per ingest (default 500)")
    ap.add_argument("--trials", type=int, default=50, help="visibility trials (default 50)")
    ap.add_argument("--queries", type=int, default=60, help="recall queries per mount (default 60)")
    ap.add_argument("--semantic", action="store_true", help="embed and recall with the semantic arm too")
    ap.add_argument("--work", type=Path, help="working directory (default: a new temporary one)")
    args = ap.parse_args(argv)
    work = (args.work or Path(tempfile.mkdtemp(prefix="recallfs-bench-lake-"))).absolute()
    work.mkdir(parents=True, exist_ok=True)
    cluster = start(work / "postgres")
    mounts: list[Path] = []
    try:
        subprocess.run([str(server_bin() / "createdb"), "-h", str(cluster.root), "-p", str(PORT), "-U", DB_USER,
                        "bench"], check=True, capture_output=True)
        url = f"ducklake:postgres:dbname=bench host={cluster.root} port={PORT} user={DB_USER};data={work / 'lake'}/"
        envs = [host_env(work, h, url, args.semantic) for h in ("a", "b")]
        run(envs[0], "init")
        mounts = [mount(env, work / h / "mnt") for env, h in zip(envs, ("a", "b"), strict=True)]
        files = [write_batches(work, h, args.records, args.batch) for h in ("a", "b")]
        took = concurrent_ingest(envs, files)
        expected = 2 * args.records
        listed = [facts_listed(m) for m in mounts]
        deadline = time.time() + 60
        while any(len(x) < expected for x in listed) and time.time() < deadline:
            time.sleep(0.2)
            listed = [facts_listed(m) for m in mounts]
        report: dict[str, Any] = {"records_per_host": args.records, "batch": args.batch, "ingest_s": round(took, 1)}
        for host, names, path in zip(("a", "b"), listed, mounts, strict=True):
            t0 = time.perf_counter()
            found = recalled(path, args.records)
            report[f"mount_{host}"] = {"listed": len(names), "distinct": len(set(names)), "recalled": found,
                                       "recall_all_s": round(time.perf_counter() - t0, 1),
                                       "lost": expected - len(set(names)), "duplicated": len(names) - len(set(names))}
        waits = visibility(envs[0], mounts[1], work, args.trials)
        report["visibility_s"] = {"p50": round(statistics.median(waits), 3), "p95": round(pct(waits, 95), 3),
                                  "max": round(max(waits), 3), "trials": len(waits)}
        report["lake_vs_file"] = compare(work, cluster, args)
        print(json.dumps(report, indent=2))
    finally:
        for m in mounts:
            subprocess.run([RECALLFS, "umount", str(m)], capture_output=True)
        stop(cluster.root)
    return 0


def compare(work: Path, cluster: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The same records into a new single-file store and into a new lake (through the CLI, batch by batch,
    file and lake alternating), then `ls recall/<q>/` p50 on a mount of each, alternating queries."""
    subprocess.run([str(server_bin() / "createdb"), "-h", str(cluster.root), "-p", str(PORT), "-U", DB_USER, "cmp"],
                   check=True, capture_output=True)
    url = f"ducklake:postgres:dbname=cmp host={cluster.root} port={PORT} user={DB_USER};data={work / 'lake-cmp'}/"
    file_env = host_env(work, "file", str(work / "file" / "store.duckdb"), args.semantic)
    lake_env = {**host_env(work, "c", url, args.semantic), "RECALLFS_WORKSPACE": "bench/compare"}
    file_env["RECALLFS_WORKSPACE"] = "bench/compare"
    files = write_batches(work, "cmp", args.records, args.batch)
    run(file_env, "init")
    run(lake_env, "init")
    spent = {"file": 0.0, "lake": 0.0}
    for f in files:
        for name, env in (("file", file_env), ("lake", lake_env)):
            t0 = time.perf_counter()
            run(env, "ingest", str(f))
            spent[name] += time.perf_counter() - t0
    rates = {name: args.records / s for name, s in spent.items()}
    mounts = {name: mount(env, work / name / "mnt-cmp") for name, env in (("file", file_env), ("lake", lake_env))}
    try:
        times: dict[str, list[float]] = {name: [] for name in mounts}
        for q in range(args.queries + 10):
            # a new query each time (a repeated one is served from the recall cache)
            query = f"{WORDS[q % len(WORDS)]} {WORDS[(q * 5 + 1) % len(WORDS)]} {unique_word('cmp', q * 37)}"
            for name, m in mounts.items():
                t0 = time.perf_counter()
                os.listdir(m / "recall" / query)
                if q >= 10:  # the first ten warm both
                    times[name].append(time.perf_counter() - t0)
        p50 = {name: statistics.median(t) * 1000 for name, t in times.items()}
    finally:
        for m in mounts.values():
            subprocess.run([RECALLFS, "umount", str(m)], capture_output=True)
    return {"ingest_rows_s": {k: round(v, 1) for k, v in rates.items()},
            "ingest_ratio_lake_over_file": round(rates["lake"] / rates["file"], 2),
            "recall_ls_p50_ms": {k: round(v, 2) for k, v in p50.items()},
            "recall_ratio_lake_over_file": round(p50["lake"] / p50["file"], 2)}


if __name__ == "__main__":
    sys.exit(main())
