"""The near-duplicate stage's pair finder and the word splitter it leans on, against plain references.

`lower_pairs` multiplies bands of rows rather than the whole matrix, and `words` splits ASCII text
with one translate rather than the regex: both must find exactly what the plain way finds, in the same
order (the order decides which group a candidate joins).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from ranking_helpers import cand, rids

from recallfs.ranking.close_pairs import _BAND, lower_pairs
from recallfs.ranking.collapse import collapse_near_duplicates
from recallfs.ranking.text import fold, words


def _plain_pairs(unit: np.ndarray, threshold: float) -> list[tuple[int, int]]:
    n = len(unit)
    return [(r, c) for r in range(n) for c in range(r) if float(unit[r] @ unit[c]) >= threshold]


@pytest.mark.parametrize("n", [1, 2, _BAND - 1, _BAND, _BAND + 1, 2 * _BAND + 3])
@pytest.mark.parametrize("threshold", [0.5, 0.9])
def test_lower_pairs_match_every_pair_checked_one_by_one(n: int, threshold: float) -> None:
    rng = np.random.default_rng(n)
    base = rng.normal(size=(5, 16)).astype(np.float32)
    # clusters of near-copies, so that pairs above the threshold exist across band edges
    rows = base[rng.integers(0, 5, size=n)] + rng.normal(scale=0.3, size=(n, 16)).astype(np.float32)
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    r, c = lower_pairs(unit, threshold)
    found = list(zip(r.tolist(), c.tolist(), strict=True))
    assert found == _plain_pairs(unit, threshold)  # same pairs, row-major, each row's columns ascending


def test_collapse_with_a_non_finite_vector_compares_that_one_by_text() -> None:
    pool = [cand(1, 0.9, content="the tests pass on main"), cand(2, 0.8, content="The  Tests pass on MAIN"),
            cand(3, 0.7, content="deploys go out on fridays")]
    vectors = {1: [1.0, 0.0], 2: [float("nan"), 0.0], 3: [0.0, 1.0]}
    out, note = collapse_near_duplicates(pool, vectors)
    assert rids(out) == [1, 3]
    assert note is not None and "1 of 3" in note


WORD_CASES = [
    "", "   ", "a", "Hello, World!", "snake_case and kebab-case", "tabs\tand\nnewlines",
    "v1.2.3 -> 2026-11-25T03:20:44Z", "UPPER lower MiXeD 42x", "(parens) [brackets] {braces} <angles>",
    "path/to/file.py:12 and C:\\dir\\x", "quotes 'single' \"double\" `back`", "~!@#$%^&*()+=|;?",
    "café naïve", "日本語 text", "emoji 🙂 ok",
]


@pytest.mark.parametrize("text", WORD_CASES)
def test_words_split_as_the_regex_over_the_folded_text(text: str) -> None:
    assert words(text) == re.findall(r"\w+", fold(text))
