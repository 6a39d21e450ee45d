"""One (partition, table) vector index over the windows of memories (query/chunks.py).

The window vectors (query/flat_vectors.py: the saved file, on disk for a large table, and an in-memory
tail) are held by position, and `rids[pos]` (the chunk map, persisted beside them: query/index_files.py)
names the memory a window belongs to. Windows go in ordered by (rid, chunk) and only higher rids are
appended, so the map is non-decreasing and a row's windows sit next to one another, its first window
first.

- Authorization: the gate's allowed rids become a bitmap over window positions through the map, so a
  window of a row the caller may not read is never scored.
- A search asks for windows until it has `limit` distinct rows, and scores a row by its best window
  (max-pool). A store whose rows are one window each searches exactly as it did with rid ids.
- A row's "own" vector (background sample, rerank, near-duplicate collapse) is its first window's.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from recallfs.query.ann_search import Readable, approximate_top
from recallfs.query.flat_vectors import FlatVectors
from recallfs.query.gpu_search import gpu_copy, gpu_flat_search
from recallfs.query.int8_scan import INT8_SCAN_MIN, Int8Scan, exact_top
from recallfs.query.ivf_lists import IvfLists
from recallfs.query.window_map import Stamp, best_per_row, rid_bitmap, window_mask

__all__ = ["NO_WINDOWS", "RowWindows", "Stamp", "TableIndex", "faiss_module"]

_FAISS: Any = None


def faiss_module() -> Any:
    global _FAISS
    if _FAISS is None:
        import faiss

        # One query at a time gains nothing from an OpenMP team, and an idle team spin-waits: next to
        # torch's own OpenMP runtime on a small machine that stalls query embedding by ~1 s.
        faiss.omp_set_num_threads(1)
        _FAISS = faiss
    return _FAISS


@dataclass(frozen=True, slots=True)
class RowWindows:
    """The window vectors of some rows (TableIndex.row_windows), row by row; `starts[i]` is where the
    windows of `rids[i]` begin in `matrix`."""

    rids: np.ndarray
    starts: np.ndarray
    matrix: np.ndarray

    def best(self, qvec: np.ndarray) -> dict[int, float]:
        """rid -> the query's inner product with that row's best window."""
        if not len(self.rids):
            return {}
        best = np.maximum.reduceat(self.matrix @ np.asarray(qvec, dtype=np.float32), self.starts)
        return dict(zip(self.rids.tolist(), best.tolist(), strict=True))


NO_WINDOWS = RowWindows(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32))


class TableIndex:
    """The window vectors and their chunk map; inverted lists over them when the table is large
    (query/ivf_lists.py, set by query/vectors.py); an int8 copy scanned first by an exact search of a
    large table (query/int8_scan.py); a GPU copy when a GPU is present."""

    def __init__(self, vectors: FlatVectors, rids: np.ndarray, stamp: Stamp, *,
                 int8_scan_min: int = INT8_SCAN_MIN) -> None:
        self.vectors = vectors
        self.rids = np.ascontiguousarray(rids, dtype=np.int64)  # window position -> rid
        self.stamp = stamp
        self.lock = threading.Lock()
        self.checked: tuple[int, int] = (0, -1)  # (store token, generation) last verified
        self._gpu: Any = None
        self._rows: tuple[np.ndarray, np.ndarray] | None = None  # (distinct rids, first window position)
        # (allowed, ntotal, its windows, their packed bitmap once a selector needs it)
        self._allowed: tuple[np.ndarray, int, Readable, list[np.ndarray]] | None = None
        self._int8: Int8Scan | None = None  # made on the first exact search of a table this large
        self.lists: IvfLists | None = None  # the approximate path's lists (query/vectors.py attaches them)
        self.int8_scan_min = int8_scan_min
        self.saved = 0  # windows in its file when it was last saved or loaded (query/vectors.save_due)

    @property
    def ntotal(self) -> int:
        return self.vectors.ntotal

    def ids(self) -> np.ndarray:
        """The rid of each window (the chunk map)."""
        return self.rids

    def _first_windows(self) -> tuple[np.ndarray, np.ndarray]:
        if self._rows is None or len(self.rids) != self.ntotal:
            rows, first = np.unique(self.rids, return_index=True)
            self._rows = (rows, first.astype(np.int64))
        return self._rows

    def embedded_rids(self) -> np.ndarray:
        """The sorted distinct rids this index holds a vector for."""
        return self._first_windows()[0]

    def one_window_each(self) -> bool:
        return len(self._first_windows()[0]) == self.ntotal

    def _locate(self, rids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(mask over `rids` (sorted) of those the index holds, their first windows' positions)."""
        rows, first = self._first_windows()
        pos = np.searchsorted(rows, rids)
        ok = pos < len(rows)
        ok[ok] = rows[pos[ok]] == rids[ok]
        return ok, first[pos[ok]]

    def positions_of(self, rids: np.ndarray) -> np.ndarray:
        """First-window positions of those of `rids` (sorted) that the index holds: one per row."""
        return np.sort(self._locate(rids)[1])

    def vectors_of(self, rids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(the rids of `rids` (sorted) that the index holds, their first windows' vectors)."""
        ok, positions = self._locate(rids)
        return rids[ok], self.vectors_at(positions)

    def best_cosines(self, rids: np.ndarray, qvec: np.ndarray) -> dict[int, float]:
        """The query's inner product with the best window of each of `rids` (sorted, distinct) the index
        holds."""
        return self.row_windows(rids).best(qvec)

    def row_windows(self, rids: np.ndarray) -> RowWindows:
        """Every window of each of `rids` (sorted, distinct) the index holds, in one gather (a few hundred
        rows per recall; a call per row took ~5 us each in the lock and the pointer wrap alone). Needs no
        query vector, so recall gathers them while the query is still being embedded."""
        lo = np.searchsorted(self.rids, rids, side="left")
        hi = np.searchsorted(self.rids, rids, side="right")
        held = hi > lo
        if not held.any():
            return NO_WINDOWS
        lo, hi = lo[held], hi[held]
        counts = hi - lo
        firsts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        # every window of every held row, row by row: lo[i], lo[i] + 1, ..., hi[i] - 1
        positions = np.repeat(lo - firsts, counts) + np.arange(int(counts.sum()))
        return RowWindows(rids[held], firsts, self.vectors_at(positions))

    def vectors_at(self, positions: np.ndarray) -> np.ndarray:
        """Copies of the stored vectors at these window positions."""
        with self.lock:
            return self._gather(positions)

    def _gather(self, positions: np.ndarray) -> np.ndarray:
        """vectors_at() for a caller that holds the lock."""
        return self.vectors.gather(positions)

    def add(self, rids: np.ndarray, matrix: np.ndarray, stamp: Stamp) -> None:
        """Append windows of rows above every rid the index holds."""
        if len(rids):
            self.vectors.add(matrix)
            self.rids = np.concatenate([self.rids, np.asarray(rids, dtype=np.int64)])
            if self._int8 is not None:
                self._int8.add(matrix)
            if self.lists is not None:
                self.lists.extend(faiss_module(), matrix)
        self.stamp = stamp
        self._gpu = self._rows = self._allowed = None

    def _int8_scan(self) -> Int8Scan | None:
        """The int8 copy (made once, from the float32 vectors: ~0.2 s per 65k windows), or None for a
        table below int8_scan_min windows."""
        if self.ntotal < self.int8_scan_min:
            return None
        if self._int8 is None or self._int8.ntotal != self.ntotal:
            coarse = Int8Scan(faiss_module(), self.vectors.dim)
            for block in self.vectors.blocks():
                coarse.add(block)
            self._int8 = coarse
        return self._int8

    def search(
        self, qvec: np.ndarray, allowed: np.ndarray, limit: int, *, exact: bool = False
    ) -> tuple[np.ndarray, np.ndarray, str]:
        """(rids, inner products, which path ran) of the best `limit` allowed rows, best first, each scored
        by its best window. Asks for more windows than rows until `limit` distinct rows come back (or none
        are left). `exact`: never the inverted lists."""
        q = np.ascontiguousarray(qvec.reshape(1, -1), dtype=np.float32)
        k = min(limit, self.ntotal)
        if k <= 0 or len(allowed) == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32), "exact"
        if not self.one_window_each():
            k = min(2 * k, self.ntotal)  # most rows are one window: twice the rows rarely needs a retry
        gpu = faiss_module().get_num_gpus() > 0
        while True:
            rids, scores, path = self._search_gpu(q, allowed, k) if gpu else self._search_cpu(q, allowed, k, exact)
            rows, best = best_per_row(rids, scores, limit)
            if len(rows) >= limit or k >= self.ntotal or len(rids) < k:
                return rows, best, path
            k = min(2 * k, self.ntotal)

    def _readable(self, allowed: np.ndarray) -> tuple[Readable, list[np.ndarray]]:
        """The allowed rows' windows, kept for the same allowed array (query/derived.py caches it per
        store generation and filter), with a slot for their packed bitmap."""
        cached = self._allowed
        if cached is not None and cached[0] is allowed and cached[1] == self.ntotal:
            return cached[2], cached[3]
        mask = window_mask(self.rids, allowed)
        entry: tuple[np.ndarray, int, Readable, list[np.ndarray]] = (
            allowed, self.ntotal, Readable(mask, int(mask.sum())), [])
        self._allowed = entry
        return entry[2], entry[3]

    def _selector(self, allowed: np.ndarray) -> object:
        """A FAISS selector of the allowed rows' windows. Its bitmap is kept with the readable windows
        (which the cache holds for as long as the allowed array lives), so it outlives the search."""
        readable, packed = self._readable(allowed)
        if not packed:
            packed.append(rid_bitmap(readable.positions()))
        return faiss_module().IDSelectorBitmap(len(packed[0]), faiss_module().swig_ptr(packed[0]))

    def _search_cpu(
        self, q: np.ndarray, allowed: np.ndarray, k: int, exact: bool
    ) -> tuple[np.ndarray, np.ndarray, str]:
        """The approximate path when the table has lists (and `exact` is off), else the flat CPU index
        restricted to the allowed rows' windows by a selector: exact, whatever the scope's size. Returns
        (rid of each window, inner product, path), best first."""
        if self.lists is not None and not exact:
            found = approximate_top(self.lists, self._readable(allowed)[0], q[0], k, self._gather,
                                    lambda: self._selector(allowed))
            if found is not None:
                return self.rids[found[0]], found[1], found[2]
        coarse = self._int8_scan()
        if coarse is not None:
            proven = exact_top(coarse, q, k, self._selector(allowed), lambda positions: self._gather(positions) @ q[0])
            if proven is not None:
                return self.rids[proven[0]], proven[1], "exact (int8 scan, proven)"
        positions, scores = self.vectors.top(q[0], k, self._readable(allowed)[0].mask)
        return self.rids[positions], scores, "exact"

    def _search_gpu(self, q: np.ndarray, allowed: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, str]:
        """The GPU copy of the flat index (query/gpu_search.py); the CPU path when the scope is too narrow."""
        if self._gpu is None:
            self._gpu = gpu_copy(faiss_module(), self.vectors)
        found = gpu_flat_search(self._gpu, self.rids, q, allowed, k)
        return (*found, "exact (gpu)") if found is not None else self._search_cpu(q, allowed, k, False)
