"""Calibrated arm scores and the calibrated fusion over them, tested from tables."""

from __future__ import annotations

import pytest

from recallfs.ranking.calibration import (
    LEXICAL_STRONG,
    Z_FLOOR,
    Z_FLOOR_WEAK,
    Z_FULL,
    lexical_ceiling,
    lexical_score,
    semantic_score,
    similarity_z,
    standout_floor,
    standout_note,
    term_fraction,
)
from recallfs.ranking.fusion import calibrated

TABLES = {1: "facts", 2: "turns", 3: "turns", 4: "summaries", 5: "facts"}
EQUAL: dict[str, float] = {}


@pytest.mark.parametrize(("maxima", "n_terms", "expected"), [
    ([], 0, 0.0),
    ([], 3, 0.0),  # no term known to the index: no lexical match can exist
    ([2.0, 1.0], 2, 3.0),
    ([2.0, 1.0], 3, 4.5),  # an unseen term counts at the mean of the seen ones
    ([2.0, 0.0], 2, 4.0),  # a zero maximum is an unknown term
    ([1.5], 1, 1.5),
])
def test_lexical_ceiling(maxima, n_terms, expected):
    assert lexical_ceiling(maxima, n_terms) == pytest.approx(expected)


@pytest.mark.parametrize(("bm25", "ceiling", "expected"), [
    (0.0, 3.0, 0.0),
    (1.5, 3.0, 0.5),
    (3.0, 3.0, 1.0),
    (4.0, 3.0, 1.0),  # capped
    (1.0, 0.0, 0.0),
    (-1.0, 3.0, 0.0),
])
def test_lexical_score(bm25, ceiling, expected):
    assert lexical_score(bm25, ceiling) == pytest.approx(expected)


@pytest.mark.parametrize(("matched", "n", "expected"), [
    (0, 3, 0.0), (1, 4, 0.25), (4, 4, 1.0), (5, 4, 1.0), (1, 0, 0.0),
])
def test_term_fraction(matched, n, expected):
    assert term_fraction(matched, n) == pytest.approx(expected)


@pytest.mark.parametrize(("cosine", "mean", "sd", "expected"), [
    (0.5, 0.1, 0.1, 4.0),
    (0.1, 0.1, 0.1, 0.0),
    (0.0, 0.1, 0.05, -2.0),
    (0.3, 0.1, 0.0, 0.2 / 1e-6),  # a zero spread does not divide by zero
])
def test_similarity_z(cosine, mean, sd, expected):
    assert similarity_z(cosine, mean, sd) == pytest.approx(expected)


@pytest.mark.parametrize(("z", "expected"), [
    (-3.0, 0.0),
    (Z_FLOOR, 0.0),
    ((Z_FLOOR + Z_FULL) / 2, 0.5),
    (Z_FULL, 1.0),
    (Z_FULL + 10, 1.0),
])
def test_semantic_score(z, expected):
    assert semantic_score(z) == pytest.approx(expected)


@pytest.mark.parametrize(("lexical_best", "expected"), [
    (0.0, Z_FLOOR_WEAK),  # the lexical arm found nothing: the semantic arm is the only evidence
    (-1.0, Z_FLOOR_WEAK),
    (LEXICAL_STRONG / 2, (Z_FLOOR_WEAK + Z_FLOOR) / 2),
    (LEXICAL_STRONG, Z_FLOOR),
    (1.0, Z_FLOOR),  # a strong lexical match: the full bar
])
def test_standout_floor_falls_when_the_lexical_arm_matched_little(lexical_best, expected):
    assert standout_floor(lexical_best) == pytest.approx(expected)


def test_a_weak_lexical_match_lets_a_modest_standout_count():
    z = (Z_FLOOR_WEAK + Z_FLOOR) / 2
    assert semantic_score(z, standout_floor(1.0)) == 0.0
    assert semantic_score(z, standout_floor(0.0)) > 0.0


@pytest.mark.parametrize(("best", "z", "expected"), [
    (0.62, Z_FLOOR, "z 1.75 (the lexical arm's best match: 0.62 of the query)"),
    (0.0, Z_FLOOR_WEAK, "z 0.50, lowered: the lexical arm's best match is 0.00 of the query"),
])
def test_standout_note(best, z, expected):
    assert standout_note(best, z) == expected


def test_semantic_score_refuses_an_empty_range():
    with pytest.raises(ValueError, match="above the floor"):
        semantic_score(1.0, floor=2.0, full=2.0)


def order(cands):
    return [c.rid for c in cands]


def test_calibrated_empty_input():
    assert calibrated({}, {}) == []
    assert calibrated({"lexical:facts": {}, "semantic:facts": {}}, {}) == []


def test_calibrated_single_candidate_scores_its_share_of_the_bound():
    (c,) = calibrated({"lexical:facts": {1: 1.0}, "semantic:facts": {}}, TABLES, weights=EQUAL)
    assert (c.rid, c.arms, c.ranks) == (1, {"lexical"}, {"lexical:facts": 1})
    assert c.score == pytest.approx(0.5)  # full marks from one of two equally weighted arms


def test_calibrated_weighs_strength_not_rank():
    # rid 2 is first in the lexical list but matches weakly; rid 3 is a strong semantic standout.
    scores = {"lexical:turns": {2: 0.3, 3: 0.1}, "semantic:turns": {3: 0.9}}
    assert order(calibrated(scores, TABLES, weights=EQUAL)) == [3, 2]


def test_calibrated_drops_rows_no_arm_scores():
    scores = {"lexical:turns": {2: 0.0, 3: 0.4}, "semantic:turns": {2: 0.0}}
    assert order(calibrated(scores, TABLES, weights=EQUAL)) == [3]


def test_calibrated_arm_weights_decide_between_arms():
    scores = {"lexical:turns": {2: 0.6}, "semantic:turns": {3: 0.6}}
    assert order(calibrated(scores, TABLES, weights={"lexical": 0.5})) == [3, 2]
    assert order(calibrated(scores, TABLES, weights={"semantic": 0.5})) == [2, 3]


def test_calibrated_table_weights_order_equal_scores():
    scores = {"lexical:facts": {1: 0.5}, "lexical:turns": {2: 0.5}, "lexical:summaries": {4: 0.5}}
    assert order(calibrated(scores, TABLES)) == [1, 4, 2]  # the defaults: facts, summaries, turns


def test_calibrated_ties_break_by_rid_without_ids_or_dates():
    scores = {"lexical:turns": {3: 0.5, 2: 0.5}}
    assert order(calibrated(scores, TABLES, weights=EQUAL)) == [2, 3]


def test_calibrated_zero_weight_list_is_ignored():
    scores = {"lexical:turns": {2: 0.9}, "semantic:turns": {3: 0.9}}
    assert order(calibrated(scores, TABLES, weights={"lexical": 0.0})) == [3]


def test_calibrated_scores_lie_in_0_1_and_ranks_follow_each_list():
    scores = {"lexical:facts": {1: 1.0, 5: 0.2}, "semantic:facts": {1: 1.0, 5: 0.7}}
    cands = calibrated(scores, TABLES)
    assert cands[0].score == pytest.approx(1.0)
    assert all(0.0 <= c.score <= 1.0 for c in cands)
    assert cands[1].ranks == {"lexical:facts": 2, "semantic:facts": 2}
