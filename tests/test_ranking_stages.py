"""Identity dedup, reranker and near-duplicate collapse on hand-made candidate lists."""

from __future__ import annotations

import numpy as np
import pytest
from ranking_helpers import cand, rids

from recallfs.ranking.candidates import ordered
from recallfs.ranking.collapse import collapse_near_duplicates
from recallfs.ranking.dedup import dedup_identity
from recallfs.ranking.rerank import rerank


def vec(*xs: float) -> np.ndarray:
    return np.asarray(xs, dtype=np.float32)


# -- tie-break -------------------------------------------------------------------------------------
def test_tie_break_score_then_newest_then_id_then_rid():
    pool = [cand(1, 0.5, day=1, id="b"), cand(2, 0.5, day=2, id="z"), cand(3, 0.5, day=1, id="a"),
            cand(4, 0.9, day=0, id="y"), cand(5, 0.5, day=None, id="a"), cand(6, 0.5, day=1, id="a")]
    assert rids(ordered(pool)) == [4, 2, 3, 6, 1, 5]


def test_tie_break_ignores_float_noise():
    a, b = cand(1, 0.1 + 0.2, day=0), cand(2, 0.3, day=1)
    assert a.score != b.score
    assert rids(ordered([a, b])) == [2, 1]  # equal scores: the newer first


def test_tie_break_empty_and_single():
    assert ordered([]) == []
    assert rids(ordered([cand(9)])) == [9]


# -- identity dedup --------------------------------------------------------------------------------
def test_dedup_empty_and_single():
    assert dedup_identity([]) == []
    assert rids(dedup_identity([cand(1)])) == [1]


def test_dedup_same_rid_through_two_lists_keeps_every_provenance():
    a = cand(1, 0.4, "facts", arms=("lexical",))
    b = cand(1, 0.7, "facts", arms=("semantic",))
    out = dedup_identity([a, b])
    assert rids(out) == [1]
    assert out[0].score == pytest.approx(0.7)
    assert out[0].arms == {"lexical", "semantic"}
    assert out[0].ranks == {"lexical:facts": 1, "semantic:facts": 1}
    assert out[0].merged == []


def test_dedup_two_versions_of_one_memory_become_one_hit():
    old = cand(1, 0.9, "facts", id="f-x", arms=("lexical",))
    new = cand(2, 0.3, "facts", id="f-x", arms=("semantic",))
    other = cand(3, 0.5, "facts", id="f-y")
    out = dedup_identity([old, new, other])
    assert rids(out) == [1, 3]
    assert out[0].merged == [2] and out[0].arms == {"lexical", "semantic"}


def test_dedup_same_id_in_different_tables_is_not_a_duplicate():
    out = dedup_identity([cand(1, 0.5, "facts", id="x"), cand(2, 0.5, "turns", id="x")])
    assert sorted(rids(out)) == [1, 2]


def test_dedup_does_not_change_its_input():
    a, b = cand(1, 0.4, id="x"), cand(2, 0.6, id="x")
    dedup_identity([a, b])
    assert a.merged == [] and a.score == 0.4 and b.score == 0.6


def test_dedup_ties_are_deterministic():
    pool = [cand(i, 0.5, id=f"m{i % 2}") for i in range(1, 7)]
    first = dedup_identity(pool)
    assert rids(first) == rids(dedup_identity(list(reversed(pool))))
    assert rids(first) == [2, 1]  # equal score and date: id "m0" before "m1"


# -- reranker --------------------------------------------------------------------------------------
QUERY = vec(1, 0, 0)
VECS = {1: vec(0, 1, 0), 2: vec(1, 0.1, 0), 3: vec(0.7, 0.7, 0)}


def test_rerank_orders_by_blend_of_score_and_cosine():
    pool = [cand(1, 0.9), cand(2, 0.5), cand(3, 0.7)]
    out, note = rerank(pool, QUERY, VECS, mix=1.0)
    assert note is None
    assert rids(out) == [2, 3, 1]
    out, _ = rerank(pool, QUERY, VECS, mix=0.0)
    assert rids(out) == [1, 3, 2]
    out, _ = rerank(pool, QUERY, VECS, mix=0.5)
    assert out[0].score == pytest.approx(0.5 * 0.5 + 0.5 * float(1 / np.linalg.norm([1, 0.1])))


def test_rerank_empty_and_single():
    assert rerank([], QUERY, VECS) == ([], None)
    out, note = rerank([cand(1, 0.2)], QUERY, VECS, mix=1.0)
    assert rids(out) == [1] and note is None and out[0].score == pytest.approx(0.0)


def test_rerank_ties_fall_to_the_tie_break():
    pool = [cand(5, 0.5, day=0), cand(6, 0.5, day=3)]
    out, _ = rerank(pool, QUERY, {5: vec(1, 0, 0), 6: vec(2, 0, 0)}, mix=0.5)
    assert out[0].score == pytest.approx(out[1].score)
    assert rids(out) == [6, 5]


def test_rerank_missing_vector_gets_the_mean_cosine():
    pool = [cand(1, 0.5), cand(2, 0.5), cand(9, 0.5)]
    out, note = rerank(pool, QUERY, {1: vec(1, 0, 0), 2: vec(0, 1, 0)}, mix=1.0)
    assert note is None
    assert {c.rid: round(c.score, 6) for c in out} == {1: 1.0, 2: 0.0, 9: 0.5}


@pytest.mark.parametrize(("query", "vectors", "reason"), [
    (None, VECS, "no query embedding"),
    (QUERY, None, "no stored embeddings"),
    (QUERY, {}, "no stored embeddings"),
    (QUERY, {1: vec(1, 0)}, "no stored embeddings"),   # another dimension
    (QUERY, {42: vec(1, 0, 0)}, "no stored embeddings"),  # none of these candidates
])
def test_rerank_skips_softly_and_keeps_the_order(query, vectors, reason):
    pool = [cand(1, 0.9), cand(2, 0.5)]
    out, note = rerank(pool, query, vectors, mix=1.0)
    assert rids(out) == [1, 2] and [c.score for c in out] == [0.9, 0.5]
    assert note is not None and reason in note


def test_rerank_keeps_prior_order_when_the_budget_runs_out():
    ticks = iter(range(0, 10_000, 1))

    def clock() -> float:  # every call advances 1 s
        return float(next(ticks))

    pool = [cand(i, 1.0 - i / 1000) for i in range(1, 200)]
    vectors = {i: vec(0, 1, 0) if i < 100 else vec(1, 0, 0) for i in range(1, 200)}
    out, note = rerank(pool, QUERY, vectors, mix=1.0, budget_ms=500, clock=clock)
    assert rids(out) == rids(pool) and note is not None and "budget" in note
    assert out[0].score == pool[0].score


def test_rerank_does_not_change_its_input():
    pool = [cand(1, 0.9), cand(2, 0.5)]
    rerank(pool, QUERY, VECS, mix=1.0)
    assert [c.score for c in pool] == [0.9, 0.5]


# -- near-duplicate collapse -----------------------------------------------------------------------
SAME = "we deploy with rsync"          # the same claim, worded three ways
SAME_2 = "Deploys: with rsync."
SAME_3 = "rsync, we deployed"


def test_collapse_empty_and_single():
    assert collapse_near_duplicates([], None) == ([], None)
    out, note = collapse_near_duplicates([cand(1)], {1: vec(1, 0)})
    assert rids(out) == [1] and note is None


def test_collapse_keeps_the_best_provenance_with_the_best_score():
    turn = cand(1, 0.9, "turns", arms=("lexical",), content=SAME)
    fact = cand(2, 0.4, "facts", arms=("semantic",), content=SAME_2)
    other = cand(3, 0.6, "turns", content="lunch is at noon")
    vectors = {1: vec(1, 0.05), 2: vec(1, 0.0), 3: vec(0, 1)}
    out, note = collapse_near_duplicates([turn, fact, other], vectors)
    assert note is None
    assert rids(out) == [2, 3]
    kept = out[0]
    assert kept.table == "facts" and kept.score == pytest.approx(0.9)
    assert kept.arms == {"lexical", "semantic"} and kept.merged == [1]
    assert kept.ranks == {"semantic:facts": 2, "lexical:turns": 1}


def test_collapse_threshold_is_inclusive_and_below_it_nothing_merges():
    a, b = cand(1, 0.9, content=SAME), cand(2, 0.8, content=SAME_2)
    vectors = {1: vec(1, 0), 2: vec(0.8, 0.6)}  # cosine 0.8
    assert rids(collapse_near_duplicates([a, b], vectors, threshold=0.8)[0]) == [1]
    assert rids(collapse_near_duplicates([a, b], vectors, threshold=0.81)[0]) == [1, 2]


def test_collapse_groups_against_the_seed_not_in_chains():
    # 1 ~ 2 and 2 ~ 3 but 1 is not ~ 3: 3 stays, so a chain of small steps cannot swallow a topic.
    vectors = {1: vec(1, 0), 2: vec(0.96, 0.28), 3: vec(0.8, 0.6)}
    pool = [cand(1, 0.9, content=SAME), cand(2, 0.8, content=SAME_2), cand(3, 0.7, content=SAME_3)]
    out, _ = collapse_near_duplicates(pool, vectors, threshold=0.9)
    assert rids(out) == [1, 3]


@pytest.mark.parametrize(("a", "b"), [
    ("The API rate limit is 100 per minute", "The API rate limit is 200 per minute"),
    ("The tests must pass before merging", "The tests need not pass before merging"),
    ("The cache is stored in ~/.cache/tern", "The cache is stored in ~/.local/tern"),
    ("atlas shared note about the release", "atlas private note about the release"),
    ("deploy before the freeze", "deploy after the freeze"),
])
def test_collapse_never_merges_different_claims_however_close_the_vectors(a, b):
    pool = [cand(1, 0.9, "facts", content=a), cand(2, 0.8, "facts", content=b)]
    out, _ = collapse_near_duplicates(pool, {1: vec(1, 0), 2: vec(1, 0)})
    assert rids(out) == [1, 2]


@pytest.mark.parametrize(("a", "b"), [
    ("Release notes are drafted in docs/CHANGES.md.", "release notes are drafted in docs/CHANGES.md"),
    ("We deploy the docs with wrangler pages deploy", "The docs are deployed with wrangler pages deploy"),
    ("Caroline is researching adoption agencies", "Caroline researches adoption agencies"),
])
def test_collapse_merges_the_same_claim_reworded(a, b):
    pool = [cand(1, 0.9, "turns", content=a), cand(2, 0.8, "facts", content=b)]
    out, _ = collapse_near_duplicates(pool, {1: vec(1, 0), 2: vec(1, 0.1)})
    assert rids(out) == [2] and out[0].merged == [1]


def test_collapse_fails_soft_to_exact_text_without_vectors():
    pool = [cand(1, 0.9, "turns", content="The CI runs  on GitHub."), cand(2, 0.5, "facts",
            content="the ci runs on github."), cand(3, 0.4, content="something else")]
    out, note = collapse_near_duplicates(pool, None)
    assert rids(out) == [2, 3]
    assert note is not None and "exact text" in note


def test_collapse_mixes_vectors_and_text_when_some_are_missing():
    pool = [cand(1, 0.9, content=SAME), cand(2, 0.8, content=SAME_2), cand(3, 0.7, content=SAME)]
    out, note = collapse_near_duplicates(pool, {1: vec(1, 0), 2: vec(1, 0)})
    assert rids(out) == [1]
    assert out[0].merged == [2, 3] and "1 of 3" in (note or "")


def test_collapse_equal_provenance_ties_are_deterministic():
    pool = [cand(i, 0.5, "turns", content=text) for i, text in ((4, SAME), (2, SAME_2), (3, SAME_3))]
    vectors = {i: vec(1, 0) for i in (2, 3, 4)}
    out, _ = collapse_near_duplicates(pool, vectors)
    assert rids(out) == [2] and out[0].merged == [3, 4]


def test_collapse_ignores_vectors_of_another_dimension():
    pool = [cand(1, 0.9, content=SAME), cand(2, 0.8, content=SAME_2), cand(3, 0.7, content=SAME_3)]
    out, note = collapse_near_duplicates(pool, {1: vec(1, 0), 2: vec(1, 0), 3: vec(1, 0, 0)})
    assert rids(out) == [1, 3] and "1 of 3" in (note or "")


@pytest.mark.parametrize(("text", "words"), [
    ("We deployed the docs", {"deploy", "doc"}),
    ("Notes: not ready", {"note", "not", "ready"}),
    ("The tests must pass", {"test", "must", "pass"}),
    ("", set()),
])
def test_content_words(text, words):
    from recallfs.ranking.text import content_words

    assert content_words(text) == words


# -- session evidence ------------------------------------------------------------------------------
def _in(session: str | None, c):
    c.session = session
    return c


def test_session_evidence_lifts_a_hit_whose_session_holds_a_stronger_hit():
    from recallfs.ranking.session_evidence import session_evidence

    strong = _in("s1", cand(1, 0.9))
    supported = _in("s1", cand(2, 0.40))
    lone = _in("s2", cand(3, 0.45))
    out = session_evidence([strong, supported, lone], 0.2, breadth=0.0)
    assert rids(out) == [1, 2, 3]  # 0.40 + 0.2 x 0.9 beats 0.45 + 0.2 x 0.45
    assert out[0].score == pytest.approx(0.9)  # the best of a session keeps its score
    assert 0 <= min(c.score for c in out) and max(c.score for c in out) <= 1


@pytest.mark.parametrize(("weight", "expected"), [
    (0.0, [3, 1, 2]),   # off: the fused order
    (0.05, [3, 1, 2]),  # too little support to overtake
    (0.2, [3, 2, 1]),   # rid 2 shares its session with the best hit
    (1.0, [3, 2, 1]),
])
def test_session_evidence_weight_table(weight, expected):
    from recallfs.ranking.session_evidence import session_evidence

    cands = [_in("a", cand(1, 0.48)), _in("b", cand(2, 0.45)), _in("b", cand(3, 0.9))]
    assert rids(session_evidence(cands, weight)) == expected


@pytest.mark.parametrize(("scores", "breadth", "support"), [
    ([], 1.0, 0.0),
    ([0.6], 1.0, 0.6),                       # one hit: its own score
    ([0.2, 0.6], 0.0, 0.6),                  # breadth 0: the best hit alone, in any order
    ([0.6, 0.5], 1.0, 1 - 0.4 * 0.75),       # noisy-OR: the second (0.5, squared 0.25) closes a quarter
    ([0.6, 0.5], 0.5, 1 - 0.4 * 0.875),      # ... at half strength
    ([0.6, 0.2], 1.0, 1 - 0.4 * 0.96),       # a weak hit adds little
    ([1.0, 0.9], 1.0, 1.0),                  # never above 1
    ([0.5, 0.5, 0.5, 0.5, 0.5], 1.0, 1 - 0.5 * 0.75 ** 4),
    ([0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5], 1.0, 1 - 0.5 * 0.75 ** 4),  # past the best and 4 more: nothing
])
def test_session_support_table(scores, breadth, support):
    from recallfs.ranking.session_evidence import session_support

    assert session_support(scores, breadth) == pytest.approx(support)


def test_a_session_the_query_lands_in_twice_outranks_one_it_lands_in_once():
    from recallfs.ranking.session_evidence import session_evidence

    cands = [_in("once", cand(1, 0.60)), _in("twice", cand(2, 0.59)), _in("twice", cand(3, 0.45))]
    assert rids(session_evidence(cands, 0.6, breadth=0.0)) == [1, 2, 3]  # the best hit alone: 0.60 wins
    assert rids(session_evidence(cands, 0.6, breadth=1.0)) == [2, 1, 3]


def test_session_evidence_refuses_a_breadth_outside_0_1():
    from recallfs.ranking.session_evidence import session_evidence

    with pytest.raises(ValueError, match=r"0\.\.1"):
        session_evidence([], 0.4, breadth=1.5)


def test_session_evidence_leaves_hits_without_a_session_in_their_order():
    from recallfs.ranking.session_evidence import session_evidence

    cands = [cand(1, 0.3), cand(2, 0.6), cand(3, 0.45)]
    assert rids(session_evidence(cands, 0.5)) == [2, 3, 1]


def test_session_evidence_refuses_a_negative_weight():
    from recallfs.ranking.session_evidence import session_evidence

    with pytest.raises(ValueError, match=">= 0"):
        session_evidence([], -0.1)


# -- question turns --------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "expected"), [
    ("What's the one-liner for running just the config tests?", True),
    ("did it pass?  ", True),
    ('She asked "is it Tuesday?"', True),
    ("(really?)", True),
    ("全部テストですか？", True),
    ("Run cargo nextest. Any questions? None.", False),
    ("The ? operator propagates errors", False),
    ("", False),
])
def test_is_question(text, expected):
    from recallfs.ranking.questions import is_question

    assert is_question(text) is expected


def test_question_turns_drop_below_the_answer_but_facts_never_do():
    from recallfs.ranking.questions import demote_questions

    asks = cand(1, 0.52, "turns", content="How do we run the tests?")
    tells = cand(2, 0.5, "turns", content="We run them with cargo nextest.")
    fact_q = cand(3, 0.51, "facts", content="Should releases wait for green CI?")
    out = demote_questions([asks, tells, fact_q], 0.8)
    assert rids(out) == [3, 2, 1]
    assert out[2].score == pytest.approx(0.52 * 0.8) and asks.score == 0.52  # input unchanged
    assert rids(demote_questions([asks, tells, fact_q], 1.0)) == [1, 3, 2]  # 1 is off


@pytest.mark.parametrize("weight", [-0.1, 1.5])
def test_question_weight_must_lie_in_0_1(weight):
    from recallfs.ranking.questions import demote_questions

    with pytest.raises(ValueError, match=r"0\.\.1"):
        demote_questions([], weight)


def test_collapse_computes_content_words_only_for_pairs_above_the_threshold():
    # Content words are the costly text feature; only a pair whose cosine reaches the threshold asks
    # for them. Five candidates, one close pair (1, 2): two texts' words are computed, not five.
    from recallfs.ranking.text import content_words

    texts = ["alpha beacon cinder", "Alpha beacons cinder", "delta ember flint", "gamma harbor ion",
             "juniper kettle lantern"]
    pool = [cand(i + 1, 0.9 - i / 10, content=t) for i, t in enumerate(texts)]
    vectors = {1: vec(1, 0, 0, 0, 0), 2: vec(1, 0.01, 0, 0, 0), 3: vec(0, 0, 1, 0, 0), 4: vec(0, 0, 0, 1, 0),
               5: vec(0, 0, 0, 0, 1)}
    content_words.cache_clear()
    out, _ = collapse_near_duplicates(pool, vectors, threshold=0.9)
    assert rids(out) == [1, 3, 4, 5] and out[0].merged == [2]
    assert content_words.cache_info().misses == 2


def test_collapse_and_dedup_pass_through_the_candidates_they_do_not_fold():
    # Only a keeper that absorbs another is a new candidate; the rest are the caller's own objects.
    pool = [cand(1, 0.9, content=SAME), cand(2, 0.8, content=SAME_2), cand(3, 0.7, content="lunch is at noon")]
    out, _ = collapse_near_duplicates(pool, {1: vec(1, 0), 2: vec(1, 0), 3: vec(0, 1)})
    assert rids(out) == [1, 3] and out[0] is not pool[0] and out[1] is pool[2]
    assert pool[0].merged == [] and out[0].merged == [2]
    out = dedup_identity(pool)
    assert all(a is b for a, b in zip(out, pool, strict=True))
