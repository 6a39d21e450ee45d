"""Replies (ranking/replies.py): a question's reply scores at least weight x the question, from tables."""

from __future__ import annotations

import pytest
from ranking_helpers import cand, rids

from recallfs.ranking.replies import REPLY, lift_replies


def test_a_reply_rises_to_its_question_and_leads_the_tie_by_being_newer():
    question, reply, other = cand(1, 0.8, day=0), cand(2, 0.1, day=1), cand(3, 0.5, day=0)
    out = lift_replies([question, reply, other], {1: 2}, 1.0)
    assert rids(out) == [2, 1, 3] and out[0].score == 0.8
    assert reply.score == 0.1  # pure: the input candidate is not changed


@pytest.mark.parametrize(("weight", "reply_score", "order", "score"), [
    (0.5, 0.1, [1, 3, 2], 0.4),  # lifted to half the question
    (0.5, 0.7, [1, 2, 3], 0.7),  # already above it: kept as it is
    (0.0, 0.1, [1, 3, 2], 0.1),  # off
])
def test_weights(weight, reply_score, order, score):
    out = lift_replies([cand(1, 0.8), cand(2, reply_score, day=1), cand(3, 0.5)], {1: 2}, weight)
    assert rids(out) == order and next(c.score for c in out if c.rid == 2) == score


def test_a_reply_brought_in_for_a_dropped_question_leaves_and_one_found_by_an_arm_stays():
    pulled = cand(2, 0.0, arms=(REPLY,))
    found = cand(4, 0.3)
    out = lift_replies([pulled, found, cand(5, 0.2)], {1: 2, 3: 4}, 1.0)  # questions 1 and 3 are gone
    assert rids(out) == [4, 5]


def test_two_questions_with_one_reply_lift_it_to_the_better():
    out = lift_replies([cand(1, 0.9), cand(2, 0.6), cand(3, 0.0, arms=(REPLY,), day=1)], {1: 3, 2: 3}, 1.0)
    assert rids(out) == [3, 1, 2] and out[0].score == 0.9


def test_the_weight_must_lie_in_0_1():
    with pytest.raises(ValueError):
        lift_replies([cand(1)], {}, 1.5)


def test_a_reply_stays_below_its_question_after_context_lifts_the_question():
    """Context runs before replies (ranking/pipeline.py): a question its neighbours lift keeps its
    reply right below it, above a turn the question outscored only after context."""
    from recallfs.ranking.pipeline import StageConfig, shape

    question = cand(1, 0.5, day=0, content="What kind are they?")
    reply = cand(2, 0.05, day=1, content="Peruvian lilies.")
    other = cand(3, 0.45, day=0, content="The garden looks great.")
    shaped = shape([question, reply, other], StageConfig(session_weight=0.0, collapse=False),
                   query="what flowers", replies={1: 2}, context={1: 0.9})
    assert rids(shaped.cands) == [1, 2, 3]
