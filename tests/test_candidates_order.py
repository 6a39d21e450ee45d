"""ordered(): score descending (equal to 12 decimals is equal), then newest, then id, then rid."""

from __future__ import annotations

from datetime import datetime

import pytest

from recallfs.ranking.candidates import Candidate, ordered

OLD, NEW = datetime(2024, 1, 1), datetime(2025, 1, 1)

CASES = [
    # (rid, score, created_at, id) in input order -> rids in the expected order
    ([(1, 0.2, OLD, "a"), (2, 0.9, OLD, "b"), (3, 0.5, OLD, "c")], [2, 3, 1]),
    ([(1, 0.5, OLD, "a"), (2, 0.5 + 1e-14, OLD, "b"), (3, 0.5, NEW, "c")], [3, 1, 2]),  # noise is a tie
    ([(1, 0.5, OLD, "a"), (2, 0.5 + 1e-9, OLD, "b")], [2, 1]),  # a real difference is not
    ([(1, 0.5, None, "a"), (2, 0.5, OLD, "b"), (3, 0.5, NEW, "c")], [3, 2, 1]),  # undated last
    ([(2, 0.5, OLD, "x"), (1, 0.5, OLD, "x")], [1, 2]),  # everything equal: rid decides
    ([(1, float("-inf"), OLD, "a"), (2, float("inf"), OLD, "b"), (3, 1e300, OLD, "c"), (4, -3.0, OLD, "d")],
     [2, 3, 4, 1]),
    ([(1, 0.0, OLD, "b"), (2, -0.0, OLD, "a")], [2, 1]),
]


@pytest.mark.parametrize(("rows", "want"), CASES)
def test_order(rows, want):
    cands = [Candidate(rid=rid, table="facts", score=score, created_at=when, id=ident)
             for rid, score, when, ident in rows]
    assert [c.rid for c in ordered(cands)] == want
    assert [c.rid for c in ordered(list(reversed(cands)))] == want  # a total order: input order never matters
