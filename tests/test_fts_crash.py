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

from conftest import RECALLFS, run_cli, write_jsonl

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


REBUILDER = """
import json, sys, time
from recallfs.query.ingest_file import ingest_records
from recallfs.query.records import parse_record
from recallfs.query.store import Store
store = Store(sys.argv[1])
def batch(word):
    return [parse_record({"type": "fact", "source_id": f"{word}-{i}", "content": f"memory {i} about {word}",
                          "created_at": "2026-06-01T10:00:00Z"}, org="acme", workspace="proj", agent="tester")
            for i in range(3)]
ingest_records(store, batch("quokka"), embedder=None)   # rebuilds the index (a small table: whole)
store.cursor().execute("CHECKPOINT")                     # what DuckDB does by itself past 16 MB of WAL
ingest_records(store, batch("axolotl"), embedder=None)  # rebuilds it again: in the WAL only
print("ready", flush=True)
time.sleep(600)
"""


def test_a_kill_after_rebuild_checkpoint_rebuild_leaves_a_store_that_opens(tmp_path):
    """Found by agents writing to a mount's inbox until DuckDB checkpointed, then a kill -9: every later
    open failed replaying the WAL ("Cannot drop entry fts_... because there are entries that depend on
    it"), and the writes since the checkpoint were out of reach (query/lexical.drop_fts_objects)."""
    store = tmp_path / "store.duckdb"
    seed = write_jsonl(tmp_path / "seed.jsonl", [
        {"type": "fact", "source_id": "seed", "content": "the first memory", "created_at": "2026-06-01T09:00:00Z"}])
    run_cli("ingest", str(seed), env=env_for(store, tmp_path), check=True)
    with subprocess.Popen([str(Path(RECALLFS).parent / "python"), "-c", REBUILDER, str(store)],
                          stdout=subprocess.PIPE, text=True) as child:
        try:
            assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(30)
    assert Path(f"{store}.wal").exists()  # the second rebuild was never checkpointed
    with Store(store, read_only=True) as s:
        schema = s.schema_for(ME)
        rows = dict(s.cursor().execute(f"SELECT source_id, rid FROM {schema}.facts").fetchall())
        assert sorted(rows) == sorted(["seed", *(f"{w}-{i}" for w in ("quokka", "axolotl") for i in range(3))])
        for word in ("quokka", "axolotl"):
            rid = rows[f"{word}-0"]
            assert score_indexed(s, schema, "facts", query_terms(word), [rid], corpus=None).get(rid, 0) > 0, word


BROKEN_WAL = """
import os, sys, duckdb
from recallfs.query.fts_extension import fts_extension_path
conn = duckdb.connect(sys.argv[1])
conn.execute(f"LOAD '{fts_extension_path()}'")
conn.execute("CREATE TABLE docs(id INT, body TEXT)")
conn.execute("INSERT INTO docs SELECT i, 'word ' || i FROM range(10) t(i)")
for step in "rcr":  # DuckDB's own overwrite, as recallfs did before drop_fts_objects
    if step == "c":
        conn.execute("CHECKPOINT")
    else:
        conn.execute("PRAGMA create_fts_index('docs', 'id', 'body', overwrite=1)")
os._exit(0)
"""


def test_a_store_whose_log_cannot_be_replayed_says_what_to_do(tmp_path):
    """A store left by the DuckDB replay failure above (an older recallfs, or another cause): the
    error names the log and the way out, and says what that way out loses; nothing is moved for the user."""
    store = tmp_path / "store.duckdb"
    subprocess.run([str(Path(RECALLFS).parent / "python"), "-c", BROKEN_WAL, str(store)], check=True, timeout=120)
    proc = run_cli("status", env=env_for(store, tmp_path))
    assert proc.returncode == 1, proc
    message = proc.stderr
    assert f"cannot replay its write-ahead log {store}.wal" in message, message
    assert f"move {store}.wal aside" in message and "since that checkpoint" in message, message
    assert Path(f"{store}.wal").exists()
