"""Inverted lists over a large table's windows, probed with the caller's scope in mind.

A flat scan reads every window for every query: at 65k turns that is ~1.5-5 ms of a hybrid recall, and
at 1M windows ~60 ms. Here the windows are clustered once (spherical k-means, about 4 x sqrt(n) lists),
and a query reads only the lists whose centroids are nearest to it. The vectors stay where they are,
in the flat index: a list is just the window positions assigned to it, so this costs 4 bytes per window
and the centroids, plus the windows' int8 codes stored list by list for the scan (query/ivf_codes.py).

Why "scope-aware": with a fixed number of lists, a caller that may read only a small, clustered part
of the table (one project's or one agent's memories) finds few or none of its rows in the nearest
lists, and silently gets fewer or worse hits (developer-notes/vector-index.md measured recall@10 of
0.41-0.81). So the lists are probed in centroid order until they hold at least PROBE_WINDOWS windows
the caller may read, and never fewer than MIN_LISTS; and a scope of at most EXACT_MAX readable windows
is searched exactly, which is also the faster way there.

Measured on real MiniLM vectors (vector-index.md): recall@10 against the exact top 10 over the allowed
rows at least 0.98 on random and clustered scopes from 0.3% to 100% of the table.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from recallfs.query.flat_vectors import FlatVectors
from recallfs.query.ivf_codes import IvfCodes

ANN_MIN = 20_000  # windows: smaller tables are scanned whole (well under a millisecond)
EXACT_MAX = 3_000  # readable windows at or below which the exact product over them is faster than probing
# Readable windows the probed lists must hold between them: at least PROBE_WINDOWS, and PROBE_PER_HIT
# per hit asked for. 2,000 gave recall@10 0.97 for queries from outside a clustered scope (its nearest
# rows are then spread over many lists; tests/test_ann_search.py), 4,000 0.99; and the arms ask for 100
# hits, where 2,000 gave recall@100 0.93 on the 100k bench store and 4,000 0.99.
PROBE_WINDOWS = 4_000
PROBE_PER_HIT = 40
MIN_LISTS = 32
TRAIN_PER_LIST = 40  # k-means wants ~39 points per centroid
KMEANS_ITERATIONS = 10
RETRAIN_GROWTH = 4  # lists trained on n windows are retrained once the table holds this x n


def list_count(windows: int) -> int:
    """How many lists for a table of this many windows: the power of two nearest 4 x sqrt(n)."""
    target = 4.0 * math.sqrt(max(windows, 1))
    return max(64, int(2 ** round(math.log2(target))))


def lists_to_probe(centroid_scores: np.ndarray, readable_per_list: np.ndarray, want: int,
                   min_lists: int = MIN_LISTS) -> np.ndarray:
    """The lists to read, nearest centroid first: as many as it takes for them to hold `want` readable
    windows between them, and at least `min_lists` (all of them when the table holds fewer)."""
    order = np.argsort(-centroid_scores, kind="stable")
    held = np.cumsum(readable_per_list[order])
    enough = int(np.searchsorted(held, want, side="left")) + 1  # the first prefix holding `want`
    return order[: max(min_lists, enough)]


class IvfLists:
    """Centroids and each window's list. Window positions are those of the flat index, which only grows
    at the end, so `assigned[i]` stays right for window i; new windows are assigned as they arrive."""

    def __init__(self, centroids: np.ndarray, assigned: np.ndarray, trained_on: int) -> None:
        self.centroids = np.ascontiguousarray(centroids, dtype=np.float32)
        self.assigned = np.ascontiguousarray(assigned, dtype=np.int32)
        self.trained_on = trained_on
        self.codes: IvfCodes | None = None  # made by encode(), kept in step by extend()

    @property
    def nlist(self) -> int:
        return int(self.centroids.shape[0])

    @property
    def count(self) -> int:
        return int(self.assigned.shape[0])

    @classmethod
    def train(cls, faiss: Any, vectors: FlatVectors, *, seed: int = 1234) -> IvfLists:
        """k-means on an even sample of the vectors (deterministic: the same table trains the same lists)."""
        n, dim = vectors.ntotal, vectors.dim
        nlist = max(1, min(list_count(n), n // TRAIN_PER_LIST))  # k-means needs points for every centroid
        take = min(n, TRAIN_PER_LIST * nlist)
        sample = vectors.rows(np.unique(np.linspace(0, n - 1, take).astype(np.int64)))
        kmeans = faiss.Kmeans(dim, nlist, niter=KMEANS_ITERATIONS, spherical=True, seed=seed, verbose=False)
        kmeans.train(np.ascontiguousarray(sample, dtype=np.float32))
        lists = cls(kmeans.centroids, np.zeros(0, dtype=np.int32), n)
        for block in vectors.blocks():
            lists.extend(faiss, block)
        return lists

    def extend(self, faiss: Any, vectors: np.ndarray) -> None:
        """Assign windows appended to the table to their nearest centroid (and add their codes)."""
        if not len(vectors):
            return
        quantizer = faiss.IndexFlatIP(self.centroids.shape[1])
        quantizer.add(self.centroids)
        _, nearest = quantizer.search(np.ascontiguousarray(vectors, dtype=np.float32), 1)
        if self.codes is not None and self.codes.ntotal == self.count:
            self.codes.add(vectors, nearest[:, 0])
        self.assigned = np.concatenate([self.assigned, nearest[:, 0].astype(np.int32)])

    def encode(self, faiss: Any, vectors: FlatVectors) -> None:
        """The int8 codes of every assigned window, read a block at a time."""
        codes = IvfCodes(faiss, self.centroids)
        for block in vectors.blocks():
            if codes.ntotal >= self.count:
                break
            block = block[: self.count - codes.ntotal]
            codes.add(block, self.assigned[codes.ntotal: codes.ntotal + len(block)])
        self.codes = codes

    def stale(self, windows: int) -> bool:
        """Trained on too small a part of the table to balance it: retrain."""
        return windows >= RETRAIN_GROWTH * max(self.trained_on, 1)

    def readable_per_list(self, readable: np.ndarray) -> np.ndarray:
        """How many readable windows each list holds (`readable`: a mask over window positions)."""
        return np.bincount(self.assigned[readable[: self.count]], minlength=self.nlist)

    def lists_for(self, query: np.ndarray, readable_per_list: np.ndarray, want: int) -> np.ndarray:
        """The lists to read for this query, nearest first (lists_to_probe)."""
        return lists_to_probe(self.centroids @ query, readable_per_list, want, MIN_LISTS)
