"""The delta of a large table's full-text index (query/fts_delta.py), on real DuckDB FTS indexes: the rows
above the watermark are tokenized exactly as the index tokenizes, a small ingest does not rebuild the
index, the new rows are found with BM25 scores close to those a rebuild gives, only among the rows the
caller may read, and a rebuild comes once the delta passes its share.

The tables here are small, so the size below which every ingest rebuilds is lowered (a module constant
read at each ingest)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from recallfs.query import fts_delta
from recallfs.query.fts_delta import load_delta, needs_rebuild
from recallfs.query.fts_freshness import rebuild_all_fts, stale_fts
from recallfs.query.gate import scope_clause
from recallfs.query.ingest_file import ingest_records
from recallfs.query.lexical import fts_schema, index_state, query_terms, score_indexed, search_calibrated
from recallfs.query.query_syntax import RecallOptions
from recallfs.query.records import parse_record
from recallfs.query.store import Store
from recallfs.scope.principal import Principal

from conftest import fact

ME = Principal("acme", "proj", "tester")
WORDS = ["heron", "estuary", "survey", "kingfisher", "canal", "museum", "fossil", "marsh", "tide", "reed"]
# accents, punctuation, digits, stop words, another script, a dotted abbreviation: the tokenizer's cases
ODD = ["Café déjà vu: the naïve résumé, again!", "e.g. the U.S.A. and 3.14 and v2.0-beta", "東京 の 天気 は 晴れ",
       "It is what it is, and that is that.", "snake_case and kebab-case and CamelCase", ""]


@pytest.mark.parametrize(("indexed", "behind", "due"), [
    (0, 5, True),  # no index: build it
    (1_000, 10, True),  # a small table: always rebuilt
    (4_000, 999, True),  # 5,000 rows or fewer in all: rebuilt
    (40_000, 9_999, True),  # past 5% behind
    (30_000, 1, False),  # one memory written to inbox/ of a mid-sized table: the delta serves it
    (30_000, 1_500, False),
    (30_000, 1_501, True),
    (1_000_000, 0, False),  # nothing behind
    (1_000_000, 10_000, False),  # 1% behind: the delta serves it
    (1_000_000, 50_000, False),  # at the cap
    (1_000_000, 50_001, True),  # past it
    (200_000, 10_000, False),  # 5% exactly
    (200_000, 10_001, True),  # past 5%
])
def test_when_a_rebuild_is_due(indexed, behind, due):
    assert needs_rebuild(indexed, behind) is due


def _records(start: int, count: int, **extra: object) -> list[dict]:
    return [fact(f"f{i}", f"The {WORDS[i % len(WORDS)]} {WORDS[(i * 3) % len(WORDS)]} note number {i}", **extra)
            for i in range(start, start + count)]


def _ingest(store: Store, records: list[dict]) -> None:
    ingest_records(store, [parse_record(r, org="acme", workspace="proj", agent=str(r.get("agent", "tester")))
                           for r in records], embedder=None)


def test_the_delta_holds_the_terms_the_index_holds(tmp_path: Path):
    records = _records(0, 30) + [fact(f"odd{i}", text) for i, text in enumerate(ODD) if text]
    with Store(tmp_path / "store.duckdb") as store:
        _ingest(store, records)
        schema = store.schema_for(ME)
        fts = fts_schema(schema, "facts")
        cur = store.cursor()
        delta = load_delta(cur, schema, "facts", fts, 0)  # every row, tokenized by the delta's query
        got = {(int(delta.rids[d]), term) for term, t in delta.vocab.items()
               for d in delta.docs[delta.starts[t]: delta.starts[t + 1]]}
        want = {(int(rid), str(term)) for rid, term in cur.execute(
            f"SELECT DISTINCT d.name, dict.term FROM {fts}.terms t JOIN {fts}.docs d ON t.docid = d.docid "
            f"JOIN {fts}.dict dict ON dict.termid = t.termid").fetchall()}
        assert got == want and len(want) > 100


@pytest.fixture
def large(monkeypatch):
    """Tables count as large from 20 rows, and the delta may grow to half the index."""
    monkeypatch.setattr(fts_delta, "ALWAYS_REBUILD", 20)
    monkeypatch.setattr(fts_delta, "DELTA_SHARE", 0.5)


def _search(store: Store, query: str) -> dict[int, float]:
    schema = store.schema_for(ME)
    where, params = scope_clause(ME, schema, RecallOptions())
    return search_calibrated(store, schema, "facts", query_terms(query), where=where, params=params, limit=10,
                             corpus=None)


def test_a_small_ingest_is_served_from_the_delta_until_a_rebuild_is_due(tmp_path: Path, large):
    path = tmp_path / "store.duckdb"
    with Store(path) as store:
        _ingest(store, _records(0, 60))
        schema = store.schema_for(ME)
        built = index_state(store, schema, "facts")
        assert built.watermark == built.max_rid
        new = [fact("n1", "The quetzalcoatlus fossil went to the natural history museum"),
               fact("n2", "A heron fossil was found near the canal museum"),
               fact("n3", "quetzalcoatlus secret: only the scout may read this", agent="scout", visibility="private")]
        _ingest(store, new)
        state = index_state(store, schema, "facts")
        assert state.watermark == built.watermark < state.max_rid, "the index was not rebuilt"
        assert stale_fts(store) == []  # nothing due
        assert [s.rows_behind for s in stale_fts(store, deferred=True)] == [3]
        served = _search(store, "quetzalcoatlus fossil museum")
        rid_of = dict(store.cursor().execute(f"SELECT source_id, rid FROM {schema}.facts").fetchall())
        assert next(iter(served)) == rid_of["n1"]
        assert rid_of["n3"] not in served  # the private row is in the delta, and still not readable
        terms = query_terms("quetzalcoatlus fossil museum")
        assert score_indexed(store, schema, "facts", terms, [rid_of["n1"]], corpus=None)[rid_of["n1"]] == \
            pytest.approx(served[rid_of["n1"]])

    copy = tmp_path / "rebuilt.duckdb"  # the same rows, with the index rebuilt over all of them
    shutil.copyfile(path, copy)
    with Store(copy) as store:
        rebuild_all_fts(store)
        rebuilt = _search(store, "quetzalcoatlus fossil museum")
    assert list(rebuilt)[:3] == list(served)[:3]
    for rid in list(rebuilt)[:3]:
        assert served[rid] == pytest.approx(rebuilt[rid], rel=0.1)

    with Store(path) as store:  # past half the index: the next ingest rebuilds it
        _ingest(store, _records(100, 40))
        state = index_state(store, store.schema_for(ME), "facts")
        assert state.watermark == state.max_rid
