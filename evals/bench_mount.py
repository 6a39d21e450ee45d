"""Benchmark the mount: the same tree through FUSE and on a native file system, and recall through the
mount against recall in-process. Every ratio comes from figures measured in the same run.

    python -m recallfs.evals.bench_mount                       # LoCoMo conv-26 (if present) + 100k synthetic
    python -m recallfs.evals.bench_mount --size 20000 --skip-locomo --no-embed --queries 20

Measures, per store:
- `cat` of every file (one `xargs cat` over a precomputed list), `grep -r`, `rg` and `find`, on the mount
  and on a native copy of the tree (exported through the mount with tar), cold and warm. Cold: page
  cache dropped (`echo 3 > /proc/sys/vm/drop_caches`) and, on the FUSE side, a freshly started daemon.
  Warm: the median of three runs after one unmeasured run.
- `ls "recall/<q>/"` (a process, as an agent runs it) against `recall()` called in-process on the same
  store with the same settings, p50 and p95 over distinct queries (each recall directory is new to the
  daemon, so every `ls` runs the pipeline).
- the daemon's peak RSS (VmHWM) after a full walk and the recall queries, with the model loaded.

The synthetic store (9% facts, a tenth of them with a second version, 2% summaries, the rest turns in
sessions of 44) is written through the JSON-staging ingest path in seconds; its document vectors are
stand-ins (`HashedVectors`), while queries run the real model and FAISS over every row.

Needs root (mounting, drop_caches), fusermount3 and rg. Stores are built once under --work and reused.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

RECALLFS = str(Path(sys.executable).parent / "recallfs")
TARGETS = {"warm": 1.5, "cold": 3.0, "recall_p50": 1.2, "rss_mb": 1536}
TOOLS = ("cat", "grep -r", "rg", "find")
GREP_PATTERN = "support group"

VOCAB = (
    "build deploy release staging production database postgres migration index cache latency timeout retry "
    "flaky test nextest cargo windows linux path separator config secret rotate vault token budget review "
    "merge branch commit rebase pipeline runner artifact docker image kernel fuse mount store recall memory "
    "agent session summary turn fact decision constraint preference procedure owner oncall incident alert "
    "metric dashboard trace span log error warning panic crash backup restore snapshot replica shard "
    "support group kangaroo penguin lighthouse harbor orchard violin telescope marathon garden"
).split()
KINDS = ("fact", "decision", "constraint", "preference", "procedure", "observation", "incident", "howto")


def log(msg: str) -> None:
    print(f"[{datetime.now():%H:%M:%S}] {msg}", file=sys.stderr, flush=True)


# -- stores -------------------------------------------------------------------------------------------
def _sentence(rng: random.Random, lo: int = 8, hi: int = 22) -> str:
    words = [rng.choice(VOCAB) if rng.random() < 0.8 else f"w{rng.randint(0, 20000)}"
             for _ in range(rng.randint(lo, hi))]
    return " ".join(words).capitalize() + "."


def synthetic_records(n: int, org: str, workspace: str) -> list[Any]:
    """n memory rows: 9% facts (a tenth of them with a second version), 2% summaries, the rest turns
    in sessions of 44. Deterministic."""
    from recallfs.query.records import MemoryRecord

    rng = random.Random(7)
    start = datetime(2025, 1, 1)
    common: dict[str, Any] = {"org": org, "workspace": workspace, "agent": "bench", "source": "synthetic"}
    out: list[MemoryRecord] = []
    n_facts = n * 9 // 100
    n_versions = n_facts // 10
    n_summaries = n * 2 // 100
    n_turns = n - n_facts - n_versions - n_summaries
    sessions = max(1, n_turns // 44)
    for i in range(n_facts + n_versions):
        base = i % n_facts
        out.append(MemoryRecord(
            table="facts", source_id=f"fact-{base}" if i < n_facts else f"fact-{base}-v2", content=_sentence(rng),
            created_at=start + timedelta(minutes=7 * i), kind=KINDS[base % len(KINDS)],
            tags=[f"tag{base % 20}"] + ([f"area/{base % 7}"] if base % 3 == 0 else []),
            entity=f"entity-{base % 200}", id=f"f-{base:06d}", **common))
    for s in range(min(n_summaries, sessions)):
        out.append(MemoryRecord(
            table="summaries", source_id=f"summary-{s}", content=_sentence(rng, 40, 80), kind="summary",
            created_at=start + timedelta(hours=s), session=f"session-{s:05d}", title=f"Session {s}", **common))
    for t in range(n_turns):
        s = t % sessions
        out.append(MemoryRecord(
            table="turns", source_id=f"turn-{t}", content=_sentence(rng), kind="turn",
            created_at=start + timedelta(hours=s, minutes=t // sessions), session=f"session-{s:05d}",
            seq=t // sessions, speaker=("maya", "atlas", "rio")[t % 3], **common))
    return out


def _model_id() -> str:
    from recallfs.query.model_files import default_model_path, model_identity

    return model_identity(default_model_path())


def _stored_model(path: Path) -> str | None:
    from recallfs.query.store import Store
    from recallfs.query.vector_meta import stored_model

    with Store(path, read_only=True) as store:
        stored = stored_model(store.cursor())
    return stored.model if stored else None


def build_synthetic(path: Path, n: int, embed: bool) -> None:
    from recallfs.query.ingest_file import ingest_records
    from recallfs.query.store import Store

    if path.exists() and (not embed or _stored_model(path) == _model_id()):
        return
    if not path.exists():
        log(f"generating {n} synthetic memories into {path}")
        t0 = time.perf_counter()
        records = synthetic_records(n, "bench", "synthetic")
        with Store(path, create=True) as store:
            ingest_records(store, records, embedder=None)  # the JSON-staging bulk path; FTS built after
            store.cursor().execute("CHECKPOINT")
        log(f"  written in {time.perf_counter() - t0:.1f} s")
    if embed:
        from recallfs.query.vector_write import reindex

        log("writing stand-in vectors (see HashedVectors) so the daemon's FAISS index holds every row")
        with Store(path, create=False) as store:
            reindex(store, HashedVectors(_model_id()))  # type: ignore[arg-type]
            store.cursor().execute("CHECKPOINT")


class HashedVectors:
    """Stand-in document vectors for the synthetic store: a unit vector seeded by each text's hash,
    recorded under the packaged model's identity.

    Embedding 100k rows with MiniLM takes minutes on an idle 2-core machine (far longer on a busy one);
    the benchmark measures latency and memory, not relevance, so the documents get stand-ins while
    every query is still embedded by the real model and searched by FAISS over all 100k x 384 vectors.
    Relevance is measured by the eval harness on real data instead."""

    dim = 384

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id

    def windows(self, texts: list[str]) -> list[list[str]]:
        return [[text] for text in texts]  # one window a row: a stand-in reads no word pieces

    def embed(self, texts: list[str], progress: Any = None) -> Any:
        import hashlib

        import numpy as np

        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            vec = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            out[i] = vec / np.linalg.norm(vec)
        return out


def build_locomo(path: Path, data: Path, embed: bool) -> None:
    env = {**os.environ, "RECALLFS_SEMANTIC": "true" if embed else "false"}
    if not path.exists():
        log(f"ingesting {data} into {path}")
        subprocess.run([RECALLFS, "ingest", "--format", "locomo", "--store", str(path), "--no-progress", str(data)],
                       check=True, env=env)
    if embed and _stored_model(path) != _model_id():
        log("the store's vectors come from another model version: recallfs reindex")
        subprocess.run([RECALLFS, "reindex", "--store", str(path), "--no-progress"], check=True, env=env)


def locomo_queries(data: Path, workspace: str, n: int) -> list[str]:
    from recallfs.evals.datasets import locomo_items, read_json

    items = [i for i in locomo_items(read_json(data)) if i.workspace == workspace]
    seen: dict[str, None] = {}
    for item in items:
        q = item.question.replace("/", "\u2215")
        if len(q.encode()) <= 200 and not q.startswith("."):
            seen.setdefault(q, None)
    return list(seen)[:n]


def synthetic_queries(n: int) -> list[str]:
    rng = random.Random(11)
    out: dict[str, None] = {}
    while len(out) < n:
        out.setdefault(" ".join(rng.sample(VOCAB, rng.randint(2, 4))), None)
    return list(out)


# -- measuring ----------------------------------------------------------------------------------------
def drop_caches() -> None:
    subprocess.run(["sync"], check=True)
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def run_timed(cmd: list[str], ok: tuple[int, ...] = (0,)) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode not in ok:
        raise RuntimeError(f"{cmd[:4]} exited {proc.returncode}: {proc.stderr[:400]}")
    return elapsed


def tool_cmd(tool: str, root: Path, file_list: Path) -> tuple[list[str], tuple[int, ...]]:
    if tool == "cat":
        return ["xargs", "-0", "-a", str(file_list), "cat"], (0,)
    if tool == "grep -r":
        return ["grep", "-r", "-c", GREP_PATTERN, str(root)], (0, 1)
    if tool == "rg":
        return ["rg", "-c", GREP_PATTERN, str(root)], (0, 1)  # as an agent runs it: ignore files probed
    return ["find", str(root), "-type", "f"], (0,)


def file_list(root: Path, out: Path) -> int:
    names = subprocess.run(["find", str(root), "-type", "f", "-print0"], capture_output=True, check=True).stdout
    out.write_bytes(names)
    return names.count(b"\0")


@dataclass
class Mounted:
    path: Path
    pid: int
    env: dict[str, str]


@dataclass
class Bench:
    name: str
    store: Path
    workspace: str
    agent: str
    queries: list[str]
    work: Path
    semantic: bool
    tools: tuple[str, ...] = TOOLS
    parts: tuple[str, ...] = ("cold", "warm", "recall")
    reuse_native: bool = False
    rows: list[dict[str, Any]] = field(default_factory=list)
    inproc_state: str = "?"

    @property
    def slug(self) -> str:
        return "".join(c if c.isalnum() else "-" for c in self.name.lower())

    def env(self, semantic: bool) -> dict[str, str]:
        return {**os.environ, "RECALLFS_STORE": str(self.store), "RECALLFS_WORKSPACE": self.workspace,
                "RECALLFS_AGENT": self.agent, "RECALLFS_SEMANTIC": "true" if semantic else "false",
                "RECALLFS_MAX_ROWS": "10000000", "XDG_RUNTIME_DIR": str(self.work / "run"),
                "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}

    def mount(self, semantic: bool = False) -> Mounted:
        path = self.work / f"mnt-{self.slug}"
        path.mkdir(parents=True, exist_ok=True)
        (self.work / "run").mkdir(exist_ok=True)
        env = self.env(semantic)
        subprocess.run([RECALLFS, "mount", str(path)], check=True, env=env, stdout=subprocess.DEVNULL)
        status = json.loads(subprocess.run([RECALLFS, "status", "--json"], env=env, capture_output=True,
                                           check=True).stdout)
        pid = next(m["pid"] for m in status["mounts"] if m["mountpoint"] == str(path))
        return Mounted(path, pid, env)

    def umount(self, m: Mounted) -> None:
        subprocess.run([RECALLFS, "umount", str(m.path)], env=m.env, stdout=subprocess.DEVNULL, check=False)

    def wait_semantic(self, m: Mounted, timeout: float = 600) -> str:
        """Until the daemon's semantic arm is ready or has settled on a degraded reason."""
        deadline = time.monotonic() + timeout
        reason = "?"
        while time.monotonic() < deadline:
            status = json.loads(subprocess.run([RECALLFS, "status", "--json"], env=m.env, capture_output=True,
                                               check=True).stdout)
            detail = next(x for x in status["mounts"] if x["mountpoint"] == str(m.path)).get("detail") or {}
            reason = "ready" if not detail.get("degraded", True) else str(detail.get("degraded_reason"))
            if reason != "warming":
                return reason
            time.sleep(0.5)
        return reason

    def add(self, measure: str, native: float | None, mount: float, target: str = "", unit: str = "s") -> None:
        ratio = mount / native if native else None
        self.rows.append({"store": self.name, "measure": measure, "native": native, "mount": mount,
                          "ratio": ratio, "target": target, "unit": unit})
        shown = f"{ratio:.2f}x" if ratio is not None else "-"
        log(f"  {measure}: native {native if native is not None else '-'} mount {mount:.4g} {unit} -> {shown}")

    # -- the measurements ---------------------------------------------------------------------------
    def in_process(self, store_path: Path) -> Callable[[str], float]:
        """recall() in this process on `store_path` (a copy of the store: the daemon owns the original),
        with the same settings and semantic arm as the daemon; returns a timer for one query."""
        from recallfs.query import settings
        from recallfs.query.recall import recall
        from recallfs.query.store import Store
        from recallfs.scope.principal import Principal, parse_workspace

        cfg = settings.resolve({"store": str(store_path), "workspace": self.workspace, "agent": self.agent},
                               env={"RECALLFS_SEMANTIC": "true" if self.semantic else "false"})
        semantic = None
        if self.semantic:
            from recallfs.query.semantic import SemanticSearch

            semantic = SemanticSearch.from_settings(cfg)
            if semantic.embedder is not None:
                semantic.embedder.wait_ready()
                semantic.embedder.serve_queries()  # the daemon's query path, as it serves
        org, ws = parse_workspace(self.workspace)
        principal = Principal(org, ws, self.agent)
        store = Store(store_path, read_only=True, threads=cfg.serve_threads)  # as the daemon opens it

        def timed(query: str) -> float:
            t0 = time.perf_counter()
            result = recall(store, principal, query, k=cfg.k, semantic=semantic, candidates=cfg.candidates,
                            rrf_k=cfg.rrf_k)
            elapsed = time.perf_counter() - t0
            self.inproc_state = str(result.degraded_reason) if result.degraded else "ready"
            return elapsed

        return timed

    def store_copy(self) -> Path:
        copy = self.work / f"inproc-{self.slug}.duckdb"
        for suffix in ("", ".faiss"):
            src, dst = Path(f"{self.store}{suffix}"), Path(f"{copy}{suffix}")
            if dst.is_dir():
                shutil.rmtree(dst)
            if src.is_dir():
                shutil.copytree(src, dst)
            elif src.exists():
                shutil.copyfile(src, dst)
        return copy

    def export_native(self) -> Path:
        native = self.work / f"native-{self.slug}"
        if native.exists() and self.reuse_native:
            return native
        if native.exists():
            shutil.rmtree(native)
        native.mkdir(parents=True)
        m = self.mount()
        try:
            t0 = time.perf_counter()
            subprocess.run(["bash", "-c", f"tar -c -C '{m.path}' . | tar -x -C '{native}'"], check=True)
            log(f"  exported the tree through the mount with tar in {time.perf_counter() - t0:.1f} s")
        finally:
            self.umount(m)
        return native

    def run(self) -> None:
        log(f"== {self.name}: {self.store} workspace {self.workspace}")
        copy = self.store_copy() if "recall" in self.parts else None
        native = self.export_native()
        native_list = self.work / f"files-native-{self.slug}"
        files = file_list(native, native_list)
        log(f"  {files} files in the tree")
        self.rows.append({"store": self.name, "measure": "files", "native": files, "mount": files, "ratio": 1.0,
                          "target": "", "unit": "files"})

        # cold: caches dropped; a fresh daemon for every FUSE run
        for tool in self.tools if "cold" in self.parts else ():
            cmd, ok = tool_cmd(tool, native, native_list)
            drop_caches()
            t_native = run_timed(cmd, ok)
            m = self.mount()
            try:
                fuse_list = self.work / f"files-mount-{self.slug}"
                fuse_list.write_bytes(native_list.read_bytes().replace(str(native).encode(), str(m.path).encode()))
                cmd, ok = tool_cmd(tool, m.path, fuse_list)
                drop_caches()
                t_mount = run_timed(cmd, ok)
            finally:
                self.umount(m)
            self.add(f"{tool}, cold", t_native, t_mount, f"<= {TARGETS['cold']}x")

        # warm: one daemon, one unmeasured run, then the median of three
        if "warm" in self.parts:
            self._warm(native, native_list)
        if copy is not None:
            self._recall(native, native_list, copy)

    def _warm(self, native: Path, native_list: Path) -> None:
        m = self.mount()
        try:
            fuse_list = self.work / f"files-mount-{self.slug}"
            fuse_list.write_bytes(native_list.read_bytes().replace(str(native).encode(), str(m.path).encode()))
            for tool in self.tools:
                figures = []
                for root, listing in ((native, native_list), (m.path, fuse_list)):
                    cmd, ok = tool_cmd(tool, root, listing)
                    run_timed(cmd, ok)
                    figures.append(statistics.median(run_timed(cmd, ok) for _ in range(3)))
                self.add(f"{tool}, warm", figures[0], figures[1], f"<= {TARGETS['warm']}x")
            requests = self._detail(m).get("by_op", {})
            log(f"  requests so far by operation: {requests}")
        finally:
            self.umount(m)

    def _recall(self, native: Path, native_list: Path, copy: Path) -> None:
        """Recall through the mount (semantic arm as configured, after a full walk) against recall() in
        this process on a copy of the store, query by query in alternation, so both see the same load."""
        m = self.mount(semantic=self.semantic)
        try:
            state = self.wait_semantic(m) if self.semantic else "off"
            log(f"  daemon semantic arm: {state}")
            fuse_list = self.work / f"files-mount-{self.slug}"
            fuse_list.write_bytes(native_list.read_bytes().replace(str(native).encode(), str(m.path).encode()))
            run_timed(tool_cmd("cat", m.path, fuse_list)[0])
            timed = self.in_process(copy)
            for q in self.queries[:5]:  # warm-up on both sides: caches, FAISS indexes
                run_timed(["ls", f"{m.path}/recall/{q} warmup/"])
                timed(q + " warmup")
            floor = statistics.median(run_timed(["ls", f"{m.path}/facts/by-kind/"]) for _ in range(20))
            recall_times, ls_times = [], []
            for q in self.queries:
                recall_times.append(timed(q))
                ls_times.append(run_timed(["ls", f"{m.path}/recall/{q}/"]))
            log(f"  in-process recall: semantic {self.inproc_state}")
            self.add("ls recall/<q>/ p50 (vs in-process recall)", _pct(recall_times, 50), _pct(ls_times, 50),
                     f"<= {TARGETS['recall_p50']}x at 100k")
            self.add("ls recall/<q>/ p95 (vs in-process recall)", _pct(recall_times, 95), _pct(ls_times, 95))
            self.add("ls of a cached directory (process start floor)", None, floor)
            rss = _vm_hwm_mb(m.pid)
            self.add(f"daemon peak RSS (semantic {state})", None, rss, f"<= {TARGETS['rss_mb']} MB", unit="MB")
            detail = self._detail(m)
            log(f"  daemon: {detail.get('requests')} requests, {detail.get('unexpected_errors')} unexpected "
                f"errors, {detail.get('inodes')} inodes, content cache {detail.get('content_cache_bytes')} B")
        finally:
            self.umount(m)

    def _detail(self, m: Mounted) -> dict[str, Any]:
        status = json.loads(subprocess.run([RECALLFS, "status", "--json"], env=m.env, capture_output=True,
                                           check=True).stdout)
        return next(x for x in status["mounts"] if x["mountpoint"] == str(m.path)).get("detail") or {}


def _pct(values: list[float], p: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def _vm_hwm_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def table(rows: list[dict[str, Any]]) -> str:
    def fmt(value: Any, unit: str) -> str:
        if value is None:
            return "-"
        if unit == "s":
            return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"
        if unit == "MB":
            return f"{value:.0f} MB"
        return str(value)

    out = ["| store | measure | native / in-process | mount | ratio | target |", "|---|---|---|---|---|---|"]
    for r in rows:
        ratio = f"{r['ratio']:.2f}x" if r["ratio"] is not None and r["unit"] == "s" else "-"
        out.append(f"| {r['store']} | {r['measure']} | {fmt(r['native'], r['unit'])} | {fmt(r['mount'], r['unit'])} "
                   f"| {ratio} | {r['target']} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m recallfs.evals.bench_mount", description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/recallfs-bench"), help="stores, copies, mounts")
    parser.add_argument("--locomo", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "data"
                        / "locomo10.json")
    parser.add_argument("--workspace", default="locomo/conv-26", help="LoCoMo conversation to mount")
    parser.add_argument("--size", type=int, default=100_000, help="memories in the synthetic store")
    parser.add_argument("--queries", type=int, default=40, help="distinct recall queries per store")
    parser.add_argument("--no-embed", action="store_true", help="no vectors: recall runs lexical on both sides")
    parser.add_argument("--skip-locomo", action="store_true")
    parser.add_argument("--skip-synthetic", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--tools", default=",".join(TOOLS), help=f"comma list of {', '.join(TOOLS)}")
    parser.add_argument("--parts", default="cold,warm,recall", help="comma list of cold, warm, recall")
    parser.add_argument("--reuse-native", action="store_true", help="keep the native copy of an earlier run")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("bench_mount needs root (mounting and drop_caches)", file=sys.stderr)
        return 2
    for tool in ("fusermount3", "rg"):
        if shutil.which(tool) is None:
            print(f"bench_mount needs {tool}", file=sys.stderr)
            return 2
    args.work.mkdir(parents=True, exist_ok=True)
    embed = not args.no_embed
    tools = tuple(t.strip() for t in args.tools.split(",") if t.strip())
    parts = tuple(p.strip() for p in args.parts.split(",") if p.strip())
    benches: list[Bench] = []
    if not args.skip_locomo and args.locomo.exists():
        store = args.work / f"locomo{'' if embed else '-lexical'}.duckdb"
        build_locomo(store, args.locomo, embed)
        benches.append(Bench(f"LoCoMo {args.workspace}", store, args.workspace, "default",
                             locomo_queries(args.locomo, args.workspace.split("/")[1], args.queries), args.work, embed,
                             tools, parts, args.reuse_native))
    elif not args.skip_locomo:
        log(f"LoCoMo data not found at {args.locomo}: skipped")
    if not args.skip_synthetic:
        store = args.work / f"synthetic-{args.size}{'' if embed else '-lexical'}.duckdb"
        build_synthetic(store, args.size, embed)
        benches.append(Bench(f"synthetic {args.size // 1000}k", store, "bench/synthetic", "bench",
                             synthetic_queries(args.queries), args.work, embed, tools, parts,
                             args.reuse_native))
    rows: list[dict[str, Any]] = []
    for bench in benches:
        bench.run()
        rows += bench.rows
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
