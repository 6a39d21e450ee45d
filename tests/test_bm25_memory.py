"""The in-memory BM25 scorer: the same scores as DuckDB's match_bm25 on a real FTS index, and the
top-k selection from tables (ties, empty input, a single candidate, authorization mask)."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from recallfs.query.bm25_memory import load_postings, top_k
from recallfs.query.fts_extension import load_fts

DOCS = [
    (11, "the deploy script runs on friday"),
    (12, "deploy deploy deploy to staging"),
    (13, "tests run with cargo nextest"),
    (14, "nextest retries flaky tests twice"),
    (15, "a note about coffee"),
    (17, "deploying the docs site"),
]


@pytest.fixture
def index(tmp_path):
    con = duckdb.connect(str(tmp_path / "fts.duckdb"))
    load_fts(con)
    con.execute("CREATE TABLE docs (rid BIGINT, body VARCHAR)")
    con.executemany("INSERT INTO docs VALUES (?, ?)", DOCS)
    con.execute("PRAGMA create_fts_index('docs', 'rid', 'body', stemmer='porter', overwrite=1)")
    yield con
    con.close()


@pytest.mark.parametrize("query", ["deploy", "tests nextest", "flaky deploy coffee", "nothing matches"])
def test_scores_equal_match_bm25(index, query: str) -> None:
    postings = load_postings(index, "fts_main_docs")
    stems = [r[0] for r in index.execute(
        "SELECT DISTINCT stem(unnest(fts_main_docs.tokenize(?)), 'porter')", [query]).fetchall()]
    mine = dict(zip(postings.rids.tolist(), postings.score(stems).tolist(), strict=True))
    theirs = dict(index.execute(
        "SELECT rid, coalesce(fts_main_docs.match_bm25(rid, ?), 0) FROM docs", [query]).fetchall())
    assert mine.keys() == theirs.keys()
    for rid, score in theirs.items():
        assert mine[rid] == pytest.approx(score, rel=1e-12, abs=1e-12)


def test_positions_of_drops_unknown_rids(index) -> None:
    postings = load_postings(index, "fts_main_docs")
    pos = postings.positions_of(np.array([11, 16, 17, 99]))
    assert postings.rids[pos].tolist() == [11, 17]


def test_allowed_positions_are_computed_once_per_readable_set(index) -> None:
    # query/derived.allowed_rids hands every recall of one scope the same read-only array: its positions
    # in the index are searched once, not once per recall; another array (or the same rids in a new
    # array, e.g. after an ingest) is searched again.
    postings = load_postings(index, "fts_main_docs")
    allowed = np.array([11, 16, 17, 99])
    first = postings.allowed_positions(allowed)
    assert postings.rids[first].tolist() == [11, 17]
    assert postings.allowed_positions(allowed) is first
    again = postings.allowed_positions(np.array([11, 16, 17, 99]))
    assert again is not first and again.tolist() == first.tolist()


RIDS = np.array([10, 20, 30, 40, 50])


@pytest.mark.parametrize(
    ("scores", "allowed", "limit", "expected"),
    [
        ([0, 0, 0, 0, 0], None, 3, []),  # nothing scored
        ([0, 2.0, 0, 0, 0], None, 3, [20]),  # a single candidate
        ([1.0, 3.0, 2.0, 0, 0], None, 2, [20, 30]),  # best first, cut at the limit
        ([1.0, 1.0, 1.0, 0, 0], None, 2, [30, 20]),  # ties: newest rid first, whatever the partition did
        ([1.0, 1.0 + 1e-15, 1.0, 0, 0], None, 3, [30, 20, 10]),  # float noise is a tie
        ([5.0, 1.0, 3.0, 0, 0], [1, 2], 5, [30, 20]),  # only allowed positions
        ([5.0, 1.0, 3.0, 0, 0], [], 5, []),  # nothing allowed
        ([1.0, 2.0, 3.0, 4.0, 5.0], None, 0, []),  # limit 0
    ],
)
def test_top_k(scores: list[float], allowed: list[int] | None, limit: int, expected: list[int]) -> None:
    mask = None if allowed is None else np.array(allowed, dtype=np.int64)
    assert top_k(np.array(scores, dtype=np.float64), RIDS, mask, limit) == expected


def test_term_maxima_are_each_terms_best_single_doc_score(index) -> None:
    postings = load_postings(index, "fts_main_docs")
    for stem in ("deploy", "nextest", "coffe"):
        alone = postings.score([stem])
        assert postings.term_maxima([stem]) == [pytest.approx(float(alone.max()))]
    assert postings.term_maxima(["neverseen"]) == [0.0]
    assert postings.term_maxima([]) == []


def test_scores_of_reads_rids_in_any_order_and_zero_for_unknown(index) -> None:
    postings = load_postings(index, "fts_main_docs")
    scores = postings.score(["deploy"])
    by_rid = dict(zip(postings.rids.tolist(), scores.tolist(), strict=True))
    asked = np.array([17, 99, 11, 12], dtype=np.int64)
    got = postings.scores_of(asked, scores)
    assert got.tolist() == pytest.approx([by_rid[17], 0.0, by_rid[11], by_rid[12]])
    assert postings.scores_of(np.array([], dtype=np.int64), scores).tolist() == []
