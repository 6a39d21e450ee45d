"""Benchmark one workspace of 100k, 300k and 1M memories (issue 15): recall, start-up, memory, disk, ingest.

    python -m recallfs.evals.bench_scale                                  # 100k, 300k and 1M
    python -m recallfs.evals.bench_scale --sizes 100000 --queries 100

Per size, in one run:
- the store and its indexes on disk (DuckDB file, FAISS files and inverted lists);
- recall in process, p50/p95 over distinct queries, the modes taking turns (evals/bench_recall.py's
  measure_recall): lexical-only, hybrid, hybrid with rank fusion, and hybrid with every readable vector
  scanned (`RECALLFS_VECTOR_SEARCH=exact`, the baseline of the inverted lists);
- the daemon: start-up to ready (lexical: `recallfs mount` returning, with the semantic arm off) and to
  hybrid-ready (the model and the vector indexes loaded: health no longer says warming), with the
  indexes already on disk; `ls recall/<q>/` through the mount against hybrid recall() in this process
  on a copy of the store, query by query in alternation; index.md, a browse listing and a lookup by
  name; the daemon's peak RSS (VmHWM) with the model loaded;
- ingest of a 10k batch (embedded by the real model) into a copy of the store: rows/s, whether any
  vector index or inverted lists were rebuilt rather than extended, and what the full-text refresh did.

Stores are built once and cached under --cache (evals/scale_store.py says how their vectors are made).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from recallfs.evals.bench_model import serving_embedder
from recallfs.evals.bench_mount import RECALLFS, _pct, _vm_hwm_mb
from recallfs.evals.bench_recall import AGENT, ORG, WS, measure_recall, queries
from recallfs.evals.scale_store import build, scale_records
from recallfs.query.embedder import Embedder
from recallfs.query.settings import resolve

TARGETS = {"hybrid_p50_ms": 100.0, "hybrid_p95_ms": 200.0, "ls_ratio": 1.2, "startup_s": 10.0,
           "rss_gb": 3.0, "disk_gb": 2.5}


def store_path(cache: Path, size: int, embedder: Embedder) -> Path:
    return cache / f"scale-{size}-{embedder.model_id.replace('@', '-')}.duckdb"


def disk_bytes(path: Path) -> dict[str, int]:
    faiss = Path(str(path) + ".faiss")
    files = list(faiss.iterdir()) if faiss.is_dir() else []
    lists = sum(f.stat().st_size for f in files if ".lists." in f.name)
    return {"store": path.stat().st_size + _size(Path(str(path) + ".wal")),
            "vector_indexes": sum(f.stat().st_size for f in files) - lists, "inverted_lists": lists}


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


class Daemon:
    """`recallfs mount` of a store in its own runtime directory."""

    def __init__(self, store: Path, work: Path, semantic: bool) -> None:
        self.path = work / "mnt"
        self.store = store
        self.path.mkdir(parents=True, exist_ok=True)
        (work / "run").mkdir(exist_ok=True)
        self.env = {**os.environ, "RECALLFS_STORE": str(store), "RECALLFS_WORKSPACE": f"{ORG}/{WS}",
                    "RECALLFS_AGENT": AGENT, "RECALLFS_SEMANTIC": "true" if semantic else "false",
                    "XDG_RUNTIME_DIR": str(work / "run"), "HF_HUB_OFFLINE": "1"}
        self.pid = 0

    def start(self) -> float:
        """Seconds until `recallfs mount` returns (the mount serves; the model may still load)."""
        t0 = time.perf_counter()
        subprocess.run([RECALLFS, "mount", str(self.path)], check=True, env=self.env, stdout=subprocess.DEVNULL)
        elapsed = time.perf_counter() - t0
        self.pid = int(self.detail(top=True)["pid"])
        return elapsed

    def detail(self, top: bool = False) -> dict[str, Any]:
        status = json.loads(subprocess.run([RECALLFS, "status", "--json"], env=self.env, capture_output=True,
                                           check=True).stdout)
        mount = next(m for m in status["mounts"] if m["mountpoint"] == str(self.path))
        return mount if top else (mount.get("detail") or {})

    def wait_hybrid(self, timeout: float = 900) -> str:
        """Poll the daemon's control socket from this process: a `recallfs status` per poll would start a
        Python process every 50 ms and take a core from the start-up being timed."""
        deadline = time.monotonic() + timeout
        reason = "?"
        while time.monotonic() < deadline:
            detail = self._ping().get("health") or {}
            reason = "ready" if not detail.get("degraded", True) else str(detail.get("degraded_reason"))
            if reason != "warming":
                return reason
            time.sleep(0.05)
        return reason

    def _ping(self) -> dict[str, Any]:
        """The daemon's answer to `ping` (its health) over the socket beside the store: one JSON line each
        way, as `recallfs status` asks it (evals do not import the mount package)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(10)
            sock.connect(str(self.store) + ".sock")
            sock.sendall(b'{"op": "ping"}\n')
            chunks: list[bytes] = []
            while not chunks or not chunks[-1].endswith(b"\n"):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        reply: dict[str, Any] = json.loads(b"".join(chunks) or b"{}")
        return reply

    def stop(self) -> None:
        subprocess.run([RECALLFS, "umount", str(self.path)], env=self.env, stdout=subprocess.DEVNULL, check=False)


def measure_daemon(store: Path, work: Path, qs: list[str], embedder: Embedder) -> dict[str, Any]:
    out: dict[str, Any] = {}
    timed = in_process(store, work, embedder)
    lexical = Daemon(store, work / "lexical", semantic=False)
    try:
        out["startup_lexical_s"] = lexical.start()
    finally:
        lexical.stop()
    hybrid = Daemon(store, work / "hybrid", semantic=True)
    try:
        t0 = time.perf_counter()
        out["mount_s"] = hybrid.start()
        out["semantic"] = hybrid.wait_hybrid()
        out["startup_hybrid_s"] = time.perf_counter() - t0
        for q in qs[:5]:
            _ls(hybrid.path / "recall" / f"{q} warmup")
            timed(f"{q} warmup")
        times, inproc = [], []
        for q in qs:  # query by query, so that both see the same machine
            inproc.append(timed(q))
            times.append(_ls(hybrid.path / "recall" / q))
        out["ls_p50_ms"], out["ls_p95_ms"] = _pct(times, 50) * 1000, _pct(times, 95) * 1000
        out["inproc_p50_ms"] = _pct(inproc, 50) * 1000
        out.update(measure_tree(hybrid.path))
        out["rss_mb"] = _vm_hwm_mb(hybrid.pid)
    finally:
        hybrid.stop()
    return out


def in_process(store: Path, work: Path, embedder: Embedder) -> Any:
    """A timer of hybrid recall() in this process on a copy of the store (the daemon holds the original),
    with the daemon's settings."""
    from recallfs.query.recall import recall
    from recallfs.query.semantic import SemanticSearch
    from recallfs.query.store import Store
    from recallfs.query.vectors import VectorIndexes
    from recallfs.scope.principal import Principal

    copy = work / "inproc.duckdb"
    shutil.copyfile(store, copy)
    shutil.copytree(Path(str(store) + ".faiss"), Path(str(copy) + ".faiss"), dirs_exist_ok=True)
    cfg = resolve()
    st = Store(copy, read_only=True, threads=cfg.serve_threads)
    arm = SemanticSearch(embedder, budget_ms=2000, indexes=VectorIndexes(persist=False))
    principal = Principal(ORG, WS, AGENT)

    def timed(query: str) -> float:
        t0 = time.perf_counter()
        recall(st, principal, query, k=cfg.k, semantic=arm)
        return time.perf_counter() - t0

    return timed


def measure_tree(mnt: Path) -> dict[str, Any]:
    """index.md rendered, a browse listing (cut at RECALLFS_MAX_ROWS), and a lookup by name of a file the
    kernel has not seen (its dentries dropped first), each the median of 5."""
    out: dict[str, Any] = {}
    out["index_md_ms"] = statistics.median(_timed(["cat", str(mnt / "index.md")]) for _ in range(5)) * 1000
    names = subprocess.run(["ls", str(mnt / "facts")], capture_output=True, text=True, check=True).stdout.split()
    out["facts_listed"], out["facts_truncated"] = len(names), "_truncated.md" in names
    out["ls_facts_ms"] = statistics.median(_timed(["ls", str(mnt / "facts")]) for _ in range(5)) * 1000
    files = [n for n in names if n.endswith(".md") and not n.startswith("_")]
    lookups = []
    for name in files[-5:]:
        Path("/proc/sys/vm/drop_caches").write_text("2\n")  # dentries and inodes: the next stat is a LOOKUP
        lookups.append(_timed(["stat", "-c", "%s", str(mnt / "facts" / name)]))
    out["lookup_ms"] = statistics.median(lookups) * 1000 if lookups else float("nan")
    return out


def _timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _ls(path: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(["ls", f"{path}/"], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def measure_ingest(store: Path, work: Path, embedder: Embedder, size: int, rows: int) -> dict[str, Any]:
    """A batch of new memories (embedded) into a copy of the store; then the vector indexes as the next
    recall brings them up to date."""
    from recallfs.evals.bench_recall import base_sentences
    from recallfs.query.fts_freshness import stale_fts
    from recallfs.query.ingest_file import ingest_records
    from recallfs.query.store import Store
    from recallfs.query.vectors import VectorIndexes, ensure_indexes

    copy = work / "ingest.duckdb"
    shutil.copyfile(store, copy)
    shutil.copytree(Path(str(store) + ".faiss"), Path(str(copy) + ".faiss"), dirs_exist_ok=True)
    import random

    pool = base_sentences(rows, random.Random(99))
    records = [rec for rec, _ in scale_records(size + rows, pool, seed=17)][size:]
    trained = _TrainedCounter()
    logging.getLogger("recallfs.vectors").addHandler(trained)
    logging.getLogger("recallfs.vectors").setLevel(logging.INFO)
    try:
        with Store(copy) as st:
            t0 = time.perf_counter()
            report = ingest_records(st, records, embedder=embedder)
            ingest_s = time.perf_counter() - t0
            behind = sum(s.rows_behind for s in stale_fts(st, deferred=True))
            indexes = VectorIndexes()
            t1 = time.perf_counter()
            ensure_indexes(st, indexes)
            extend_s = time.perf_counter() - t1
    finally:
        logging.getLogger("recallfs.vectors").removeHandler(trained)
        shutil.rmtree(Path(str(copy) + ".faiss"), ignore_errors=True)
        copy.unlink(missing_ok=True)
    return {"rows": report.written, "rows_s": report.written / ingest_s, "ingest_s": ingest_s,
            "fts_rows_behind": behind, "index_rebuilds": indexes.rebuilds, "lists_trained": trained.count,
            "index_update_s": extend_s}


class _TrainedCounter(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += "inverted lists over" in record.getMessage()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench_scale", description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--sizes", default="100000,300000,1000000", help="store sizes, comma separated")
    p.add_argument("--queries", type=int, default=100, help="distinct queries per mode")
    p.add_argument("--ingest-rows", type=int, default=10_000, help="rows of the ingest batch (0: skip)")
    p.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "recallfs-bench-scale")
    p.add_argument("--skip", default="", help="parts to skip, comma separated: recall, daemon, ingest")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    embedder = serving_embedder("bench_scale")
    if embedder is None:
        return 1
    args.cache.mkdir(parents=True, exist_ok=True)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    results: dict[int, dict[str, Any]] = {}
    for size in (int(s) for s in args.sizes.split(",") if s.strip()):
        path = store_path(args.cache, size, embedder)
        if not path.exists():
            build(path, size, embedder)
        r: dict[str, Any] = {"disk": disk_bytes(path)}
        print(f"{size:,}: disk {r['disk']}", file=sys.stderr, flush=True)
        if "recall" not in skip:
            r["recall"] = measure_recall(path, embedder, args.queries, 2000)
            print(f"{size:,}: recall {json.dumps({m: round(v['p50'], 1) for m, v in r['recall'].items()})}",
                  file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory(prefix="recallfs-bench-scale-", dir=args.cache) as tmp:
            if "daemon" not in skip:
                r["daemon"] = measure_daemon(path, Path(tmp), queries(args.queries, seed=21), embedder)
                print(f"{size:,}: daemon {r['daemon']}", file=sys.stderr, flush=True)
            if "ingest" not in skip and args.ingest_rows > 0:
                r["ingest"] = measure_ingest(path, Path(tmp), embedder, size, args.ingest_rows)
                print(f"{size:,}: ingest {r['ingest']}", file=sys.stderr, flush=True)
        results[size] = r
    print(report(results))
    return 0


def report(results: dict[int, dict[str, Any]]) -> str:
    gb = 1024 ** 3
    sizes = sorted(results)
    head = "| measure | " + " | ".join(f"{s:,}" for s in sizes) + " | target at 1M |"
    lines = [head, "|---|" + "---:|" * len(sizes) + "---|"]

    def row(name: str, fn: Any, target: str = "") -> None:
        cells = []
        for s in sizes:
            try:
                cells.append(fn(results[s]))
            except (KeyError, TypeError, ZeroDivisionError):
                cells.append("-")
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {target} |")

    def rc(mode: str, key: str) -> Any:
        return lambda r: f"{r['recall'][mode][key]:.1f}"

    row("hybrid recall p50 / p95, ms", lambda r: f"{r['recall']['hybrid']['p50']:.1f} / "
        f"{r['recall']['hybrid']['p95']:.1f}", f"<= {TARGETS['hybrid_p50_ms']:.0f} / {TARGETS['hybrid_p95_ms']:.0f}")
    row("lexical-only recall p50 / p95, ms", lambda r: f"{r['recall']['lexical']['p50']:.1f} / "
        f"{r['recall']['lexical']['p95']:.1f}")
    row("hybrid / lexical-only p50", lambda r: f"{r['recall']['hybrid']['p50'] / r['recall']['lexical']['p50']:.2f}x")
    row("hybrid, exact vector search p50, ms", rc("hybrid_exact", "p50"))
    row("hybrid, rank fusion p50, ms", rc("hybrid_rrf", "p50"))
    row("ls recall/<q>/ p50 vs in-process hybrid, alternating, ms", lambda r: f"{r['daemon']['ls_p50_ms']:.1f} vs "
        f"{r['daemon']['inproc_p50_ms']:.1f} ({r['daemon']['ls_p50_ms'] / r['daemon']['inproc_p50_ms']:.2f}x)",
        f"<= {TARGETS['ls_ratio']}x")
    row("daemon start-up to ready, lexical, s", lambda r: f"{r['daemon']['startup_lexical_s']:.1f}")
    row("daemon start-up to hybrid-ready, s", lambda r: f"{r['daemon']['startup_hybrid_s']:.1f} "
        f"({r['daemon']['semantic']})", f"<= {TARGETS['startup_s']:.0f}")
    row("cat index.md, ms", lambda r: f"{r['daemon']['index_md_ms']:.0f}", "< 100")
    row("ls facts/ (cut at RECALLFS_MAX_ROWS), ms", lambda r: f"{r['daemon']['ls_facts_ms']:.0f} "
        f"({r['daemon']['facts_listed']:,} names{', _truncated.md' if r['daemon']['facts_truncated'] else ''})")
    row("lookup of a file by name, kernel cache dropped, ms", lambda r: f"{r['daemon']['lookup_ms']:.1f}")
    row("daemon peak RSS, model loaded, GB", lambda r: f"{r['daemon']['rss_mb'] / 1024:.2f}",
        f"<= {TARGETS['rss_gb']:.0f}")
    row("store + indexes on disk, GB", lambda r: f"{sum(r['disk'].values()) / gb:.2f} "
        f"({r['disk']['store'] / gb:.2f} + {r['disk']['vector_indexes'] / gb:.2f} + "
        f"{r['disk']['inverted_lists'] / gb:.3f})", f"<= {TARGETS['disk_gb']}")
    row("ingest of the batch, rows/s", lambda r: f"{r['ingest']['rows_s']:.0f} ({r['ingest']['rows']:,} rows)")
    row("after it: vector indexes rebuilt / lists trained", lambda r: f"{r['ingest']['index_rebuilds']} / "
        f"{r['ingest']['lists_trained']} (updated in {r['ingest']['index_update_s']:.1f} s)", "0 / 0")
    row("after it: rows outside the full-text index", lambda r: f"{r['ingest']['fts_rows_behind']:,}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
