"""The int8 first scan of large tables (query/int8_scan.py, query/window_index.py): on real FAISS
indexes, under random scopes, it returns exactly what the float32 flat scan returns."""

from __future__ import annotations

import faiss
import numpy as np
import pytest

from recallfs.query.flat_vectors import FlatVectors
from recallfs.query.int8_scan import Int8Scan, exact_top, proven
from recallfs.query.window_index import Stamp, TableIndex
from recallfs.query.window_map import rid_bitmap

ERROR = 1e-3  # the bound the table below proves against


@pytest.mark.parametrize(("approx", "exact_sorted", "k", "ok"), [
    ([0.9, 0.5, 0.3], [0.9, 0.5, 0.31], 2, True),  # cut-off 0.3 + error well below the 2nd best
    ([0.9, 0.5, 0.3], [0.9, 0.3005, 0.3], 2, False),  # within the error: a window left out might rank
    ([0.9, 0.5, 0.3], [0.9, 0.3 + ERROR, 0.3], 2, False),  # equal to the bound is not beyond it
    ([0.9, 0.5], [0.9, 0.5], 3, False),  # fewer than k found: not proven (the caller knows why)
    ([-0.2, -0.5], [-0.2, -0.49], 1, True),  # negative inner products
])
def test_proof_that_the_shortlist_holds_the_top_k(approx, exact_sorted, k, ok):
    got = proven(np.array(approx, dtype=np.float32), np.array(exact_sorted, dtype=np.float32), k, ERROR)
    assert got is ok


def _unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    x = rng.normal(size=(n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _vectors(seed: int, n: int = 6000, dim: int = 96) -> np.ndarray:
    """Random unit vectors with the hard cases mixed in: exact copies (ties) and near-copies closer
    than int8 can tell apart."""
    rng = np.random.default_rng(seed)
    x = _unit(rng, n, dim)
    x[100:140] = x[99]  # forty copies of one vector
    near = x[200] + rng.normal(scale=1e-4, size=(60, dim)).astype(np.float32)
    x[201:261] = near / np.linalg.norm(near, axis=1, keepdims=True)
    return x


def _selector(allowed: np.ndarray):
    packed = rid_bitmap(allowed)
    return faiss.IDSelectorBitmap(len(packed), faiss.swig_ptr(packed)), packed


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("share", [1.0, 0.5, 0.05, 0.003])
def test_int8_scan_finds_the_float32_top_k_under_any_scope(seed, share):
    x = _vectors(seed)
    rng = np.random.default_rng(100 + seed)
    flat = faiss.IndexFlatIP(x.shape[1])
    flat.add(x)
    coarse = Int8Scan(faiss, x.shape[1])
    coarse.add(x)
    allowed = np.flatnonzero(rng.random(len(x)) < share)
    sel, _keep = _selector(allowed)
    answered = 0
    # queries aimed at the tie and near-copy clusters, and at random
    for q in (x[99], x[200], x[230], *_unit(rng, 4, x.shape[1])):
        q = q.reshape(1, -1)
        for k in (1, 10, 100):
            found = exact_top(coarse, q, k, sel, lambda pos, q=q: x[pos] @ q[0])
            want_scores, want_pos = flat.search(q, k, params=faiss.SearchParameters(sel=sel))
            want_pos = want_pos[0][want_pos[0] >= 0]
            if found is None:  # it may decline (too wide to prove); the caller then scans float32
                continue
            answered += 1
            pos, scores = found
            assert len(pos) == len(want_pos)
            # the same scores, and the same windows except where scores tie
            assert np.allclose(np.sort(scores), np.sort(want_scores[0][: len(want_pos)]), atol=1e-6)
            # a window that differs stands tied with the float32 scan's last one
            boundary = float(want_scores[0][len(want_pos) - 1]) if len(want_pos) else 0.0
            for p in set(pos.tolist()) ^ set(want_pos.tolist()):
                assert float(x[p] @ q[0]) == pytest.approx(boundary, abs=1e-6)
    assert answered >= 15  # of 21 searches: the shortlist answers nearly all, ties and near-copies too


@pytest.mark.parametrize("seed", range(3))
def test_every_scanned_score_is_within_the_error_bound_also_past_the_first_scale(seed):
    """The bound is measured on what the index holds: vectors added later and larger than the first
    ones (clipped by the first scale) widen it, and it still covers every window."""
    rng = np.random.default_rng(seed)
    x = _vectors(seed, n=3000)
    coarse = Int8Scan(faiss, x.shape[1])
    coarse.add(x[:1000] * 0.5)  # a first scale fitted to smaller vectors
    coarse.add(x[1000:])
    held = np.vstack([x[:1000] * 0.5, x[1000:]])
    everything = np.arange(len(held))
    sel, _keep = _selector(everything)
    for q in _unit(rng, 5, x.shape[1]) * rng.uniform(0.5, 2.0, size=(5, 1)).astype(np.float32):
        q = q.reshape(1, -1)
        approx, pos = coarse.search(q, len(held), sel)
        assert np.all(np.abs(approx - held[pos] @ q[0]) <= coarse.error(q))


def _table(x: np.ndarray, rids: np.ndarray, int8_scan_min: int) -> TableIndex:
    return TableIndex(FlatVectors.in_memory(x.copy()), rids, Stamp("u", "m", x.shape[1], 0, len(rids), int(rids.max())),
                      int8_scan_min=int8_scan_min)


@pytest.mark.parametrize("seed", range(4))
def test_a_large_table_searches_as_the_flat_one_did_also_after_appends(seed):
    rng = np.random.default_rng(seed)
    x = _vectors(seed, n=5000)
    # rows of one to four windows, rids increasing
    rids = np.repeat(np.arange(1, 5001), rng.integers(1, 5, size=5000))[: len(x)].astype(np.int64)
    head = 4000
    fast = _table(x[:head], rids[:head], int8_scan_min=1000)
    plain = _table(x[:head], rids[:head], int8_scan_min=10**9)
    for step in range(2):
        rows = np.unique(fast.ids())
        for share in (1.0, 0.3, 0.01):
            allowed = np.sort(rng.choice(rows, size=max(1, int(share * len(rows))), replace=False))
            for q in _unit(rng, 3, x.shape[1]):
                for limit in (5, 50):
                    got = fast.search(q, allowed, limit)
                    want = plain.search(q, allowed, limit)
                    assert np.allclose(got[1], want[1], atol=1e-6)
                    assert set(got[0].tolist()) <= set(allowed.tolist())
        assert fast._int8 is not None and fast._int8.ntotal == fast.ntotal
        if step == 0:  # an ingest appends rows above every held rid: the int8 copy follows
            stamp = Stamp("u", "m", x.shape[1], 0, len(rids), int(rids.max()))
            for t in (fast, plain):
                t.add(rids[head:], x[head:], stamp)
