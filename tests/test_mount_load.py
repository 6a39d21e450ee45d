"""Load: 16 parallel readers for RECALLFS_LOAD_S seconds (60 by default; `pytest --long`: 600) on one hybrid
mount of the demo store, while ingests arrive through the control socket.

Every kind of lookup runs at once: ls and cat over the browse tree, rg and find over subtrees, recall
directories named after entities (the lookups that used to invalidate DuckDB within 20 s), entities with
inline options, free queries, names that are not UTF-8, rg over recall directories; and, meanwhile, new
files and re-ingests of old ones. The result must be zero failed commands, no EIO, no unexpected error in
the daemon, a healthy daemon afterwards, and every ingested record visible in the tree and in recall.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from mount_helpers import Mount, needs_fuse, start_mount, stop_mount, wait_until

from conftest import REPO, fact, run_cli, turn, write_jsonl

pytestmark = [needs_fuse, pytest.mark.mount, pytest.mark.slow]

LOAD_S = float(os.environ.get("RECALLFS_LOAD_S", "60"))
READERS = 16
DEMO = REPO / "query" / "data" / "demo_memory.jsonl"
ENTITIES = ["release", "tests", "maya", "ci", "config", "telemetry", "docs", "review", "python", "Maya", "CI"]
OPTIONS = ["k:5", "k:1", "since:30d", "since:99999y", "kind:decision", "tag:ci", "offset:3", "recent:7d",
           "budget:300", "until:2026-05-01", "k:lots", "agent:atlas"]
QUERIES = ["how do I run the tests", "release cadence", "what is the MSRV", "windows path bug", "deploy docs",
           "flaky watcher test", "caf\udce9 config", "\udcff\udcfe nextest"]


@pytest.fixture
def loaded(tmp_path: Path):
    env = {"RECALLFS_STORE": str(tmp_path / "store.duckdb"), "RECALLFS_WORKSPACE": "demo/tern",
           "RECALLFS_AGENT": "atlas", "RECALLFS_SEMANTIC": "true", "RECALLFS_RECALL_TTL_S": "1",
           "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    run_cli("ingest", str(DEMO), env=env, check=True, timeout=600)
    mount = start_mount(tmp_path, env)
    assert wait_until(lambda: not mount.mount_info()["detail"]["degraded"], timeout=180)  # hybrid recall
    yield mount
    stop_mount(mount)


class Load:
    def __init__(self, mount: Mount) -> None:
        self.m = mount.path
        self.files = [os.path.join(r, f) for r, _, fs in os.walk(self.m / "sessions") for f in fs]
        self.files += [str(p) for p in (self.m / "facts").iterdir() if p.is_file()]
        self.dirs = [str(self.m / d) for d in ("facts", "facts/by-tag", "facts/by-kind", "entities", "history",
                                                "sessions", "recall")]
        self.dirs += [str(p) for p in (self.m / "sessions").iterdir()][:10]
        self.ops: Counter[str] = Counter()
        self.failures: list[str] = []
        self.lock = threading.Lock()

    def query(self, rng: random.Random) -> str:
        roll = rng.random()
        if roll < 0.45:
            return rng.choice(ENTITIES)
        if roll < 0.75:
            return f"{rng.choice(ENTITIES)} {rng.choice(OPTIONS)}"
        return f"{rng.choice(QUERIES)} {rng.choice(OPTIONS) if rng.random() < 0.5 else ''}".strip()

    def command(self, rng: random.Random) -> tuple[str, list[str], set[int]]:
        kind = rng.choice(["ls", "cat", "rg", "grep", "find", "recall", "recall", "recall", "recall", "rg-recall"])
        if kind == "ls":
            return kind, ["ls", "-l", rng.choice(self.dirs)], {0}
        if kind == "cat":
            return kind, ["cat", *rng.sample(self.files, 3), str(self.m / "index.md")], {0}
        if kind == "rg":
            where = rng.choice(["facts", "sessions", "entities", "history"])
            word = rng.choice(["nextest", "windows", "release", "msrv"])
            return kind, ["rg", "-c", "-i", word, str(self.m / where)], {0, 1}
        if kind == "grep":
            where = rng.choice(["facts", "sessions", "entities"])
            return kind, ["grep", "-r", "-l", "-i", rng.choice(["flaky", "cargo", "maya"]), str(self.m / where)], {0, 1}
        if kind == "find":
            return kind, ["find", str(self.m / rng.choice(["facts", "sessions", "history"])), "-name", "*.md"], {0}
        q = self.query(rng)
        d = os.fsdecode(os.fsencode(str(self.m / "recall" / q)))
        if kind == "rg-recall":
            return "recall+rg", ["bash", "-c", f'ls "{d}/" >/dev/null && rg -c -i "{rng.choice(["tests", "release"])}" '
                                             f'"{d}/"; test $? -le 1'], {0}
        script = (f'ls "{d}/" | grep -q results.json && cat "{d}/results.json" "{d}/context.xml" >/dev/null '
                  f'&& for f in "{d}/"*.md; do [ -e "$f" ] || continue; cat "$f" >/dev/null || exit 1; done')
        return "recall", ["bash", "-c", script], {0}

    def reader(self, n: int, deadline: float) -> None:
        rng = random.Random(n)
        while time.monotonic() < deadline and len(self.failures) < 20:
            kind, cmd, ok = self.command(rng)
            proc = subprocess.run([os.fsencode(c) for c in cmd], capture_output=True, timeout=300)
            stderr = proc.stderr.decode(errors="replace")
            with self.lock:
                self.ops[kind] += 1
                if proc.returncode not in ok or "rror" in stderr:
                    self.failures.append(f"{kind} {cmd}: exit {proc.returncode}: {stderr[:300]}")


def ingester(mount: Mount, tmp: Path, deadline: float, markers: list[str], failures: list[str]) -> None:
    n = 0
    first = None
    while time.monotonic() < deadline:
        n += 1
        marker = f"loadmarker{n:04d}"
        data = write_jsonl(tmp / f"load-{n}.jsonl", [
            fact(f"load-{n}", f"Load fact {marker}: the {('ci', 'release', 'tests')[n % 3]} runner rotates",
                 kind="decision", entity=("ci", "release", "tests")[n % 3], tags=["ci"]),
            turn(f"load-session-{n}", 0, "maya", f"Did {marker} land in the release notes?"),
        ])
        first = first or data
        for path in (data, first):  # a new file, then an old one again (a no-op)
            proc = mount.cli("ingest", str(path), check=False, timeout=300)
            if proc.returncode != 0:
                failures.append(f"ingest {path.name}: {proc.stderr[:300]}")
        markers.append(marker)
        time.sleep(1.0)


def test_16_readers_with_ingest_zero_errors(loaded: Mount, tmp_path: Path) -> None:
    load = Load(loaded)
    deadline = time.monotonic() + LOAD_S
    markers: list[str] = []
    ingest_failures: list[str] = []
    threads = [threading.Thread(target=load.reader, args=(n, deadline)) for n in range(READERS)]
    threads.append(threading.Thread(target=ingester, args=(loaded, tmp_path, deadline, markers, ingest_failures)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"\nload: {READERS} readers x {LOAD_S:.0f} s: {sum(load.ops.values())} commands {dict(load.ops)}, "
          f"{len(markers)} ingests (+ as many re-ingests), failures {len(load.failures) + len(ingest_failures)}",
          file=sys.stderr)
    assert load.failures == [] and ingest_failures == []
    detail = loaded.mount_info()["detail"]
    assert detail["unexpected_errors"] == 0, detail["last_unexpected_error"]
    assert "EIO" not in detail["errnos"] and detail["loop_thread_violations"] == 0
    assert detail["store"]["fatal_errors"] == 0
    assert loaded.mount_info()["health"] == "ok"
    # the recalls under load embedded their queries the daemon's way: ONNX Runtime, float32
    assert detail["query_embedding"].startswith("onnx float32"), detail["query_embedding"]
    # every record ingested under load is in the tree and found by recall
    facts = "\n".join(p.read_text() for p in (loaded.path / "facts").iterdir() if p.is_file())
    sessions = set(os.listdir(loaded.path / "sessions"))
    for n, marker in enumerate(markers, start=1):
        assert marker in facts, marker
        assert f"load-session-{n}" in sessions
        hits = [h for h in os.listdir(loaded.path / "recall" / marker) if h.endswith(".md")]
        assert hits, marker
    # and the daemon still serves every kind of request
    assert "results.json" in os.listdir(loaded.path / "recall" / "maya k:5")
    assert loaded.cli("recall", "ci", "-k", "3").returncode == 0
