"""query/window_index.TableIndex on a real FAISS flat index: a row's cosine is its best window's,
read in one gather for many rows (the also-scored rows of every calibrated recall)."""

from __future__ import annotations

import numpy as np
import pytest

from recallfs.query.flat_vectors import FlatVectors
from recallfs.query.window_index import Stamp, TableIndex


def _index(windows_per_row: list[int], dim: int = 8, seed: int = 3) -> tuple[TableIndex, np.ndarray]:
    rng = np.random.default_rng(seed)
    rids = np.repeat(np.arange(1, len(windows_per_row) + 1, dtype=np.int64) * 10, windows_per_row)
    vecs = rng.normal(size=(len(rids), dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    stamp = Stamp("uuid", "model", dim, 0, len(rids), int(rids.max()))
    return TableIndex(FlatVectors.in_memory(vecs.copy()), rids, stamp), vecs


def _one_by_one(rids: np.ndarray, window_rids: np.ndarray, vecs: np.ndarray, q: np.ndarray) -> dict[int, float]:
    """The reference: each asked row's windows scored on their own, best kept."""
    out = {}
    for rid in rids.tolist():
        mine = vecs[window_rids == rid]
        if len(mine):
            out[rid] = float(np.max(mine @ q))
    return out


@pytest.mark.parametrize(("windows", "asked"), [
    ([1, 1, 1, 1], [10, 20, 30, 40]),  # one window each
    ([1, 3, 1, 5, 2], [10, 20, 30, 40, 50]),  # long rows among short ones
    ([4, 1, 2], [20]),  # one row
    ([2, 2, 2], [5, 10, 15, 30, 99]),  # rids the index does not hold are absent
    ([3, 1], [1, 2, 3]),  # none held
    ([1] * 50 + [7] + [1] * 50, list(range(10, 1020, 10))),
])
def test_best_window_per_row_matches_scoring_each_row_alone(windows, asked):
    index, vecs = _index(windows)
    q = vecs[len(vecs) // 2] * 0.5 + vecs[0] * 0.5
    rids = np.array(sorted(asked), dtype=np.int64)
    got = index.best_cosines(rids, q)
    want = _one_by_one(rids, index.ids(), vecs, q)
    assert list(got) == list(want)
    assert got == pytest.approx(want, abs=1e-6)


def test_windows_gathered_before_the_query_score_like_best_cosines():
    """Recall gathers the lexical hits' windows while the query is still being embedded
    (QuerySearch.prepare): scoring them later gives what best_cosines gives, for any query."""
    index, vecs = _index([1, 3, 1, 5, 2])
    rids = np.array([10, 20, 35, 40, 50], dtype=np.int64)
    windows = index.row_windows(rids)
    assert windows.rids.tolist() == [10, 20, 40, 50]
    for q in (vecs[0], vecs[5], vecs[2] - vecs[7]):
        assert windows.best(q) == pytest.approx(index.best_cosines(rids, q), abs=1e-6)
    assert index.row_windows(np.array([5, 99], dtype=np.int64)).best(vecs[0]) == {}
