"""The relevance floor and the recency band, from tables (ranking/floor.py, ranking/recency.py)."""

from __future__ import annotations

import pytest
from ranking_helpers import cand, rids

from recallfs.ranking.calibration import weak_score
from recallfs.ranking.candidates import Candidate, absorb
from recallfs.ranking.floor import (
    NO_SHARED_WORD_COSINE,
    above_floor,
    below,
    floor_config,
    passes,
    promote,
    split_at_floor,
)
from recallfs.ranking.recency import recency_in_band
from recallfs.ranking.stage_config import StageConfig


def ev(rid: int, relevance: float | None, *, words: bool = True, cosine: float | None = None,
       score: float | None = None, day: float = 0) -> Candidate:
    c = cand(rid, relevance if score is None else score, day=day)
    c.relevance, c.shares_words, c.cosine = relevance, words, cosine
    return c


@pytest.mark.parametrize(("c", "floor", "cosine", "kept"), [
    (ev(1, 0.5), 0.01, 0.3, True),
    (ev(1, 0.009), 0.01, 0.3, False),                          # below the relevance floor
    (ev(1, 0.01), 0.01, 0.3, True),                            # at it
    (ev(1, None), 0.01, 0.3, True),                            # not measured (hand-made): kept
    (ev(1, 0.2, words=False, cosine=0.29), 0.01, 0.3, False),  # semantic-only, not near enough
    (ev(1, 0.2, words=False, cosine=0.3), 0.01, 0.3, True),
    (ev(1, 0.2, words=True, cosine=0.1), 0.01, 0.3, True),     # it holds a query word: no cosine asked
    (ev(1, 0.2, words=False, cosine=None), 0.01, 0.3, True),   # no semantic measure at all
    (ev(1, 0.0), 0.0, 0.0, True),                              # (0, 0): off
])
def test_passes(c, floor, cosine, kept):
    assert passes(c, floor, cosine) is kept


@pytest.mark.parametrize(("cosine", "any_word", "raised"), [
    (0.3, True, 0.3), (0.3, False, NO_SHARED_WORD_COSINE), (0.0, False, 0.0), (0.7, False, 0.7)])
def test_no_shared_word_raises_the_cosine(cosine, any_word, raised):
    assert floor_config(StageConfig(floor_cosine=cosine), any_shared_word=any_word).floor_cosine == raised


def test_junk_of_a_query_no_memory_shares_a_word_with():
    # "zzqxv" against the demo store: no memory holds it, and "👍" stands out at cosine 0.34.
    junk = [ev(1, 0.14, words=False, cosine=0.34), ev(2, 0.05, words=False, cosine=0.28)]
    config = floor_config(StageConfig(), any_shared_word=False)
    assert above_floor(junk, config.relevance_floor, config.floor_cosine) == []
    assert rids(above_floor(junk, 0.01, 0.3)) == [1]  # with a shared word somewhere, 0.34 would be near enough
    assert rids(above_floor(junk, 0.0, 0.0)) == [1, 2]  # off


@pytest.mark.parametrize(("pool", "passing", "near"), [
    ([], [], []),
    ([ev(1, 0.5), ev(2, 0.001)], [1], [2]),
    # Nothing passes: memory has nothing on the query, and no near-miss stands in for a hit.
    ([ev(1, 0.005), ev(2, 0.001, words=False, cosine=0.25)], [], []),
    # A semantic-only neighbour too far from the query, and one that does not stand out (its weak
    # score): both follow the hit, the nearer first.
    ([ev(1, 0.4), ev(2, 0.2, words=False, cosine=0.22),
      ev(3, weak_score(0.28), words=False, cosine=0.28), ev(4, weak_score(0.24), words=False, cosine=0.24)],
     [1], [2, 3, 4]),
])
def test_split_at_floor(pool, passing, near):
    kept, rest = split_at_floor(pool, 0.01, 0.3)
    assert (rids(kept), rids(rest)) == (passing, near)


def test_near_misses_follow_whatever_the_stages_made_of_the_scores():
    hits = [ev(1, 0.5, score=0.02), ev(2, 0.3, score=0.004)]  # the stages lowered the second hit
    near = [ev(3, 0.009, score=0.009), ev(4, 0.001, words=False, cosine=0.25, score=0.001)]
    out = below(hits, near)
    assert rids(out) == [1, 2, 3, 4] and out[2].score < 0.004 and out[3].score < out[2].score
    assert [c.score for c in near] == [0.009, 0.001]  # copies: the inputs are not changed
    assert below(hits, []) == hits


def test_promote_moves_only_the_wanted_near_misses():
    hits, near = [ev(1, 0.5)], [ev(2, 0.005), ev(3, 0.001)]
    up, rest = promote(hits, near, {3, 9})
    assert (rids(up), rids(rest)) == ([1, 3], [2])
    assert promote(hits, near, set()) == (hits, near)


def test_weak_score_is_tiny_and_in_cosine_order():
    assert 0 < weak_score(0.21) < weak_score(0.29) < 0.001 and weak_score(-0.1) == 0


def test_floor_edges_and_purity():
    assert above_floor([], 0.01, 0.3) == []
    pool = [ev(1, 0.5), ev(2, 0.001)]
    assert rids(above_floor(pool, 0.01, 0.3)) == [1]
    assert rids(pool) == [1, 2]  # the input is never changed
    with pytest.raises(ValueError):
        above_floor(pool, 1.5)
    with pytest.raises(ValueError):
        above_floor(pool, 0.1, 2.0)


def test_absorb_keeps_the_strongest_evidence():
    keeper, other = ev(1, 0.2, words=False, cosine=0.3), ev(2, 0.4, words=True, cosine=0.5)
    absorb(keeper, other)
    assert (keeper.relevance, keeper.shares_words, keeper.cosine) == (0.4, True, 0.5)


@pytest.mark.parametrize(("pool", "band", "order"), [
    # the newer relevant hit overtakes the older one; the weak fresh one stays below both
    ([(1, 0.9, -60), (2, 0.8, 0), (3, 0.1, 0)], 0.8, [2, 1, 3]),
    # band 0: the old behaviour, the weak fresh hit is promoted
    ([(1, 0.9, -60), (2, 0.8, 0), (3, 0.3, 0)], 0.0, [2, 3, 1]),
    # the weak one is outside the band: never above a relevant one, however old
    ([(1, 0.9, -300), (3, 0.3, 0)], 0.8, [1, 3]),
    # the hits outside keep their own order
    ([(1, 0.9, -60), (4, 0.5, -60), (5, 0.4, 0)], 0.8, [1, 4, 5]),
    # all inside: plain dampening
    ([(1, 0.9, -60), (2, 0.85, 0)], 0.8, [2, 1]),
])
def test_recency_reorders_the_band_only(pool, band, order):
    cands = [ev(rid, score, day=day) for rid, score, day in pool]
    out = recency_in_band(cands, 30, band)
    assert rids(out) == order
    assert [c.sort_key() for c in out] == sorted(c.sort_key() for c in out)  # scores agree with the order
    assert all(o.score <= c.score for o in out for c in cands if c.rid == o.rid)  # never raised


def test_recency_band_edges():
    assert recency_in_band([], 30) == []
    one = recency_in_band([ev(1, 0.4, day=-100)], 30)
    assert one[0].score == pytest.approx(0.4)
    assert rids(recency_in_band([ev(1, 0.9, day=-60), ev(2, 0.1)], 0)) == [1, 2]  # half-life 0: off
    with pytest.raises(ValueError):
        recency_in_band([ev(1, 0.4)], 30, 1.5)


@pytest.mark.parametrize(("config", "any_word", "alone", "expected"), [
    # fused: as before, whatever `alone` would say
    (StageConfig(), True, False, (0.01, 0.3)),
    (StageConfig(), False, False, (0.01, NO_SHARED_WORD_COSINE)),
    # one arm alone: its own floors decided what it found; the floor cuts none of it ...
    (StageConfig(), True, True, (0.0, 0.0)),
    # ... except that a query no memory shares a word with still asks the junk cosine of every hit
    (StageConfig(), False, True, (0.0, NO_SHARED_WORD_COSINE)),
    (StageConfig(floor_cosine=0.5), False, True, (0.0, 0.5)),
    # a floor switched off stays off
    (StageConfig(relevance_floor=0.0, floor_cosine=0.0), False, True, (0.0, 0.0)),
])
def test_an_arm_alone_is_not_cut_by_the_fusions_floor(config, any_word, alone, expected):
    out = floor_config(config, any_shared_word=any_word, alone=alone)
    assert (out.relevance_floor, out.floor_cosine) == expected


def test_a_semantic_arm_alone_keeps_its_paraphrases():
    # MADial: a dialogue's gold memory shares no word of it and sits at cosine 0.25, z 1.2 (relevance 0).
    paraphrase = ev(1, 0.0, words=False, cosine=0.25)
    config = floor_config(StageConfig(), any_shared_word=True, alone=True)
    assert rids(above_floor([paraphrase], config.relevance_floor, config.floor_cosine)) == [1]
