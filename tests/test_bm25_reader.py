"""BM25 with a reader's own statistics (query/bm25_reader.py): rows a reader may not read move none of
its scores.

The oracle is built, not computed by the code under test: a second store holding only the rows the reader
may read, indexed by DuckDB. The reader's lexical recall must score every hit as there, find what a
query word only hidden rows hold would find there, and a reader who reads every row must keep DuckDB's
own weights."""

from __future__ import annotations

import gc
import math
import weakref
from pathlib import Path

import numpy as np
import pytest

from recallfs.query import fts_delta
from recallfs.query.bm25_memory import Postings, load_postings
from recallfs.query.bm25_query import index_stems
from recallfs.query.bm25_reader import readable_corpus, reader_bm25
from recallfs.query.derived import allowed_rids
from recallfs.query.gate import corpus_clause
from recallfs.query.ingest_file import ingest_records
from recallfs.query.lexical import fts_schema, index_state, query_terms, score_indexed
from recallfs.query.policies import set_policy
from recallfs.query.recall import recall
from recallfs.query.records import parse_record
from recallfs.query.store import Store
from recallfs.scope.policy import PolicySpec, build_policy
from recallfs.scope.principal import Principal

from conftest import fact, turn

ORG, WS = "acme", "proj"
READERS = {"atlas": Principal(ORG, WS, "atlas"), "guest": Principal(ORG, WS, "guest")}
GUEST_POLICY = PolicySpec(authors=["atlas"], deny_kinds=["secret"])


def hidden(rec: dict) -> dict:
    return {**rec, "agent": "scout", "visibility": "private"}


VISIBLE = [
    fact("v1", "The deploy pipeline runs on the build cluster", id="f-deploy", agent="atlas"),
    fact("v2", "Deploy windows are on tuesdays after the standup", id="f-window", agent="atlas"),
    fact("v3", "The postgresql replica lags during the nightly backup", id="f-replica", agent="atlas"),
    fact("v4", "Our cluster dashboards live in grafana", id="f-dash", agent="atlas", tags=["ops"]),
    turn("s1", 0, "atlas", "the deploy to the cluster failed twice today", agent="atlas"),
    turn("s1", 1, "user", "then roll the deploy back and page the cluster owner", agent="atlas"),
]
# rows that repeat the query words (df, the mean length, the calibration ceiling all move with them), and
# one that is the only row holding "postgres" as a word
HIDDEN = [
    hidden(fact("h1", "deploy deploy deploy cluster cluster", id="f-h1")),
    hidden(fact("h2", "The deploy cluster " + "padding words " * 40, id="f-h2")),
    hidden(fact("h3", "we moved the postgres primary to a new cluster", id="f-h3")),
    hidden(turn("s9", 0, "scout", "deploy the cluster tonight, quietly", agent="scout")),
    # hidden from the guest only: another author's, and a denied kind of atlas's own
    fact("g1", "the deploy key for the cluster rotates monthly", id="f-g1", agent="scout"),
    fact("g2", "cluster deploy credentials are in the vault", id="f-g2", agent="atlas", kind="secret"),
]
QUERIES = ["deploy cluster", "cluster", "deploy windows tuesdays", "postgres replica", "postgres", "grafana deploy"]


def _may_read(reader: str, rec: dict) -> bool:
    """By hand: the default policy for atlas; only atlas's memories and no kind `secret` for guest."""
    mine = rec.get("agent", "atlas") == reader
    if rec.get("visibility") == "private" and not mine:
        return False
    return not (reader == "guest" and (rec.get("agent", "atlas") != "atlas" or rec.get("kind") == "secret"))


def _ingest(store: Store, records: list[dict]) -> None:
    ingest_records(store, [parse_record(r, org=ORG, workspace=WS, agent=str(r.get("agent", "atlas")))
                           for r in records], embedder=None)


def _store(path: Path, *batches: list[dict]) -> Store:
    store = Store(path)
    for batch in batches:
        _ingest(store, batch)
    set_policy(store, READERS["guest"], build_policy(GUEST_POLICY))
    return store


def _answer(store: Store, reader: str, query: str) -> list[tuple[str, str, float]]:
    hits = recall(store, READERS[reader], query, k=20, arm="lexical").hits
    return [(h.table, h.id, round(h.relevance, 9)) for h in hits]


@pytest.mark.parametrize("reader", sorted(READERS))
def test_hidden_rows_move_no_score(tmp_path: Path, reader: str) -> None:
    visible = [r for r in VISIBLE + HIDDEN if _may_read(reader, r)]
    assert len(visible) < len(VISIBLE + HIDDEN)
    with (_store(tmp_path / "full.duckdb", VISIBLE + HIDDEN) as full,
          _store(tmp_path / "clean.duckdb", visible) as clean):
        for query in QUERIES:
            assert _answer(full, reader, query) == _answer(clean, reader, query), query
        assert _answer(clean, reader, "postgres")  # found by its prefix in "postgresql", as in the clean store


def test_the_delta_scores_with_the_readers_statistics_too(tmp_path: Path, monkeypatch) -> None:
    """Rows above the index's watermark (query/fts_delta.py), hidden and visible, score as a store that
    indexed only the visible ones would score them."""
    monkeypatch.setattr(fts_delta, "ALWAYS_REBUILD", 4)
    monkeypatch.setattr(fts_delta, "DELTA_SHARE", 1.0)
    first, later = VISIBLE[:4] + HIDDEN[:2], VISIBLE[4:] + HIDDEN[2:]
    visible = [r for r in VISIBLE + HIDDEN if _may_read("atlas", r)]
    with _store(tmp_path / "full.duckdb", first, later) as full, _store(tmp_path / "clean.duckdb", visible) as clean:
        schema = full.schema_for(READERS["atlas"])
        assert schema is not None
        state = index_state(full, schema, "facts")
        assert 0 < state.watermark < state.max_rid  # the later facts are in the delta
        for query in QUERIES:
            assert _answer(full, "atlas", query) == _answer(clean, "atlas", query), query


def test_score_indexed_uses_the_readers_statistics(tmp_path: Path) -> None:
    """The lexical side of a row only the semantic arm found is scored as the lexical arm scores it."""
    visible = [r for r in VISIBLE + HIDDEN if _may_read("atlas", r)]
    reader = READERS["atlas"]
    got = []
    for name, records in (("full", VISIBLE + HIDDEN), ("clean", visible)):
        with _store(tmp_path / f"{name}.duckdb", records) as store:
            schema = store.schema_for(reader)
            assert schema is not None
            rid = store.cursor().execute(f"SELECT rid FROM {schema}.facts WHERE id = 'f-deploy'").fetchone()[0]
            scored = score_indexed(store, schema, "facts", query_terms("deploy cluster"), [int(rid)],
                                   corpus=corpus_clause(reader, schema))
            got.append(round(scored[int(rid)], 9))
    assert got[0] == got[1]


@pytest.mark.parametrize("query", QUERIES)
def test_a_reader_of_every_row_gets_duckdbs_weights(tmp_path: Path, query: str) -> None:
    with _store(tmp_path / "s.duckdb", VISIBLE + HIDDEN) as store:
        schema = store.schema_for(READERS["atlas"])
        assert schema is not None
        fts = fts_schema(schema, "facts")
        cur = store.cursor()
        postings = load_postings(cur, fts)
        stems = index_stems(cur, fts, query_terms(query))
        every = readable_corpus([postings], postings.rids)
        assert every.count == len(postings.rids)
        mine = reader_bm25([postings], every, stems)
        assert np.allclose(mine.scores[0], postings.score(stems), rtol=0, atol=1e-12)
        assert np.allclose(mine.maxima, postings.term_maxima(stems), rtol=0, atol=1e-12)
        # and a reader of some rows: nothing outside them scores, and they are fewer
        guest = allowed_rids(store, schema, "facts", *corpus_clause(READERS["guest"], schema))
        some = readable_corpus([postings], guest)
        assert 0 < some.count < len(postings.rids)
        theirs = reader_bm25([postings], some, stems)
        assert not theirs.scores[0][~some.masks[0]].any()


def _postings(docs_of_term: dict[str, list[tuple[int, int]]], lengths: list[float]) -> Postings:
    """A small index by hand: term -> [(doc position, occurrences)], and each doc's length. Rids are
    10, 20, 30, ... by position. The shared weights are left at 0: only the reader's are under test."""
    terms = sorted(docs_of_term)
    starts = np.cumsum([0, *(len(docs_of_term[t]) for t in terms)]).astype(np.int64)
    pairs = [p for t in terms for p in docs_of_term[t]]
    return Postings(vocab={t: i for i, t in enumerate(terms)}, starts=starts,
                    docs=np.array([d for d, _ in pairs], dtype=np.int32), weights=np.zeros(len(pairs)),
                    rids=np.arange(1, len(lengths) + 1, dtype=np.int64) * 10,
                    freqs=np.array([f for _, f in pairs], dtype=np.float32), lengths=np.array(lengths))


def _by_hand(tf: float, length: float, df: int, n: int, mean: float) -> float:
    idf = math.log10((n - df + 0.5) / (df + 0.5) + 1)
    return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / mean))


# (readable rids, stem) -> the expected score of each doc position: df, N and the mean length come from
# the readable docs only. Docs: 10 "deploy deploy cluster" (3), 20 "cluster" (1), 30 "deploy x4 ..." (8).
POSTINGS_BY_HAND = {"cluster": [(0, 1), (1, 1)], "deploy": [(0, 2), (2, 4)]}
LENGTHS = [3.0, 1.0, 8.0]


@pytest.mark.parametrize(("readable", "stem", "expected"), [
    ([10, 20, 30], "deploy", [_by_hand(2, 3, 2, 3, 4.0), 0.0, _by_hand(4, 8, 2, 3, 4.0)]),
    ([10, 20], "deploy", [_by_hand(2, 3, 1, 2, 2.0), 0.0, 0.0]),  # 30 hidden: df 1, N 2, mean 2
    ([10, 20], "cluster", [_by_hand(1, 3, 2, 2, 2.0), _by_hand(1, 1, 2, 2, 2.0), 0.0]),
    ([20], "deploy", [0.0, 0.0, 0.0]),  # the word only hidden docs hold: unknown to this reader
    ([], "cluster", [0.0, 0.0, 0.0]),
    ([10, 30], "missing", [0.0, 0.0, 0.0]),
])
def test_reader_weights_by_hand(readable: list[int], stem: str, expected: list[float]) -> None:
    postings = _postings(POSTINGS_BY_HAND, LENGTHS)
    allowed = np.array(readable, dtype=np.int64)
    scored = reader_bm25([postings], readable_corpus([postings], allowed), [stem])
    assert scored.scores[0] == pytest.approx(expected, abs=1e-12)
    assert scored.maxima == [pytest.approx(max(expected), abs=1e-12)]
    assert scored.knows_every_stem is (max(expected) > 0)


def test_the_caches_keep_no_old_index_alive() -> None:
    """A store written between recalls makes new postings and readable sets each generation: the
    reader's caches must not be what keeps the old ones (or their masks) in memory."""
    postings = _postings(POSTINGS_BY_HAND, LENGTHS)
    allowed = np.array([10, 20], dtype=np.int64)
    corpus = readable_corpus([postings], allowed)
    reader_bm25([postings], corpus, ["deploy", "cluster"])
    assert readable_corpus([postings], allowed) is corpus  # remembered while they live
    refs = [weakref.ref(postings), weakref.ref(allowed)]
    del postings, allowed, corpus
    gc.collect()
    assert [r() for r in refs] == [None, None]
