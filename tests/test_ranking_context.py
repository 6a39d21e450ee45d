"""ranking/context.py from tables: the context cosine of a turn and its neighbours, and the gain it gives."""

from __future__ import annotations

import numpy as np
import pytest

from recallfs.ranking.candidates import Candidate
from recallfs.ranking.context import OFFSET, context_cosine, favour_context, group_cosines

E1, E2, E3 = (np.eye(3, dtype=np.float32)[i] for i in range(3))


@pytest.mark.parametrize(("query", "vectors", "expected"), [
    (E1, [E1], 1.0),  # a turn alone: its own cosine
    (E1, [E1, E2], 1 / np.sqrt(2)),  # the mean of two orthogonal turns
    (E1, [E2, E3], 0.0),  # neighbours that share nothing with the query
    (E1, [E1, E1, E2], 2 / np.sqrt(5)),  # the mean, not the best: one matching turn of three weighs a third
    (E1 * 3, [E1 * 5, E2 * 5], 1 / np.sqrt(2)),  # lengths do not matter
    (E1, [E1, -E1], None),  # a mean of zero length says nothing
    (E1, [], None),
])
def test_context_cosine(query, vectors, expected):
    got = context_cosine(query, vectors)
    assert got == pytest.approx(expected, abs=1e-6) if expected is not None else got is None


def cand(rid: int, score: float) -> Candidate:
    return Candidate(rid=rid, table="turns", score=score)


@pytest.mark.parametrize(("cosines", "weight", "expected"), [
    ({}, 0.2, [(1, 0.5), (2, 0.4)]),  # no context: nothing moves
    ({2: 0.9}, 0.2, [(2, 0.4 + 0.2 * (0.9 - OFFSET)), (1, 0.5)]),  # a turn whose chunk matches rises
    ({1: OFFSET - 0.1, 2: OFFSET}, 0.2, [(1, 0.5), (2, 0.4)]),  # at or below the offset: no loss, no gain
    ({1: 0.3, 2: 0.9}, 0.0, [(1, 0.5), (2, 0.4)]),  # weight 0 is off
])
def test_favour_context(cosines, weight, expected):
    given = [cand(1, 0.5), cand(2, 0.4)]
    out = favour_context(given, cosines, weight)
    assert [(c.rid, pytest.approx(c.score)) for c in out] == expected
    assert [(c.rid, c.score) for c in given] == [(1, 0.5), (2, 0.4)]  # pure: the input is untouched


def test_a_negative_weight_is_refused():
    with pytest.raises(ValueError, match="must not be negative"):
        favour_context([cand(1, 0.5)], {1: 0.9}, -0.1)


def test_group_cosines_is_context_cosine_for_every_group_at_once():
    rng = np.random.default_rng(7)
    vectors = {rid: rng.standard_normal(8).astype(np.float32) for rid in range(1, 9)}
    groups = {2: [2, 1, 3], 5: [5, 4], 7: [7], 9: [9, 8], 6: [6, 99]}  # 9 has no vector; 99 is unknown
    got = group_cosines(vectors[1], groups, vectors)
    assert set(got) == {2, 5, 7, 6}  # a turn without a vector of its own is not scored by its neighbours
    for rid, cos in got.items():
        assert cos == pytest.approx(context_cosine(vectors[1], [vectors[r] for r in groups[rid] if r in vectors]),
                                    abs=1e-6)
    assert group_cosines(vectors[1], {9: [9, 1]}, vectors) == {}
