"""RRF with provenance weights, tested from tables and against the slow reference implementation."""

from __future__ import annotations

import itertools
import random

import pytest
from ranking_helpers import rids

from recallfs.ranking.candidates import Candidate
from recallfs.ranking.fusion import best_per_table, best_possible, by_score, list_key, rrf
from recallfs.ranking.provenance import DEFAULT_WEIGHTS, parse_weights, provenance_key, weight_for
from recallfs.ranking.reference import rrf_reference

EQUAL: dict[str, float] = {}


def tables_of(lists: dict[str, list[int]]) -> dict[int, str]:
    return {rid: name.split(":", 1)[1] for name, ids in lists.items() for rid in ids}


@pytest.mark.parametrize(("name", "weights", "expected"), [
    ("lexical:facts", None, DEFAULT_WEIGHTS["lexical"] * DEFAULT_WEIGHTS["facts"]),
    ("semantic:turns", None, DEFAULT_WEIGHTS["turns"]),
    ("lexical:turns", {}, 1.0),
    ("lexical:turns", {"turns": 0.5}, 0.5),
    ("semantic:turns", {"turns": 0.5, "semantic": 0.4}, 0.2),
    ("semantic:turns", {"turns": 0.5, "semantic": 0.4, "semantic:turns": 0.9}, 0.9),
    ("lexical:facts", {"semantic": 0.0}, 1.0),
    ("semantic:other", None, 1.0),
])
def test_weight_resolution(name, weights, expected):
    assert weight_for(name, weights) == pytest.approx(expected)


def test_default_weights_put_facts_above_summaries_above_turns():
    assert DEFAULT_WEIGHTS["facts"] > DEFAULT_WEIGHTS["summaries"] > DEFAULT_WEIGHTS["turns"] > 0


@pytest.mark.parametrize(("text", "expected"), [
    ("", {}),
    ("facts=1,turns=0.5", {"facts": 1.0, "turns": 0.5}),
    (" semantic:turns = 0.25 , lexical=2 ", {"semantic:turns": 0.25, "lexical": 2.0}),
    ("facts=0", {"facts": 0.0}),
])
def test_parse_weights(text, expected):
    assert parse_weights(text) == expected


@pytest.mark.parametrize(("text", "message"), [
    ("facts", "is not NAME=NUMBER"),
    ("=1", "is not NAME=NUMBER"),
    ("facts=high", "is not a number"),
    ("facts=-1", ">= 0"),
    ("facts=nan", ">= 0"),
    ("facts=inf", ">= 0"),
])
def test_parse_weights_refuses_with_a_reason(text, message):
    with pytest.raises(ValueError, match=message):
        parse_weights(text)


def test_empty_input():
    assert rrf({}, {}) == []
    assert rrf({"lexical:facts": [], "semantic:facts": []}, {}) == []


def test_single_candidate_scores_one_at_rank_one_of_its_only_list():
    out = rrf({"lexical:turns": [7]}, {7: "turns"}, weights=EQUAL)
    assert rids(out) == [7] and out[0].score == pytest.approx(1.0)
    assert out[0].arms == {"lexical"} and out[0].ranks == {"lexical:turns": 1}


def test_both_arms_beat_one_arm_and_keep_both_ranks():
    lists = {"lexical:turns": [1, 2], "semantic:turns": [2, 3]}
    out = rrf(lists, tables_of(lists), weights=EQUAL)
    assert rids(out)[0] == 2
    assert out[0].arms == {"lexical", "semantic"}
    assert out[0].ranks == {"lexical:turns": 2, "semantic:turns": 1}


def test_ties_break_by_id_then_rid_when_no_dates():
    # 1 and 3 both sit at rank 1 of one list: equal scores, so the tie-break orders them.
    lists = {"lexical:turns": [3], "semantic:turns": [1]}
    out = rrf(lists, tables_of(lists), weights=EQUAL)
    assert out[0].score == out[1].score
    assert rids(out) == [1, 3]  # ids are empty before loading: rid decides


def test_provenance_weights_put_a_fact_above_an_equally_ranked_turn():
    lists = {"lexical:turns": [10], "lexical:facts": [20], "lexical:summaries": [30]}
    out = rrf(lists, tables_of(lists))
    assert rids(out) == [20, 30, 10]
    assert out[0].score == pytest.approx(1.0)


def test_normalisation_counts_empty_lists():
    """A score means the same whether or not the other arm found anything."""
    alone = rrf({"lexical:facts": [1], "semantic:facts": []}, {1: "facts"}, weights=EQUAL)
    assert alone[0].score == pytest.approx(0.5)
    both = rrf({"lexical:facts": [1], "semantic:facts": [1]}, {1: "facts"}, weights=EQUAL)
    assert both[0].score == pytest.approx(1.0)


def test_repeated_rid_counts_once_at_its_best_rank():
    out = rrf({"lexical:turns": [5, 6, 5]}, {5: "turns", 6: "turns"}, weights=EQUAL)
    assert {c.rid: c.ranks["lexical:turns"] for c in out} == {5: 1, 6: 2}


def test_zero_weight_list_is_ignored():
    lists = {"lexical:turns": [1], "semantic:turns": [2]}
    out = rrf(lists, tables_of(lists), weights={"semantic": 0.0})
    assert rids(out) == [1] and out[0].score == pytest.approx(1.0)


def test_bad_k_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        rrf({"lexical:turns": [1]}, {1: "turns"}, k=0)


def test_best_possible_takes_the_best_table():
    names = [list_key(a, t) for a in ("lexical", "semantic") for t in ("facts", "turns")]
    assert best_possible(names, {"turns": 0.5}, 60) == pytest.approx(2 / 61)
    assert best_possible(names, {"facts": 0.0, "turns": 0.5}, 60) == pytest.approx(1 / 61)
    assert best_possible([], None, 60) == 0.0


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("weights", [None, EQUAL, {"semantic": 0.3, "turns": 0.7, "lexical:facts": 2.0}])
def test_matches_the_reference(seed, weights):
    rng = random.Random(seed)
    universe = {rid: rng.choice(["facts", "summaries", "turns"]) for rid in range(rng.randint(0, 60))}
    lists: dict[str, list[int]] = {}
    for arm in ("lexical", "semantic"):
        for table in ("facts", "summaries", "turns"):
            pool = [rid for rid, t in universe.items() if t == table]
            picked = rng.sample(pool, rng.randint(0, len(pool))) if pool else []
            # duplicates inside one list must count once
            lists[list_key(arm, table)] = picked + picked[: rng.randint(0, 2)]
    k = rng.choice([1, 10, 60])
    fast = rrf(lists, universe, weights=weights, k=k)
    slow = dict(rrf_reference(lists, weights=weights, k=k))
    assert {c.rid for c in fast} == set(slow)
    for c in fast:
        assert c.score == pytest.approx(slow[c.rid], rel=1e-12)
    # order: score descending, where scores equal to 12 digits are ties (float noise is not rank)
    assert [c.sort_key() for c in fast] == sorted(c.sort_key() for c in fast)
    assert all(round(a.score, 12) >= round(b.score, 12) for a, b in itertools.pairwise(fast))


def test_provenance_key_orders_fact_summary_turn_then_arms():
    from ranking_helpers import cand

    pool = [cand(1, 0.9, "turns", arms=("lexical", "semantic")), cand(2, 0.1, "facts"),
            cand(3, 0.5, "summaries"), cand(4, 0.2, "facts", arms=("lexical", "semantic"))]
    assert [c.rid for c in sorted(pool, key=provenance_key)] == [4, 2, 3, 1]


@pytest.mark.parametrize(("scores", "expected"), [
    # a turn matching far better than the best fact comes first: merged by rank, the fact would
    ({"semantic:facts": {1: 0.41, 2: 0.40}, "semantic:turns": {3: 0.80, 4: 0.70}}, [3, 4, 1, 2]),
    # cosines: no table is favoured, the better score wins however small the difference
    ({"semantic:facts": {1: 0.5}, "semantic:turns": {3: 0.504}}, [3, 1]),
    ({"semantic:summaries": {2: 0.5}, "semantic:facts": {1: 0.499}}, [2, 1]),
    # calibrated BM25 (relative to each table's ceiling): a fact wins unless a summary scores 1/0.82
    # times as high, a turn 1/0.8 times
    ({"lexical:summaries": {2: 0.998}, "lexical:facts": {1: 0.861}}, [1, 2]),
    ({"lexical:turns": {3: 0.9}, "lexical:facts": {1: 0.5}}, [3, 1]),
    # a score of 0 is no match
    ({"lexical:facts": {1: 0.0, 2: 0.2}, "lexical:summaries": {}}, [2]),
    ({}, []),
])
def test_by_score_merges_one_arms_tables_by_its_scores(scores, expected):
    tables = {rid: name.split(":", 1)[1] for name, found in scores.items() for rid in found}
    merged = by_score(scores, tables)
    assert rids(merged) == expected
    assert all(0.0 < c.score <= 1.0 for c in merged)


def test_by_score_scores_are_the_arms_scores_or_scaled_by_given_weights():
    scores = {"semantic:turns": {3: 0.6}, "semantic:facts": {1: 0.3}}
    merged = by_score(scores, {3: "turns", 1: "facts"})
    assert [c.score for c in merged] == [pytest.approx(0.6), pytest.approx(0.3)]
    assert merged[0].ranks == {"semantic:turns": 1} and merged[0].arms == {"semantic"}
    weighted = by_score(scores, {3: "turns", 1: "facts"}, weights={"turns": 0.25})
    assert [c.rid for c in weighted] == [1, 3]


@pytest.mark.parametrize(("tables", "limit", "kept"), [
    ("", 2, []),
    ("fft", 5, [0, 1, 2]),  # under the limit: everything, in order
    ("tttff", 2, [0, 1, 3, 4]),  # each table's first two, whatever the other tables do
    ("tftftft", 1, [0, 1]),
    ("tsfts", 1, [0, 1, 2]),
    ("fff", 0, []),
])
def test_best_per_table_keeps_each_tables_first_rows_in_order(tables, limit, kept):
    names = {"f": "facts", "s": "summaries", "t": "turns"}
    cands = [Candidate(rid=i, table=names[t], score=1.0 - i / 10) for i, t in enumerate(tables)]
    assert [c.rid for c in best_per_table(cands, limit)] == kept


@pytest.mark.parametrize(("tables", "limit", "marked", "kept"), [
    ("ttttt", 2, {3}, [0, 1, 3]),  # past the cut, a kept one stays, in order
    ("ttttt", 2, {0, 4}, [0, 1, 4]),  # marked inside the cut counts once, as usual
    ("tttttt", 2, {2, 3, 4, 5}, [0, 1, 2, 3]),  # at most `limit` more per table
    ("ttfff", 1, {1, 3}, [0, 1, 2, 3]),  # per table
    ("ttt", 0, {1}, []),
])
def test_best_per_table_keeps_what_a_later_stage_will_lift(tables, limit, marked, kept):
    names = {"f": "facts", "t": "turns"}
    cands = [Candidate(rid=i, table=names[t], score=1.0 - i / 10) for i, t in enumerate(tables)]
    assert [c.rid for c in best_per_table(cands, limit, keep=lambda c: c.rid in marked)] == kept
