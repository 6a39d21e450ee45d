"""A full disk under the store: one sentence, exit 1, and the store exactly as the message says.

The store lives on a real, small tmpfs filled with a real file. Before a write the message says nothing
was written and the store holds what it held; when the disk cannot take the index rebuild or the
embeddings after the commit, it says the rows are in, and running the same ingest again (with space
freed) finishes the job.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from fault_helpers import fill
from mount_helpers import base_env, needs_fuse, start_mount, stop_mount

from recallfs.query import diskspace
from recallfs.query.store import Store

from conftest import fact, snapshot, write_jsonl

SEED = [fact(f"f{i}", f"note {i}: the deploy of service {i} goes through the release train") for i in range(2000)]


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr
    return proc.stderr


def fts_watermark(store_path: Path, table: str = "facts") -> tuple[int, int]:
    """(highest rid the table's FTS index covers, highest rid in the table)."""
    with Store(store_path, read_only=True) as store:
        schema = store.partition("acme", "proj")
        cur = store.cursor()
        built = cur.execute("SELECT built_max_rid FROM main.fts_state WHERE schema_name = ? AND tbl = ?",
                            [schema, table]).fetchone()
        top = cur.execute(f"SELECT max(rid) FROM {schema}.{table}").fetchone()
        return int(built[0]), int(top[0])


def test_full_disk_refuses_even_one_record_and_changes_nothing(tmp_path, cli, disk):
    env = {"RECALLFS_STORE": str(disk / "store.duckdb")}
    cli("ingest", str(write_jsonl(tmp_path / "seed.jsonl", SEED[:5])), env=env, check=True)
    before = snapshot(disk / "store.duckdb")
    filler = fill(disk, 0)
    err = one_line_error(cli("ingest", str(write_jsonl(tmp_path / "one.jsonl", [fact("new", "a fresh note")])),
                             env=env))
    assert f"the disk holding {disk / 'store.duckdb'} is full" in err and "nothing written" in err
    filler.unlink()
    assert snapshot(disk / "store.duckdb") == before
    out = cli("recall", "release train", "--arm", "lexical", "--format", "json", env=env, check=True)
    assert len(json.loads(out.stdout)["hits"]) == 5


@pytest.mark.parametrize("argv", [("init",), ("ingest", "{file}"), ("policy", "set")])
def test_a_new_store_on_a_full_disk_is_not_left_half_made(tmp_path, cli, disk, argv):
    """DuckDB leaves an empty file when it cannot write a new store's header, and refuses that file
    ever after ("not a valid DuckDB database"): nothing may be left behind."""
    env = {"RECALLFS_STORE": str(disk / "store.duckdb")}
    argv = tuple(str(write_jsonl(tmp_path / "m.jsonl", SEED[:3])) if a == "{file}" else a for a in argv)
    filler = fill(disk, 0)
    err = one_line_error(cli(*argv, env=env))
    store = disk / "store.duckdb"
    assert f"the disk holding {store} is full: the store could not be created, nothing was written" in err
    assert sorted(os.listdir(disk)) == ["filler"]
    filler.unlink()
    cli(*argv, env=env, check=True)
    assert (disk / "store.duckdb").is_file()


def test_full_disk_under_the_staging_file_changes_nothing(tmp_path, cli, store_path, disk):
    cli("ingest", str(write_jsonl(tmp_path / "seed.jsonl", SEED[:5])), check=True)
    before = snapshot(store_path)
    # One page left: Python's tempfile passes TMPDIR over when it cannot write a byte there at all.
    filler = fill(disk, 4096)
    batch = write_jsonl(tmp_path / "batch.jsonl", [fact(f"n{i}", f"a fresh note {i}") for i in range(100)])
    err = one_line_error(cli("ingest", str(batch), env={"TMPDIR": str(disk)}))
    assert f"the disk holding {disk} is full (no room for the staging file" in err and "nothing written" in err
    filler.unlink()
    assert snapshot(store_path) == before and os.listdir(disk) == []


def test_disk_full_for_the_index_rebuild_says_the_rows_are_in(tmp_path, cli, disk):
    store_path = disk / "store.duckdb"
    env = {"RECALLFS_STORE": str(store_path)}
    cli("ingest", str(write_jsonl(tmp_path / "seed.jsonl", SEED)), env=env, check=True)
    before = snapshot(store_path)
    with Store(store_path, read_only=True) as store:
        schema = store.partition("acme", "proj")
        text = store.cursor().execute(f"SELECT sum(strlen(search_text)) FROM {schema}.facts").fetchone()[0]
    # Room for the one-record transaction (its rows and the 2,000 heads), not for re-indexing the table.
    write, rebuild = diskspace.write_need(10_000, len(SEED)), diskspace.fts_need(text)
    assert write + (1 << 20) < rebuild
    filler = fill(disk, write + (1 << 20))
    new = write_jsonl(tmp_path / "one.jsonl", [fact("zebra", "the zebrafish telemetry moved to grafana")])
    err = one_line_error(cli("ingest", str(new), env=env))
    assert f"the disk holding {store_path} is full" in err and "nothing written" not in err
    assert "the ingest itself was written (1 written, 0 unchanged)" in err
    assert "full-text index was not rebuilt" in err and "run the same ingest again" in err
    after = snapshot(store_path)
    assert len(after) == len(before) + 2 and any("zebrafish" in str(row) for row in after)  # a fact and its head
    built, top = fts_watermark(store_path)
    assert built < top  # the index has not seen it, and recall still finds it (from the delta)
    hits = json.loads(cli("recall", "zebrafish", "--arm", "lexical", "--format", "json", env=env,
                          check=True).stdout)["hits"]
    assert [h["source_id"] for h in hits] == ["zebra"]

    filler.unlink()
    again = cli("ingest", str(new), env=env, check=True)
    assert "0 written" in again.stdout and "1 unchanged" in again.stdout
    assert snapshot(store_path) == after
    built, top = fts_watermark(store_path)
    assert built == top


@pytest.mark.slow
def test_disk_full_for_the_vectors_says_the_rows_are_in(tmp_path, cli, disk):
    store_path = disk / "store.duckdb"
    env = {"RECALLFS_STORE": str(store_path), "RECALLFS_SEMANTIC": "true"}
    cli("ingest", str(write_jsonl(tmp_path / "seed.jsonl", SEED[:20])), env=env, check=True)
    batch = [fact(f"n{i}", f"new note {i} about the zebrafish tank") for i in range(600)]
    src = write_jsonl(tmp_path / "batch.jsonl", batch)
    # Room for the transaction (staged rows are under 1 kB each) and then the index rebuild; not for
    # 600 more vectors.
    leave = diskspace.write_need(600_000, 620) + (300 << 10)
    assert leave - (600 << 10) > diskspace.fts_need(620 * 100) and leave < diskspace.vector_need(600) - (600 << 10)
    filler = fill(disk, leave)
    err = one_line_error(cli("ingest", str(src), env=env))
    assert f"the disk holding {store_path} is full" in err and "nothing written" not in err
    assert "the ingest itself was written (600 written, 0 unchanged) and indexed for full-text search" in err
    assert "the semantic arm misses those" in err
    built, top = fts_watermark(store_path)
    assert built == top

    filler.unlink()
    again = cli("ingest", str(src), env=env, check=True)
    assert "0 written" in again.stdout
    with Store(store_path, read_only=True) as store:
        schema = store.partition("acme", "proj")
        vectors = store.cursor().execute(f"SELECT count(*) FROM {schema}.vectors").fetchone()[0]
    assert vectors == 620


@pytest.mark.mount
@needs_fuse
def test_an_inbox_write_whose_index_could_not_be_rebuilt_shows_in_health(tmp_path, cli, disk):
    """Found 2026-12-07: through inbox/ the write was stored (close returned 0, as it should: the fact is
    in) but health stayed ok and nothing said the full-text index was behind. Now health is degraded and
    says why until a later write rebuilds the index."""
    store_path = disk / "store.duckdb"
    env = base_env(tmp_path, RECALLFS_STORE=str(store_path))
    cli("ingest", str(write_jsonl(tmp_path / "seed.jsonl", SEED)), env=env, check=True)
    mount = start_mount(tmp_path, env)
    try:
        assert mount.mount_info()["health"] == "ok"
        filler = fill(disk, diskspace.write_need(10_000, len(SEED)) + (1 << 20))
        (tmp_path / "zebra.md").write_text("The zebrafish telemetry moved to grafana\n")
        proc = subprocess.run(["cp", str(tmp_path / "zebra.md"), str(mount.path / "inbox" / "zebra.md")],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        health = mount.mount_info()["health"]
        assert health.startswith("degraded") and "full-text index of acme/proj facts could not be rebuilt" in health
        assert f"the disk holding {store_path} is full" in health, health
        assert "zebrafish" in mount.cli("recall", "zebrafish", "--arm", "lexical").stdout  # from the delta

        filler.unlink()
        (tmp_path / "heron.md").write_text("The heron camera feed is archived weekly\n")
        subprocess.run(["cp", str(tmp_path / "heron.md"), str(mount.path / "inbox" / "heron.md")], check=True,
                       timeout=120)
        assert mount.mount_info()["health"] == "ok"
    finally:
        stop_mount(mount)
    built, top = fts_watermark(store_path)
    assert built == top
