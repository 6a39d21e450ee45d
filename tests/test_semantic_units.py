"""Pure pieces of the semantic arm, from tables: the rid bitmap FAISS filters with, and cos -> 0..1."""

from __future__ import annotations

import faiss
import numpy as np
import pytest

from recallfs.query.vectors import cos01
from recallfs.query.window_map import rid_bitmap


@pytest.mark.parametrize(("rids", "members", "outsiders"), [
    ([0], [0], [1, 7, 8]),
    ([3, 8, 9, 17], [3, 8, 9, 17], [0, 2, 4, 10, 16, 18, 1000]),
    ([], [], [0, 1, 5]),
    (list(range(0, 64, 3)), list(range(0, 64, 3)), list(range(1, 64, 3))),
])
def test_rid_bitmap_is_what_faiss_reads(rids, members, outsiders):
    packed = rid_bitmap(np.array(rids, dtype=np.int64))
    sel = faiss.IDSelectorBitmap(len(packed), faiss.swig_ptr(packed))
    assert all(sel.is_member(r) for r in members)
    assert not any(sel.is_member(r) for r in outsiders)


def test_bitmap_restricts_a_real_search():
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((50, 8)).astype(np.float32)
    index = faiss.IndexIDMap2(faiss.IndexFlatIP(8))
    index.add_with_ids(vecs, np.arange(100, 150, dtype=np.int64))
    allowed = np.array([104, 120, 149], dtype=np.int64)
    packed = rid_bitmap(allowed)
    _, ids = index.search(vecs[:1], 10, params=faiss.SearchParameters(sel=faiss.IDSelectorBitmap(len(packed),
                                                                                                faiss.swig_ptr(packed))))
    assert set(ids[0][ids[0] >= 0]) == {104, 120, 149}


@pytest.mark.parametrize(("cos", "score"), [(1.0, 1.0), (0.0, 0.5), (-1.0, 0.0), (0.5, 0.75), (1.0001, 1.0)])
def test_cosine_maps_to_unit_interval(cos, score):
    assert float(cos01(np.array([cos]))[0]) == pytest.approx(score)
