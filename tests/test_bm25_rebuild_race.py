"""An index rebuilt while a recall reads it (found by 16 readers and 2 writers on a mount).

The lexical arm reads an FTS index's tables (stats, docs, dict, terms) into memory. Each statement used
to see the latest commit, so an ingest whose rebuild committed between two of the reads mixed two
builds: "index 869 is out of bounds for axis 0 with size 868", and the recall came back without that
table's lexical hits. Here the rebuild is a real ingest on another thread, run at the worst moment (right
after the index's documents were read), on a real store.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from recallfs.query.bm25_memory import IndexMoved, PostingsCache, fts_schema
from recallfs.query.bm25_query import index_state, indexed_bm25
from recallfs.query.ingest_file import ingest_records
from recallfs.query.lexical import query_terms
from recallfs.query.records import MemoryRecord, parse_record
from recallfs.query.store import Store
from recallfs.scope.principal import Principal

ME = Principal("acme", "proj", "tester")


def facts(word: str, n: int) -> list[MemoryRecord]:
    return [parse_record({"type": "fact", "source_id": f"{word}-{i}", "content": f"note {i} on the {word} rota",
                          "created_at": "2026-06-01T10:00:00Z"}, org="acme", workspace="proj", agent="tester")
            for i in range(n)]


class RebuildAfter:
    """The caller's cursor, with one real ingest (which rebuilds the index) committed on another thread
    right after the first statement that reads `marker`."""

    def __init__(self, store: Store, marker: str) -> None:
        self.cur = store.cursor()
        self.store = store
        self.marker = marker
        self.done = False

    def execute(self, sql: str, params: object = None) -> RebuildAfter:
        self.cur.execute(sql, params)
        if self.marker in sql and not self.done:
            self.done = True
            writer = threading.Thread(target=ingest_records, args=(self.store, facts("kestrel", 1)),
                                      kwargs={"embedder": None})
            writer.start()
            writer.join()
        return self

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cur, name)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "store.duckdb")
    ingest_records(s, facts("heron", 40), embedder=None)  # a small table: each ingest rebuilds its index
    return s


@pytest.mark.parametrize("marker", [".stats", ".docs", ".dict"])
def test_postings_read_during_a_rebuild_come_from_one_build(store: Store, marker: str) -> None:
    schema = store.schema_for(ME)
    before = index_state(store, schema, "facts")
    cache = PostingsCache()
    cur = RebuildAfter(store, marker)
    postings = cache.get(cur, str(store.path), schema, "facts", before.built_at)  # type: ignore[arg-type]
    assert cur.done
    assert len(postings.rids) == 40  # the build the state named, whole: not 41 documents' terms on 40
    after = index_state(store, schema, "facts", fresh=True)
    assert after.built_at != before.built_at and after.watermark > before.watermark
    assert len(cache.get(store.cursor(), str(store.path), schema, "facts", after.built_at).rids) == 41


def test_a_state_read_before_a_rebuild_is_read_again(store: Store) -> None:
    schema = store.schema_for(ME)
    stale = index_state(store, schema, "facts")
    ingest_records(store, facts("kestrel", 1), embedder=None)
    with pytest.raises(IndexMoved):
        PostingsCache().get(store.cursor(), str(store.path), schema, "facts", stale.built_at)
    state, bm25 = indexed_bm25(store, schema, "facts", query_terms("kestrel rota"), None)
    assert bm25 is not None and state.built_at != stale.built_at
    kestrel = store.cursor().execute(f"SELECT rid FROM {schema}.facts WHERE source_id = 'kestrel-0'").fetchone()
    assert kestrel is not None and bm25.of([kestrel[0]])[0] > 0  # scored from the new build


def test_fts_schema_names_the_index(store: Store) -> None:
    schema = store.schema_for(ME)
    tables = {r[0] for r in store.cursor().execute(
        "SELECT table_name FROM duckdb_tables() WHERE schema_name = ?", [fts_schema(schema, "facts")]).fetchall()}
    assert {"stats", "docs", "dict", "terms"} <= tables
