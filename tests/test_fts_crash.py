"""kill -9 of a real `recallfs ingest` at points spread over its run (issue 10, item 5).

After each kill the store opens, the batch is all or nothing, and the next open for writing (an ingest
with nothing new) leaves every full-text index covering its table, the batch's word found by BM25 rather
than by the substring pass. The files are sized so that the index rebuild after the commit is a good
share of the run (a store of long memories, whose index is rebuilt whole, and a batch of short ones), so
the kill points land before, during and after the window this is about. They are sampling points only:
nothing asserts which state a kill hit; the test prints the states it saw.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from recallfs.query.fts_freshness import stale_fts
from recallfs.query.lexical import index_state, query_terms, score_indexed
from recallfs.query.migrations import MEMORY_TABLES
from recallfs.query.store import Store
from recallfs.scope.principal import Principal

from conftest import RECALLFS, run_cli

pytestmark = pytest.mark.slow
ME = Principal("acme", "proj", "tester")
UNIQUE = "zyzzogeton"  # in every row of the batch, in no row of the base (its words are under 10 letters)
BASE_ROWS, BATCH_ROWS, KILLS = 2000, 2000, 8


def write_files(folder: Path) -> tuple[Path, Path, Path]:
    rng = random.Random(10)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(4, 9)))
             for _ in range(20000)]

    def fact(source_id: str, content: str) -> str:
        return json.dumps({"type": "fact", "source_id": source_id, "content": content,
                           "created_at": "2026-06-01T10:00:00Z"})

    base = [fact(f"base-{i}", " ".join(rng.choices(vocab, k=600))) for i in range(BASE_ROWS)]
    batch = [fact(f"batch-{i}", f"Batch memory {i} mentions {UNIQUE} and widget {i % 97}") for i in range(BATCH_ROWS)]
    paths = folder / "base.jsonl", folder / "batch.jsonl", folder / "again.jsonl"
    for path, lines in zip(paths, (base, batch, base[:1]), strict=True):
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return paths


def env_for(store: Path, tmp: Path) -> dict[str, str]:
    # TMPDIR: the ingest stages its rows in a temporary file, which a killed process leaves behind.
    return {**os.environ, "RECALLFS_STORE": str(store), "RECALLFS_WORKSPACE": "acme/proj",
            "RECALLFS_AGENT": "tester", "RECALLFS_SEMANTIC": "false", "TMPDIR": str(tmp)}


def copy_store(template: Path, folder: Path) -> Path:
    folder.mkdir()
    (folder / "tmp").mkdir()
    target = folder / "store.duckdb"
    shutil.copy(template, target)
    return target


def inspect(store: Path) -> tuple[int, int, bool]:
    """(base rows, batch rows, whether some index is behind), read as a read-only recall would."""
    with Store(store, read_only=True) as s:
        schema = s.schema_for(ME)
        cur = s.cursor()
        base, = cur.execute(f"SELECT count(*) FROM {schema}.facts WHERE source_id LIKE 'base-%'").fetchone()
        batch, = cur.execute(f"SELECT count(*) FROM {schema}.facts WHERE source_id LIKE 'batch-%'").fetchone()
        return int(base), int(batch), bool(stale_fts(s))


def assert_fresh(store: Path, batch_committed: bool) -> None:
    with Store(store, read_only=True) as s:
        assert stale_fts(s) == []
        schema = s.schema_for(ME)
        for table in MEMORY_TABLES:
            state = index_state(s, schema, table)
            assert state.watermark == state.max_rid, table
        if batch_committed:
            rid, = s.cursor().execute(f"SELECT rid FROM {schema}.facts WHERE source_id = 'batch-0'").fetchone()
            assert score_indexed(s, schema, "facts", query_terms(UNIQUE), [int(rid)], corpus=None).get(int(rid), 0) > 0


def test_kill_9_at_points_spread_over_an_ingest(tmp_path):
    base, batch, again = write_files(tmp_path)
    template = tmp_path / "template" / "store.duckdb"
    template.parent.mkdir()
    run_cli("ingest", str(base), env=env_for(template, tmp_path), check=True)

    # One full run, to spread the kill points over its duration (a measurement, not an assertion).
    store = copy_store(template, tmp_path / "full")
    start = time.monotonic()
    run_cli("ingest", str(batch), env=env_for(store, store.parent / "tmp"), check=True)
    duration = time.monotonic() - start
    assert inspect(store) == (BASE_ROWS, BATCH_ROWS, False)

    seen = []
    for i in range(1, KILLS + 1):
        store = copy_store(template, tmp_path / f"kill-{i}")
        env = env_for(store, store.parent / "tmp")
        proc = subprocess.Popen([str(RECALLFS), "ingest", str(batch)], env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(duration * i / (KILLS + 1))
        killed = proc.poll() is None
        if killed:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)

        base_rows, batch_rows, behind = inspect(store)  # the store opens
        assert base_rows == BASE_ROWS and batch_rows in (0, BATCH_ROWS), "the batch is all or nothing"
        committed = batch_rows == BATCH_ROWS
        out = run_cli("ingest", str(again), env=env, check=True).stdout  # the next open for writing
        assert "0 written" in out
        assert ("repaired the full-text index" in out) == behind, out
        assert_fresh(store, committed)
        state = ("rolled back" if not committed else "committed, index behind" if behind
                 else "committed, index rebuilt")
        seen.append(f"{duration * i / (KILLS + 1):.2f}s: {state}{'' if killed else ' (had exited)'}")
    print(f"\nfull run {duration:.2f}s; kills: " + "; ".join(seen))
