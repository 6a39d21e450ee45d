"""16 parallel readers (grep -r over the tree, and recall lookups) against one mount, with an ingest in the
middle: every command must succeed and the daemon must report no unexpected error.

RECALLFS_SOAK_S sets the duration (default 30 s; the figure in the issue).
"""

from __future__ import annotations

import os
import random
import subprocess
import threading
import time
from pathlib import Path

import pytest
from mount_helpers import SAMPLE, Mount, base_env, build_store, needs_fuse, start_mount, stop_mount

from conftest import fact, turn, write_jsonl

pytestmark = [needs_fuse, pytest.mark.mount, pytest.mark.slow]

SOAK_S = float(os.environ.get("RECALLFS_SOAK_S", "30"))
READERS = 16
WORDS = ["nextest", "flaky", "windows", "deploy", "postgres", "commit", "release", "separator", "support",
         "session", "staging", "topic", "bulk", "maya", "atlas", "kangaroo"]


def records() -> list:
    extra = [fact(f"soak-{i}", f"soak fact {i} mentions {WORDS[i % len(WORDS)]} and {WORDS[(i * 7) % len(WORDS)]}",
                  kind=("decision", "procedure", "fact")[i % 3], tags=[f"t{i % 5}"], entity=f"e{i % 9}")
             for i in range(300)]
    extra += [turn(f"soak-session-{i // 20}", i % 20, ("maya", "atlas")[i % 2],
                   f"turn {i} about {WORDS[i % len(WORDS)]}") for i in range(400)]
    return SAMPLE + extra


@pytest.fixture
def soak_mount(tmp_path: Path):
    env = base_env(tmp_path, RECALLFS_RECALL_TTL_S="1")
    build_store(tmp_path, records(), env)
    mount = start_mount(tmp_path, env)
    yield mount
    stop_mount(mount)


def test_16_parallel_readers_zero_errors(soak_mount: Mount, tmp_path: Path) -> None:
    m = soak_mount.path
    deadline = time.monotonic() + SOAK_S
    failures: list[str] = []
    counts = [0] * READERS

    def reader(n: int) -> None:
        rng = random.Random(n)
        while time.monotonic() < deadline and len(failures) < 20:
            if n % 2 == 0:
                cmd = ["grep", "-r", "-l", "-c", rng.choice(WORDS), str(m / rng.choice(["facts", "sessions",
                                                                                        "history", "entities"]))]
                ok = {0, 1}  # 1: no match
            else:
                q = f"{rng.choice(WORDS)} {rng.choice(WORDS)} k:{rng.randint(1, 15)}"
                cmd = ["bash", "-c", f'ls "{m}/recall/{q}/" >/dev/null && cat "{m}/recall/{q}/results.json" '
                                     f'"{m}/recall/{q}/context.xml" >/dev/null && cat "{m}/recall/{q}/"*.md '
                                     f'>/dev/null 2>&1; ls "{m}/recall/{q}/" | grep -q results.json']
                ok = {0}
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            if proc.returncode not in ok or "error" in proc.stderr.lower():
                failures.append(f"{cmd}: exit {proc.returncode}: {proc.stderr[:300]}")
            counts[n] += 1

    threads = [threading.Thread(target=reader, args=(n,)) for n in range(READERS)]
    for t in threads:
        t.start()
    time.sleep(min(SOAK_S / 2, 5))
    more = write_jsonl(tmp_path / "more.jsonl", [
        fact("soak-late", "A late fact about kangaroo releases, ingested under load", kind="decision")])
    soak_mount.cli("ingest", str(more))  # under load: must not fail on a lock
    for t in threads:
        t.join()
    assert failures == []
    assert all(counts), counts
    detail = soak_mount.mount_info()["detail"]
    assert detail["unexpected_errors"] == 0, detail
    assert detail["loop_thread_violations"] == 0
    assert "EIO" not in detail["errnos"]
    assert any("kangaroo" in n for n in os.listdir(m / "recall" / "late kangaroo releases"))
