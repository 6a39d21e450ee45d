"""Token budget + MMR, min_score, metadata bonuses and exact entity match, from tables."""

from __future__ import annotations

import numpy as np
import pytest
from ranking_helpers import cand, rids

from recallfs.ranking.bonuses import metadata_bonus
from recallfs.ranking.budget import budget_select
from recallfs.ranking.cutoff import cut_below
from recallfs.ranking.entity_match import match_entity
from recallfs.ranking.text import estimate_tokens


def vec(*xs: float) -> np.ndarray:
    return np.asarray(xs, dtype=np.float32)


def words(n: int) -> str:
    return " ".join(["word"] * n)  # 5 characters a word -> about 1.25 tokens a word


def one_token_each(text: str) -> int:
    return len(text.split())


# -- token budget + MMR ----------------------------------------------------------------------------
def test_budget_empty():
    out, note = budget_select([], 100, None)
    assert out == [] and "nothing" in note


def test_budget_single_that_fits_and_one_that_does_not():
    out, _ = budget_select([cand(1, content="a b c")], 3, None, tokens=one_token_each)
    assert rids(out) == [1]
    out, note = budget_select([cand(1, content="a b c d")], 3, None, tokens=one_token_each)
    assert out == [] and "kept 0 of 1" in note


def test_budget_without_diversity_fills_by_score_and_skips_what_does_not_fit():
    pool = [cand(1, 0.9, content="a b c"), cand(2, 0.8, content="a b c d e"), cand(3, 0.7, content="a")]
    out, note = budget_select(pool, 4, None, diversity=False, tokens=one_token_each)
    assert rids(out) == [1, 3] and "about 4 tokens" in note


def test_mmr_prefers_a_different_hit_over_a_near_copy():
    pool = [cand(1, 1.0, content="x"), cand(2, 0.95, content="y"), cand(3, 0.6, content="z")]
    vectors = {1: vec(1, 0), 2: vec(1, 0.01), 3: vec(0, 1)}
    out, _ = budget_select(pool, 2, vectors, mmr_lambda=0.5, tokens=one_token_each)
    assert rids(out) == [1, 3]
    out, _ = budget_select(pool, 2, vectors, diversity=False, tokens=one_token_each)
    assert rids(out) == [1, 2]


def test_mmr_lambda_one_is_pure_relevance():
    pool = [cand(1, 1.0, content="x"), cand(2, 0.95, content="y"), cand(3, 0.6, content="z")]
    vectors = {1: vec(1, 0), 2: vec(1, 0), 3: vec(0, 1)}
    out, _ = budget_select(pool, 2, vectors, mmr_lambda=1.0, tokens=one_token_each)
    assert rids(out) == [1, 2]


def test_mmr_falls_back_to_word_overlap_without_vectors():
    pool = [cand(1, 1.0, content="deploy uses rsync"), cand(2, 0.95, content="deploy uses rsync now"),
            cand(3, 0.6, content="lunch at noon")]
    out, _ = budget_select(pool, 7, None, mmr_lambda=0.5, tokens=one_token_each)
    assert rids(out) == [1, 3]


def test_budget_result_leaves_in_score_order_with_ties_broken():
    pool = [cand(1, 0.5, day=0, content="a"), cand(2, 0.5, day=1, content="b"), cand(3, 0.9, content="c")]
    out, _ = budget_select(pool, 10, None, tokens=one_token_each)
    assert rids(out) == [3, 2, 1]


def test_estimate_tokens():
    assert estimate_tokens("") == 1
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens(words(100)) == 125


# -- min_score -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("threshold", "kept"), [(0.0, [1, 2, 3]), (0.3, [1, 2]), (0.51, [1]), (0.91, [])])
def test_min_score(threshold, kept):
    pool = [cand(1, 0.9), cand(2, 0.5), cand(3, 0.1)]
    assert rids(cut_below(pool, threshold)) == kept


def test_min_score_empty_single_and_tie_at_the_threshold():
    assert cut_below([], 0.5) == []
    assert rids(cut_below([cand(1, 0.5), cand(2, 0.5)], 0.5)) == [1, 2]


# -- metadata bonuses ------------------------------------------------------------------------------
def test_bonuses_off_change_nothing():
    pool = [cand(1, 0.5, tags=("ci",)), cand(2, 0.6)]
    assert [(c.rid, c.score) for c in metadata_bonus(pool, "ci")] == [(1, 0.5), (2, 0.6)]


@pytest.mark.parametrize(("query", "tag_bonus", "kind_bonus", "first"), [
    ("ci setup", 0.5, 0.0, 1),            # tag hit lifts 1 above 2
    ("CI setup", 0.5, 0.0, 1),            # folded
    ("setup", 0.5, 0.0, 2),               # no tag hit
    ("decisions about setup", 0.0, 0.5, 3),  # plural kind word
    ("ci decisions", 0.1, 0.1, 2),        # bonuses too small to overtake
])
def test_bonuses(query, tag_bonus, kind_bonus, first):
    pool = [cand(1, 0.5, "facts", tags=("ci",), kind="fact"), cand(2, 0.6, "facts", kind="fact"),
            cand(3, 0.45, "facts", kind="decision")]
    out = metadata_bonus(pool, query, tag_bonus=tag_bonus, kind_bonus=kind_bonus)
    assert out[0].rid == first


def test_bonuses_take_term_lists_and_handle_empty_and_ties():
    assert metadata_bonus([], ["ci"], tag_bonus=0.5) == []
    out = metadata_bonus([cand(1, 0.4, day=0, tags=("ci",)), cand(2, 0.4, day=1, tags=("ci",))], ["CI"],
                         tag_bonus=0.5)
    assert rids(out) == [2, 1] and out[0].score == pytest.approx(0.6)


# -- exact entity match ----------------------------------------------------------------------------
NAMES = ["Caroline", "Melanie", "ci", "New York", "Dr. Ávila", "new"]


@pytest.mark.parametrize(("query", "mode", "expected"), [
    ("Caroline", "exact", "Caroline"),
    ("caroline?", "exact", "Caroline"),
    ("  CAROLINE  ", "exact", "Caroline"),
    ("new york", "exact", "New York"),
    ("dr avila", "exact", "Dr. Ávila"),
    ("what does Caroline like", "exact", None),
    ("what does Caroline like", "contains", "Caroline"),
    ("trip to new york", "contains", "New York"),   # the longest name wins over "new"
    ("carolines", "contains", None),                # word boundaries
    ("", "exact", None),
    ("???", "contains", None),
])
def test_match_entity(query, mode, expected):
    assert match_entity(query, NAMES, mode=mode) == expected


def test_match_entity_with_no_names_and_bad_mode():
    assert match_entity("Caroline", []) is None
    with pytest.raises(ValueError):
        match_entity("x", NAMES, mode="fuzzy")


def test_match_entity_names_folding_alike_resolve_to_the_first_sorted():
    assert match_entity("maya", ["maya", "Maya", "MAYA"]) == "MAYA"
