"""A plain BM25, written for the eval's reference and sharing nothing with recallfs's lexical arm:
one document per row, a lowercase word tokenizer (no stemming, no stop words), k1 = 1.2, b = 0.75,
and the Lucene idf ln(1 + (N - df + 0.5) / (df + 0.5)), which never goes negative.

The index is built once over a workspace's rows; each query scores a subset of them (its haystack,
`mask`), and N, df and the average length are taken over that subset alone, as if the subset were the
whole collection. Pure: tested from tables in tests/test_plain_reference.py.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

K1 = 1.2
B = 0.75
_WORD = re.compile(r"[^\W_]+")


def tokenize(text: str) -> list[str]:
    """Lowercase runs of letters and digits ("Don't stop-2x" -> don, t, stop, 2x)."""
    return _WORD.findall(text.lower())


def idf(n_docs: int, df: int) -> float:
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


class PlainBM25:
    """Postings of every term: the documents holding it and how often."""

    def __init__(self, docs: Sequence[str], *, k1: float = K1, b: float = B) -> None:
        self.k1, self.b = k1, b
        self.n = len(docs)
        self.lengths = np.zeros(self.n, dtype=np.float64)
        postings: dict[str, tuple[list[int], list[int]]] = {}
        for i, doc in enumerate(docs):
            counts = Counter(tokenize(doc))
            self.lengths[i] = sum(counts.values())
            for term, tf in counts.items():
                ids, tfs = postings.setdefault(term, ([], []))
                ids.append(i)
                tfs.append(tf)
        self.postings = {t: (np.asarray(ids, dtype=np.int64), np.asarray(tfs, dtype=np.float64))
                         for t, (ids, tfs) in postings.items()}

    def scores(self, query: str, mask: np.ndarray | None = None) -> np.ndarray:
        """One score per document; documents outside `mask` score 0 and count for nothing. A query
        term counts once per occurrence in the query (as a bag of words)."""
        inside = np.ones(self.n, dtype=bool) if mask is None else mask.astype(bool)
        out = np.zeros(self.n, dtype=np.float64)
        n_docs = int(inside.sum())
        if n_docs == 0:
            return out
        avgdl = float(self.lengths[inside].mean()) or 1.0
        for term, qtf in Counter(tokenize(query)).items():
            if term not in self.postings:
                continue
            ids, tfs = self.postings[term]
            keep = inside[ids]
            ids, tfs = ids[keep], tfs[keep]
            if ids.size == 0:
                continue
            norm = self.k1 * (1.0 - self.b + self.b * self.lengths[ids] / avgdl)
            out[ids] += qtf * idf(n_docs, int(ids.size)) * tfs * (self.k1 + 1.0) / (tfs + norm)
        return out


def top(scores: np.ndarray, mask: np.ndarray | None, k: int, *, positive: bool) -> list[int]:
    """Indices of the k best documents inside `mask`, best first, ties by index (stable). With
    `positive`, only scores above 0 (a BM25 document sharing no query term is no hit)."""
    keep = np.ones(scores.size, dtype=bool) if mask is None else mask.astype(bool)
    if positive:
        keep &= scores > 0
    idx = np.flatnonzero(keep)
    order = np.argsort(-scores[idx], kind="stable")[:k]
    return [int(i) for i in idx[order]]


def rrf(rankings: Sequence[Sequence[int]], k: int = 60) -> list[int]:
    """Reciprocal rank fusion: sum over lists of 1 / (k + rank), rank from 1; ties by first appearance."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking, start=1):
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (k + rank)
    return sorted(fused, key=lambda d: -fused[d])
