"""A full-text index left behind by an ingest stopped between its commit and its index rebuild (issue 10,
item 5): found, served meanwhile from the delta (query/fts_delta.py), noted by a read-only recall, and
rebuilt by every open for writing (an ingest, an unchanged re-ingest included, `recallfs reindex`, a
mount). These tables are small, so a rebuild is always due; tests/test_fts_delta.py covers large ones.

The state is made with the real ingest (`ingest_records(..., refresh=False)`: the batch's transaction,
then nothing), which is exactly what a process killed right after the commit leaves;
tests/test_fts_crash.py kills real ingests.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mount_helpers import base_env, needs_fuse, start_mount, stop_mount

from recallfs.query.fts_freshness import StaleIndex, repair_fts, stale_fts
from recallfs.query.ingest_file import ingest_records, load_file
from recallfs.query.lexical import index_state, query_terms, score_indexed, search_calibrated
from recallfs.query.migrations import MEMORY_TABLES
from recallfs.query.repairs import REPAIRS
from recallfs.query.store import Store
from recallfs.scope.principal import Principal

from conftest import fact, turn, write_jsonl

ME = Principal("acme", "proj", "tester")
UNIQUE = "quetzalcoatlus"
BASE = [
    fact("f1", "Run the test suite with cargo nextest run", kind="procedure"),
    fact("f2", "The staging database is Postgres 16"),
    turn("s1", 0, "maya", "Where did we put the release checklist?"),
    turn("s1", 1, "atlas", "It is in docs/release.md, next to the changelog."),
]
BATCH = [
    fact("n1", f"The {UNIQUE} fossil went to the natural history museum"),
    fact("n2", "Sandpipers were counted at the estuary on Monday"),
    fact("n3", "The heron survey moved to the north marsh"),
]


def ingest(store_path: Path, records: list[dict], name: str, *, refresh: bool = True) -> None:
    data = write_jsonl(store_path.parent / name, records)
    with Store(store_path) as store:
        ingest_records(store, load_file(data, "jsonl", org="acme", workspace="proj", agent="tester"),
                       refresh=refresh, embedder=None)


def leave_behind(store_path: Path) -> None:
    """Commit BATCH the way an ingest does, and stop before the index rebuild."""
    ingest(store_path, BATCH, "batch.jsonl", refresh=False)


def unique_rid(store: Store) -> int:
    schema = store.schema_for(ME)
    return int(store.cursor().execute(f"SELECT rid FROM {schema}.facts WHERE source_id = 'n1'").fetchone()[0])


def lexical_scores(store: Store) -> tuple[dict[int, float], dict[int, float]]:
    """(what the lexical arm returns for UNIQUE, what BM25 alone gives the row that holds it)."""
    from recallfs.query.gate import scope_clause
    from recallfs.query.query_syntax import RecallOptions

    schema = store.schema_for(ME)
    where, params = scope_clause(ME, schema, RecallOptions())
    terms = query_terms(UNIQUE)
    found = search_calibrated(store, schema, "facts", terms, where=where, params=params, limit=10, corpus=None)
    return found, score_indexed(store, schema, "facts", terms, [unique_rid(store)], corpus=None)


def assert_fresh(store: Store) -> None:
    """Every index covers its table, and the batch's word is found by BM25, not by the substring pass."""
    assert stale_fts(store) == []
    schema = store.schema_for(ME)
    for table in MEMORY_TABLES:
        state = index_state(store, schema, table)
        assert state.watermark == state.max_rid, table
    found, bm25 = lexical_scores(store)
    rid = unique_rid(store)
    assert bm25.get(rid, 0) > 0, "the row is in the BM25 index"
    assert found[rid] == pytest.approx(bm25[rid])


def test_a_stale_index_is_found_and_rebuilt(store_path):
    ingest(store_path, BASE, "base.jsonl")
    with Store(store_path, read_only=True) as store:
        assert stale_fts(store) == []
    leave_behind(store_path)

    with Store(store_path, read_only=True) as store:
        schema = store.schema_for(ME)
        assert stale_fts(store) == [StaleIndex(schema, "facts", 3, "acme/proj", indexed=2)]
        found, bm25 = lexical_scores(store)
        # The delta scores the row with BM25 meanwhile (query/fts_delta.py), the same score fusion gets.
        assert list(found) == [unique_rid(store)] and found == pytest.approx(bm25)

    before = len(REPAIRS.recent())
    with Store(store_path) as store:
        assert repair_fts(store) == [StaleIndex(schema, "facts", 3, "acme/proj", indexed=2)]
        assert repair_fts(store) == []  # nothing left to do
        assert_fresh(store)
    repair = REPAIRS.recent()[before]
    assert (repair.index, repair.what, repair.why, repair.ok) == ("fts", "acme/proj facts", "3 rows behind", True)


def test_rows_without_any_index_are_stale(store_path):
    # The very first ingest of a store stopped before its rebuild: rows, and no index at all.
    leave_behind(store_path)
    with Store(store_path) as store:
        schema = store.schema_for(ME)
        assert stale_fts(store) == [StaleIndex(schema, "facts", 3, "acme/proj")]
        repair_fts(store)
        assert stale_fts(store) == []
        # An index recorded in fts_state but gone (dropped by hand) covers nothing either.
        with store.transaction() as cur:
            cur.execute(f"DROP SCHEMA fts_{schema}_facts CASCADE")
        assert stale_fts(store) == [StaleIndex(schema, "facts", 3, "acme/proj")]
        repair_fts(store)
        assert_fresh(store)


def test_read_only_recall_notes_it_and_an_unchanged_reingest_repairs_it(tmp_path, store_path, cli):
    base = write_jsonl(tmp_path / "base.jsonl", BASE)
    cli("ingest", str(base), check=True)
    leave_behind(store_path)

    out = json.loads(cli("recall", UNIQUE, "--format", "json", check=True).stdout)
    assert [h["source_id"] for h in out["hits"]] == ["n1"]  # found meanwhile, from the delta
    note = [n for n in out["notes"] if "full-text index is behind" in n]
    assert note and "facts by 3 rows" in note[0] and "recallfs reindex" in note[0]
    text = cli("recall", UNIQUE, check=True).stdout
    assert "note: the full-text index is behind" in text

    proc = cli("ingest", str(base), check=True)  # nothing new: before, this left the index behind for good
    assert "0 written" in proc.stdout
    assert "repaired the full-text index of acme/proj facts (3 rows behind)" in proc.stdout
    out = json.loads(cli("recall", UNIQUE, "--format", "json", check=True).stdout)
    assert not [n for n in out["notes"] if "full-text index" in n]
    with Store(store_path, read_only=True) as store:
        assert_fresh(store)


def test_an_ingest_of_new_rows_also_repairs_what_an_earlier_one_left(tmp_path, store_path, cli):
    cli("ingest", str(write_jsonl(tmp_path / "base.jsonl", BASE)), check=True)
    leave_behind(store_path)
    more = write_jsonl(tmp_path / "more.jsonl", [fact("m1", "Kingfishers nest along the canal"),
                                                  turn("s1", 2, "maya", "Thanks, found it")])
    proc = cli("ingest", str(more), check=True)
    # facts was 3 rows behind before this batch wrote 1 more; turns only held this batch's row.
    assert proc.stdout.rstrip().endswith("; repaired the full-text index of acme/proj facts (3 rows behind)")
    with Store(store_path, read_only=True) as store:
        assert_fresh(store)


def test_reindex_repairs_without_a_model(tmp_path, store_path, cli):
    cli("ingest", str(write_jsonl(tmp_path / "base.jsonl", BASE)), check=True)
    leave_behind(store_path)
    proc = cli("reindex", env={"RECALLFS_MODEL": str(tmp_path / "no-such-model")})
    # The vectors cannot be redone without the model; the full-text indexes are rebuilt all the same.
    assert proc.returncode == 1 and "cannot reindex" in proc.stderr and "Traceback" not in proc.stderr
    assert ("rebuilt 3 full-text indexes; repaired 1 that was behind: acme/proj facts (3 rows behind)"
            in proc.stdout)
    with Store(store_path, read_only=True) as store:
        assert_fresh(store)


@pytest.mark.slow
def test_reindex_repairs_the_full_text_index_and_the_vectors(tmp_path, store_path, cli):
    cli("ingest", str(write_jsonl(tmp_path / "base.jsonl", BASE)), check=True)
    leave_behind(store_path)
    proc = cli("reindex", check=True)  # the packaged model
    lines = proc.stdout.splitlines()
    assert lines[0] == "rebuilt 3 full-text indexes; repaired 1 that was behind: acme/proj facts (3 rows behind)"
    assert f"{len(BASE) + len(BATCH)} memories embedded" in lines[1]
    with Store(store_path, read_only=True) as store:
        assert_fresh(store)


@needs_fuse
@pytest.mark.mount
def test_a_mount_rebuilds_a_stale_index_at_start(tmp_path):
    env = base_env(tmp_path)
    store_path = Path(env["RECALLFS_STORE"])
    ingest(store_path, BASE, "base.jsonl")
    leave_behind(store_path)
    mount = start_mount(tmp_path, env)
    try:
        detail = mount.mount_info()["detail"]
        assert detail["index_repairs"] == {"fts": 1}
        (repair,) = detail["recent_index_repairs"]
        assert (repair["index"], repair["what"], repair["why"]) == ("fts", "acme/proj facts", "3 rows behind")
        log = Path(mount.mount_info()["log"]).read_text()
        assert "full-text index of acme/proj facts was 3 rows behind" in log
        results = json.loads((mount.path / "recall" / UNIQUE / "results.json").read_text())
        assert [h["source_id"] for h in results["hits"]] == ["n1"]
        assert not [n for n in results["notes"] if "full-text index" in n]
    finally:
        stop_mount(mount)
    with Store(store_path, read_only=True) as store:
        assert_fresh(store)
