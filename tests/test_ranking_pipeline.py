"""The stages in order, and StageConfig: the switches --ablate flips."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from ranking_helpers import DAY0, cand, rids

from recallfs.ranking.pipeline import STAGES, StageConfig, shape


def vec(*xs: float) -> np.ndarray:
    return np.asarray(xs, dtype=np.float32)


def test_defaults_are_the_shipped_pipeline():
    cfg = StageConfig()
    assert cfg.dedup and cfg.collapse and not cfg.rerank
    assert cfg.recency == "auto" and cfg.min_score == 0.0
    assert cfg.tag_bonus == 0.0 and cfg.kind_bonus == 0.0 and cfg.entity_first


@pytest.mark.parametrize("stage", STAGES)
def test_toggled_flips_one_stage_and_back(stage):
    cfg = StageConfig()
    flipped = cfg.toggled(stage)
    assert flipped != cfg
    assert flipped.is_on(stage) is not cfg.is_on(stage)  # the flip is what is_on reads
    assert flipped.toggled(stage) == cfg


# The shipped pipeline: which stages run (README "Ranking"; --ablate names each row "<stage> off|on").
OFF_BY_DEFAULT = {"rerank", "bonuses", "min_score"}


@pytest.mark.parametrize("stage", STAGES)
def test_which_stages_run_by_default(stage):
    assert StageConfig().is_on(stage) is (stage not in OFF_BY_DEFAULT)


@pytest.mark.parametrize(("changes", "message"), [
    ({"recency": "sometimes"}, "recency must be one of"),
    ({"rerank_mix": 1.5}, "rerank_mix"),
    ({"mmr_lambda": -0.1}, "mmr_lambda"),
    ({"collapse_threshold": 2.0}, "collapse_threshold"),
    ({"half_life_days": 0}, "half_life_days"),
])
def test_bad_config_is_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        StageConfig(**changes)
    with pytest.raises(ValueError, match="unknown stage"):
        StageConfig().toggled("nonsense")
    with pytest.raises(ValueError, match="unknown stage"):
        StageConfig().is_on("nonsense")


def test_empty_and_single():
    out = shape([], StageConfig(), query="anything")
    assert out.cands == [] and out.notes == []
    one = shape([cand(1, 0.3)], StageConfig(rerank=True, min_score=0.1), query="x", query_vector=vec(1, 0),
                vectors={1: vec(1, 0)}, budget_tokens=100)
    assert rids(one.cands) == [1]


def test_stage_order_collapse_before_recency_before_budget_before_min_score():
    # 1 and 2 are near-copies (2 is a fact): collapse keeps 2 with 1's score. Recency then halves the
    # older hits, the budget drops the longest, min_score the weakest.
    pool = [
        cand(1, 0.9, "turns", day=30, content="we deploy with rsync"),
        cand(2, 0.5, "facts", day=0, content="Deploys: with rsync."),
        cand(3, 0.8, "turns", day=30, content=" ".join(["long"] * 200)),
        cand(4, 0.3, "turns", day=30, content="tiny"),
        cand(5, 0.35, "turns", day=30, content="small"),
    ]
    vectors = {1: vec(1, 0), 2: vec(1, 0.01), 3: vec(0, 1), 4: vec(0.5, 0.5), 5: vec(-1, 0)}
    cfg = StageConfig(min_score=0.32, half_life_days=30, recency_band=0.0)  # band 0: recency dampens every hit
    out = shape(pool, cfg, query="what is the latest on deploys", vectors=vectors, budget_tokens=50)
    assert rids(out.cands) == [2, 5]
    assert out.cands[0].merged == [1] and out.cands[0].score == pytest.approx(0.45)
    assert out.stages["recency"].startswith("auto")
    assert "kept 3 of 4" in out.stages["mmr"]
    assert out.stages["min_score"] == "0.32: dropped 1"
    assert list(out.timings_ms) == ["dedup", "floor", "questions", "session", "collapse", "recency", "budget",
                                    "min_score", "tie_break"]


def test_every_switch_combination_runs_and_keeps_the_order_total():
    pool = [cand(i, s, "facts" if i % 3 == 0 else "turns", day=i % 4, content=f"text {i % 5}", id=f"m{i % 7}")
            for i, s in zip(range(1, 13), [0.5, 0.5, 0.9, 0.1, 0.3, 0.3, 0.7, 0.2, 0.5, 0.6, 0.4, 0.8], strict=True)]
    vectors = {i: vec(1, i % 3) for i in range(1, 13)}
    for dedup, rerank, collapse, recency, mmr in itertools.product([False, True], [False, True], [False, True],
                                                                   ["off", "auto", "on"], [False, True]):
        cfg = StageConfig(dedup=dedup, rerank=rerank, collapse=collapse, recency=recency, mmr=mmr)
        out = shape(pool, cfg, query="latest", query_vector=vec(1, 0), vectors=vectors, budget_tokens=40)
        assert [c.sort_key() for c in out.cands] == sorted(c.sort_key() for c in out.cands)
        again = shape(list(reversed(pool)), cfg, query="latest", query_vector=vec(1, 0), vectors=vectors,
                      budget_tokens=40)
        assert rids(again.cands) == rids(out.cands)
    assert [c.score for c in pool][:3] == [0.5, 0.5, 0.9]  # the input is never changed


def test_all_off_is_fusion_order_with_the_tie_break():
    pool = [cand(1, 0.5, day=0), cand(2, 0.5, day=1), cand(3, 0.9, day=0)]
    cfg = StageConfig(dedup=False, relevance_floor=0.0, floor_cosine=0.0, question_weight=1.0, session_weight=0.0,
                      collapse=False, recency="off", currentness=False, reply_weight=0.0, window_weight=0.0,
                      context_weight=0.0, near_misses=False)
    out = shape(pool, cfg, query="latest news in May 2026", replies={1: 2}, context={1: 0.9}, now=DAY0)
    assert rids(out.cands) == [3, 2, 1]
    assert out.stages == {"dedup": "off", "floor": "off", "questions": "off", "replies": "off", "context": "off",
                          "session": "off",
                          "rerank": "off", "collapse": "off", "bonuses": "off", "window": "off", "recency": "off",
                          "near_misses": "off", "currentness": "off",
                          "mmr": "off (no budget:N)",
                          "min_score": "off"}


def test_rerank_without_embeddings_notes_why_and_keeps_order():
    out = shape([cand(1, 0.9), cand(2, 0.5)], StageConfig(rerank=True), query="x")
    assert rids(out.cands) == [1, 2]
    assert out.stages["rerank"].startswith("skipped") and out.notes


def test_recent_option_wins_over_config():
    pool = [cand(1, 0.9, day=0), cand(2, 0.8, day=60)]  # both within the recency band (0.8 x 0.9)
    assert rids(shape(pool, StageConfig(recency="off"), query="x", recent_half_life_days=30).cands) == [2, 1]
    assert rids(shape(pool, StageConfig(recency="on"), query="x", recent_half_life_days=0.0).cands) == [1, 2]


def test_bonuses_run_when_set():
    pool = [cand(1, 0.5, tags=("ci",)), cand(2, 0.55)]
    out = shape(pool, StageConfig(tag_bonus=0.2), query="ci", terms=["ci"])
    assert rids(out.cands) == [1, 2] and out.stages["bonuses"].startswith("tag x1.2")


def test_question_turns_are_demoted_on_calibrated_scores_only():
    pool = [cand(1, 0.5, content="How do I run the tests?"), cand(2, 0.45, content="Run cargo nextest.")]
    calibrated = shape(pool, StageConfig(), query="run the tests")
    assert rids(calibrated.cands)[0] == 2 and calibrated.stages["questions"] == "question turns x0.8"
    assert "questions" in calibrated.timings_ms
    # On reciprocal ranks the factor would be worth some fifteen ranks: the stage turns itself off.
    ranked = shape(pool, StageConfig(), query="run the tests", calibrated=False)
    assert rids(ranked.cands)[0] == 1 and "questions" not in ranked.timings_ms
    assert ranked.stages["questions"] == "off (rank-fused scores; the factor applies to calibrated fusion)"
    off = shape(pool, StageConfig(question_weight=1.0), query="run the tests", calibrated=False)
    assert off.stages["questions"] == "off"


def _weighed(rid: int, relevance: float, table: str = "turns", **kw) -> object:
    c = cand(rid, relevance, table, **kw)
    c.relevance = relevance
    return c


def test_near_misses_follow_and_a_stage_still_lifts_the_one_it_pulls():
    """A weak neighbour that is a passing question's reply, or the current fact of passing stale evidence,
    is lifted by its stage as a pulled-in row would be (LoCoMo conv-26#90: the answer, a reply found
    weakly by the semantic arm, stayed behind at rank 156 until the floor promoted it)."""
    from recallfs.ranking.currentness import EVIDENCE, CurrentLink

    question = _weighed(1, 0.5, content="how long have you been married?")
    reply, other = _weighed(2, 1e-5, arms=("semantic",)), _weighed(3, 2e-5, arms=("semantic",))
    stale, current = _weighed(4, 0.3), _weighed(5, 1e-5, "facts", arms=("semantic",))
    links = {4: [CurrentLink(EVIDENCE, 5, "f-new", "f-old")]}
    out = shape([question, reply, other, stale, current], StageConfig(), query="married", replies={1: 2},
                links=links)
    assert rids(out.cands) == [1, 2, 5, 4, 3]
    assert [c.near_miss for c in out.cands] == [False, False, False, False, True]
    assert out.stages["near_misses"] == "on (1 follow the hits)"
    off = shape([question, reply, other], StageConfig(near_misses=False), query="married", replies={1: 2})
    assert rids(off.cands) == [1, 2]


def test_a_fact_pulled_for_evidence_the_floor_dropped_goes_too():
    """Issue 12: for `kubernetes` on the demo store a weak stale turn pulled in its current fact; the floor
    dropped the turn, and the fact (scored by session evidence) stayed as the only hit."""
    from recallfs.ranking.currentness import EVIDENCE, PULLED, CurrentLink

    weak = cand(1, 0.005, "turns")
    weak.relevance = 0.005  # below the floor
    pulled = cand(2, 0.0, "facts", arms=(PULLED,))
    links = {1: [CurrentLink(EVIDENCE, 2, "f-new", "f-old")]}
    assert rids(shape([weak, pulled], StageConfig(), query="kubernetes", links=links).cands) == []
    strong = cand(1, 0.6, "turns")
    strong.relevance = 0.6
    assert rids(shape([strong, pulled], StageConfig(), query="kubernetes", links=links).cands) == [2, 1]


def _snapshot(cands):
    return [(c.rid, c.score, set(c.arms), dict(c.ranks), list(c.merged), c.stale) for c in cands]


def test_stages_pass_unchanged_candidates_through_and_copy_only_what_they_change():
    # Copying every candidate in every stage cost about a fifth of a recall at 100k memories: a stage
    # copies only the candidates it changes. Here dedup folds 2 into 1 and collapse folds 4 into 3
    # (their keepers are new); the question turn is demoted (new); 5 and 7 pass through as they were.
    # The input is never changed.
    pool = [cand(1, 0.9, id="x", content="alpha beacon"), cand(2, 0.8, id="x", content="alpha beacon"),
            cand(3, 0.7, content="rsync deploy"), cand(4, 0.6, content="rsync deploy"),
            cand(5, 0.5, content="lunch at noon"), cand(6, 0.4, content="is lunch at noon?"),
            cand(7, 0.3, "facts", content="kiwi mango")]
    before = _snapshot(pool)
    axis = {1: 0, 2: 0, 3: 1, 4: 1, 5: 2, 6: 3, 7: 4}  # only 3 and 4 are close (and 1, 2: dedup's)
    vectors = {r: np.eye(5, dtype=np.float32)[a] for r, a in axis.items()}
    cfg = StageConfig(session_weight=0.0)
    out = shape(pool, cfg, query="anything", vectors=vectors)
    assert _snapshot(pool) == before
    by_rid = {c.rid: c for c in out.cands}
    assert sorted(by_rid) == [1, 3, 5, 6, 7]
    assert by_rid[1].merged == [2] and by_rid[3].merged == [4]
    assert by_rid[6].score == pytest.approx(0.4 * 0.8)
    new = {rid for rid, c in by_rid.items() if c is not pool[rid - 1]}
    assert new == {1, 3, 6}
