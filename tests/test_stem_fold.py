"""Porter's two stems of a word ending in a vowel and y count as one (query/stem_fold.py): the rule
from a table, the SQL form against the Python one, and BM25 over a real DuckDB FTS index and its delta."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from recallfs.query.bm25_memory import load_postings
from recallfs.query.fts_extension import load_fts
from recallfs.query.stem_fold import FOLD_SQL, fold, fold_vocabulary, variants

# (word, its Porter stem as DuckDB gives it, the folded stem)
WORDS = [
    ("enjoy", "enjoi", "enjoi"), ("enjoyed", "enjoi", "enjoi"), ("enjoyment", "enjoy", "enjoi"),
    ("enjoyable", "enjoy", "enjoi"), ("deploys", "deploi", "deploi"), ("deployment", "deploy", "deploi"),
    ("playful", "play", "plai"), ("play", "plai", "plai"), ("joyful", "joy", "joi"), ("joy", "joi", "joi"),
    ("sky", "sky", "sky"), ("ski", "ski", "ski"),  # a y after a consonant stays: two words
    ("happiness", "happi", "happi"), ("day", "dai", "dai"), ("by", "by", "by"), ("ay", "ai", "ai"),
    ("koi", "koi", "koi"),
]


@pytest.fixture(scope="module")
def conn() -> duckdb.DuckDBPyConnection:
    c = duckdb.connect()
    load_fts(c)
    return c


@pytest.mark.parametrize(("word", "porter", "folded"), WORDS)
def test_fold(conn, word, porter, folded):
    (stem,) = conn.execute("SELECT stem(?, 'porter')", [word]).fetchone()
    assert stem == porter
    assert fold(stem) == folded
    (in_sql,) = conn.execute(f"SELECT {FOLD_SQL.format('stem(?, ' + chr(39) + 'porter' + chr(39) + ')')}",
                             [word]).fetchone()
    assert in_sql == folded
    assert fold(folded) == folded and stem in variants(folded)


def test_a_vocabulary_with_nothing_to_fold_costs_nothing():
    assert fold_vocabulary(["by", "enjoi", "sky"]) is None
    words, rows = fold_vocabulary(["deploi", "deploy", "enjoi", "enjoy", "sky"])
    assert words == ["deploi", "enjoi", "sky"] and rows.tolist() == [0, 0, 1, 1, 2]


def test_both_forms_score_as_one_term(conn):
    conn.execute("CREATE OR REPLACE TABLE docs (rid BIGINT, body VARCHAR)")
    conn.executemany("INSERT INTO docs VALUES (?, ?)", [
        (1, "the deployment of the api went well"), (2, "she deploys the api on fridays"),
        (3, "deployment notes: it deploys twice"), (4, "the sky over the ski slope"), (5, "nothing here")])
    conn.execute("PRAGMA create_fts_index('docs', 'rid', 'body', stemmer='porter', overwrite=1)")
    postings = load_postings(conn, "fts_main_docs")
    t = postings.vocab.get("deploi")
    assert t is not None and postings.vocab.get("deploy") is None
    lo, hi = postings.starts[t], postings.starts[t + 1]
    held = dict(zip(postings.rids[postings.docs[lo:hi]].tolist(), postings.freqs[lo:hi].tolist(), strict=True))
    assert held == {1: 1.0, 2: 1.0, 3: 2.0}  # one term, its df the union (3 docs), row 3 counted twice
    scores = postings.score(["deploi"])
    assert np.count_nonzero(scores) == 3
    # the term's BM25 is match_bm25's for a word held in one form: same df, same lengths
    ski = postings.score(["ski"])
    assert np.count_nonzero(ski) == 1


def test_the_delta_folds_as_the_index_does(tmp_path, monkeypatch):
    """Rows above the index's watermark: their terms folded, and a folded term's document frequency in
    the index is the documents holding either form (three here, though the two forms' dfs add to four)."""
    from recallfs.query import fts_delta
    from recallfs.query.fts_delta import _indexed_df, load_delta
    from recallfs.query.gate import scope_clause
    from recallfs.query.ingest_file import ingest_records
    from recallfs.query.lexical import fts_schema, index_state, query_terms, search_calibrated
    from recallfs.query.query_syntax import RecallOptions
    from recallfs.query.records import parse_record
    from recallfs.query.store import Store
    from recallfs.scope.principal import Principal

    from conftest import fact

    monkeypatch.setattr(fts_delta, "ALWAYS_REBUILD", 20)
    monkeypatch.setattr(fts_delta, "DELTA_SHARE", 0.5)
    me = Principal("acme", "proj", "tester")

    def ingest(store: Store, records: list[dict]) -> None:
        ingest_records(store, [parse_record(r, org="acme", workspace="proj", agent="tester") for r in records],
                       embedder=None)

    filler = [fact(f"x{i}", f"filler note {i} about the heron survey") for i in range(30)]
    indexed = [fact("a", "the deployment of the heron api"), fact("b", "she deploys the heron api"),
               fact("c", "deployment notes: it deploys twice")]
    with Store(tmp_path / "store.duckdb") as store:
        ingest(store, filler + indexed)
        schema = store.schema_for(me)
        ingest(store, [fact("n", "the canal deployment went fine")])
        state = index_state(store, schema, "facts")
        assert state.watermark < state.max_rid, "the new row should be in the delta"
        fts = fts_schema(schema, "facts")
        cur = store.cursor()
        assert _indexed_df(cur, fts, ["deploi", "heron"]).tolist() == [3.0, 32.0]
        delta = load_delta(cur, schema, "facts", fts, state.watermark)
        assert "deploi" in delta.vocab and "deploy" not in delta.vocab
        where, params = scope_clause(me, schema, RecallOptions())
        hits = search_calibrated(store, schema, "facts", query_terms("deployed"), where=where, params=params,
                                 limit=10, corpus=None)
        sources = {r[0] for r in cur.execute(
            f"SELECT source_id FROM {schema}.facts WHERE rid = ANY(?)", [list(hits)]).fetchall()}
        assert sources == {"a", "b", "c", "n"}
