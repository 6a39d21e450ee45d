"""The plain reference's pure parts from tables: the tokenizer, BM25 (scores worked out by hand),
top-k and RRF. The reference is measured against recallfs, so it has to be textbook-right itself."""

from __future__ import annotations

import math

import numpy as np
import pytest

from recallfs.evals.plain_bm25 import PlainBM25, idf, rrf, tokenize, top


@pytest.mark.parametrize("text, tokens", [
    ("Hello, World!", ["hello", "world"]),
    ("Don't stop-2x", ["don", "t", "stop", "2x"]),
    ("snake_case and CamelCase", ["snake", "case", "and", "camelcase"]),
    ("Café au lait", ["café", "au", "lait"]),
    ("", []),
    ("  ...  ", []),
])
def test_tokenize(text, tokens):
    assert tokenize(text) == tokens


@pytest.mark.parametrize("n, df, expected", [
    (1, 1, math.log(1 + 0.5 / 1.5)),
    (3, 1, math.log(1 + 2.5 / 1.5)),
    (3, 3, math.log(1 + 0.5 / 3.5)),
    (100, 0, math.log(1 + 100.5 / 0.5)),
])
def test_idf(n, df, expected):
    assert idf(n, df) == pytest.approx(expected)


def _bm25(tf: float, dl: float, avgdl: float, n: int, df: int, k1: float = 1.2, b: float = 0.75) -> float:
    return idf(n, df) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))


DOCS = ["apple banana apple", "banana cherry", "cherry cherry cherry date", "elderberry"]


@pytest.mark.parametrize("query, mask, expected", [
    # apple: df 1 of 4 docs, avgdl (3+2+4+1)/4 = 2.5
    ("apple", None, [_bm25(2, 3, 2.5, 4, 1), 0, 0, 0]),
    # two terms add up; banana df 2
    ("apple banana", None, [_bm25(2, 3, 2.5, 4, 1) + _bm25(1, 3, 2.5, 4, 2), _bm25(1, 2, 2.5, 4, 2), 0, 0]),
    # a repeated query term counts twice
    ("banana banana", None, [2 * _bm25(1, 3, 2.5, 4, 2), 2 * _bm25(1, 2, 2.5, 4, 2), 0, 0]),
    # a mask makes the subset the collection: N 2, avgdl (2+4)/2 = 3, cherry df 2
    ("cherry", [False, True, True, False], [0, _bm25(1, 2, 3, 2, 2), _bm25(3, 4, 3, 2, 2), 0]),
    # a document outside the mask scores nothing even when it holds the term
    ("apple", [False, True, True, True], [0, 0, 0, 0]),
    ("unknown words", None, [0, 0, 0, 0]),
    ("APPLE!", None, [_bm25(2, 3, 2.5, 4, 1), 0, 0, 0]),
])
def test_bm25_scores(query, mask, expected):
    got = PlainBM25(DOCS).scores(query, None if mask is None else np.array(mask))
    assert got == pytest.approx(expected)


def test_bm25_empty_mask_and_empty_corpus():
    assert PlainBM25(DOCS).scores("apple", np.zeros(4, dtype=bool)).tolist() == [0, 0, 0, 0]
    assert PlainBM25([]).scores("apple").tolist() == []


def test_bm25_length_normalisation_prefers_the_shorter_document():
    bm25 = PlainBM25(["kiwi " + "filler " * 20, "kiwi filler"])
    scores = bm25.scores("kiwi")
    assert scores[1] > scores[0] > 0


@pytest.mark.parametrize("scores, mask, k, positive, expected", [
    ([0.1, 0.9, 0.5, 0.0], None, 10, True, [1, 2, 0]),
    ([0.1, 0.9, 0.5, 0.0], None, 10, False, [1, 2, 0, 3]),
    ([0.1, 0.9, 0.5, 0.0], None, 2, False, [1, 2]),
    ([0.1, 0.9, 0.5, 0.0], [True, False, True, True], 10, False, [2, 0, 3]),
    ([0.5, 0.5, 0.5], None, 10, False, [0, 1, 2]),  # ties keep index order
    ([-0.2, -0.1], None, 10, False, [1, 0]),  # cosines can be negative: no floor
    ([-0.2, -0.1], None, 10, True, []),
])
def test_top(scores, mask, k, positive, expected):
    assert top(np.array(scores), None if mask is None else np.array(mask), k, positive=positive) == expected


@pytest.mark.parametrize("rankings, expected", [
    ([[1, 2, 3], [3, 2, 1]], [1, 3, 2]),  # 1 and 3 tie (first seen first): 1/61 + 1/63 > 2/62
    ([[1, 2], [2, 3]], [2, 1, 3]),
    ([[5], []], [5]),
    ([[], []], []),
    ([[1, 2, 3, 4], [4]], [4, 1, 2, 3]),
])
def test_rrf(rankings, expected):
    assert rrf(rankings, 60) == expected


def test_rrf_scores_are_one_over_k_plus_rank():
    # doc 2 at ranks 2 and 1: 1/62 + 1/61 beats doc 1 at rank 1 only: 1/61
    assert rrf([[1, 2], [2]], 60)[0] == 2
