"""The windows of each inverted list as int8 codes, stored list by list (a FAISS IndexIVFScalarQuantizer
over the lists' centroids, ids = window positions).

Why a copy: reading the probed lists' windows out of the flat index is a random gather, ~0.4 us per
1.5 KB window (2,000 windows ~1 ms, and worse with the lexical arm on the other core). Codes stored
contiguously per list are a quarter of the bytes, read in order, and scanned by FAISS without the
GIL. Their scores are approximate (one scale per table, like query/int8_scan.py): the scan keeps a
shortlist and the caller rescores it from the float32 vectors.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_LEVELS = 127.0
_BLOCK = 32_768  # windows encoded at once (48 MB of float32)


class IvfCodes:
    def __init__(self, faiss: Any, centroids: np.ndarray) -> None:
        self._faiss = faiss
        dim = int(centroids.shape[1])
        self._quantizer = faiss.IndexFlatIP(dim)
        self._quantizer.add(np.ascontiguousarray(centroids, dtype=np.float32))
        self.index = faiss.IndexIVFScalarQuantizer(self._quantizer, dim, int(centroids.shape[0]),
                                                   faiss.ScalarQuantizer.QT_8bit_direct_signed,
                                                   faiss.METRIC_INNER_PRODUCT, False)
        self.index.is_trained = True  # a direct quantizer needs no training, and the centroids are given
        self.scale = 0.0  # set by the first add: 127 / the largest component

    @property
    def ntotal(self) -> int:
        return int(self.index.ntotal)

    def add(self, vectors: np.ndarray, assigned: np.ndarray) -> None:
        """Append windows (positions ntotal, ntotal + 1, ...) to the lists `assigned` gives them. Encoded a
        block at a time: the whole of a 1M-window table at once took 4.5 GB of temporaries."""
        if not len(vectors):
            return
        if self.scale == 0.0:
            peak = float(np.abs(vectors[:_BLOCK]).max())
            self.scale = _LEVELS / peak if peak > 0 else 1.0
        sw = self._faiss.swig_ptr
        for at in range(0, len(vectors), _BLOCK):
            codes = np.asarray(vectors[at: at + _BLOCK], dtype=np.float32) * np.float32(self.scale)
            np.rint(codes, out=codes)  # in place: this runs over every window at start-up
            np.minimum(codes, _LEVELS, out=codes)
            np.maximum(codes, -_LEVELS, out=codes)
            ids = np.arange(self.ntotal, self.ntotal + len(codes), dtype=np.int64)
            lists = np.ascontiguousarray(assigned[at: at + _BLOCK], dtype=np.int64)
            self.index.add_core(len(codes), sw(codes), sw(ids), sw(lists))

    def search(self, q: np.ndarray, lists: np.ndarray, want: int, sel: Any) -> np.ndarray:
        """Window positions of the `want` best selected windows of these lists, by their codes' scores
        (approximate: rescore them). The caller chose the lists, so FAISS does not rank the centroids again."""
        peak = float(np.abs(q).max())
        codes = np.clip(np.rint(q * (_LEVELS / peak if peak > 0 else 1.0)), -_LEVELS, _LEVELS)
        x = np.ascontiguousarray(codes.reshape(1, -1), dtype=np.float32)
        assign = np.ascontiguousarray(lists.reshape(1, -1), dtype=np.int64)
        near = np.zeros(assign.shape, dtype=np.float32)  # the centroids' scores: unused by this index
        scores = np.empty((1, want), dtype=np.float32)
        found = np.empty((1, want), dtype=np.int64)
        params = self._faiss.SearchParametersIVF(nprobe=int(assign.shape[1]), sel=sel)
        sw = self._faiss.swig_ptr
        self.index.search_preassigned_c(1, sw(x), want, sw(assign), sw(near), sw(scores), sw(found), False, params)
        out: np.ndarray = found[0][found[0] >= 0]
        return out
