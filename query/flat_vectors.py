"""The vectors of a table's windows, by position, as float32: the saved file (read into memory for a small
table, left on disk and read row by row for a large one), and the windows appended since, in memory.

Why on disk: at a million windows the vectors are 1.5 GB, and a recall reads a few hundred of them (the
shortlist the inverted lists rescore, the lexical hits' cosines, context and collapse). On the heap they
were most of the daemon's memory and most of its start-up read. Read with pread, the rows a recall asks
for come from the page cache (~1.5 us a row) and count in no process's resident set. A memory mapping was
measured first and dropped: each fault maps the pages around the row too (fault-around, large folios),
so 15,000 random rows put 856 MB of the file in the resident set. Whole passes (encoding codes,
training lists, an exact scan, writing the file) read a block of BLOCK windows at a time.

The file is a plain `.npy` array (float16, C order: the values the store holds, query/half_vectors.py),
half the bytes of float32 on disk and in the page cache: anything that reads `.npy` can read it.

A table of HALF_RESIDENT_MIN windows or more that is read into memory stays float16 there too: its
searches scan the int8 copy or the inverted lists (query/int8_scan.py, query/ivf_lists.py) and read
only the few hundred rows they rescore from here, converted as they are gathered. At 100k memories
that is 73 MB less resident (issue 13's peak RSS). A smaller table is scanned whole by `top`, so it
is held as float32, the type the scan multiplies in.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Iterator
from typing import IO

import numpy as np

from recallfs.query.half_vectors import HALF
from recallfs.query.int8_scan import INT8_SCAN_MIN

BLOCK = 32_768  # windows per block of a whole pass (48 MB at 384 dimensions)
RESIDENT_MAX = 256 << 20  # bytes of float32: a table's saved vectors up to this are read into memory (faster gathers)
HALF_RESIDENT_MIN = INT8_SCAN_MIN  # windows: from here on, held in memory as float16


class FlatVectors:
    """Window vectors 0..ntotal-1: positions below `base_count` are the saved file's (in `_base`, or on disk
    behind `_fd`), the rest the in-memory tail's."""

    def __init__(self, dim: int, base: np.ndarray | None = None) -> None:
        self.dim = dim
        self._base = base if base is not None else np.zeros((0, dim), dtype=np.float32)
        self._fd = -1  # the saved file left on disk (its own descriptor: the path may be replaced meanwhile)
        self._offset = 0  # where its data begins
        self._disk_count = 0
        self._tail = np.zeros((0, dim), dtype=np.float32)  # capacity grows by doubling
        self._tail_count = 0

    @classmethod
    def in_memory(cls, matrix: np.ndarray) -> FlatVectors:
        out = cls(int(matrix.shape[1]))
        out._tail = np.ascontiguousarray(matrix, dtype=np.float32)  # adopted, not copied (a rebuild at 1M is 1.5 GB)
        out._tail_count = len(out._tail)
        return out

    @classmethod
    def open(cls, path: str, resident_max: int | None = None) -> FlatVectors:
        """The vectors of a file write() made: read into memory (as float32) up to `resident_max` bytes of
        float32 (RESIDENT_MAX), else left on disk. Raises ValueError for a file that is not a 2-d float16
        array."""
        with open(path, "rb") as fh:
            major, _ = np.lib.format.read_magic(fh)
            read_header = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
            shape, fortran, dtype = read_header(fh)
            if len(shape) != 2 or fortran or dtype != HALF:
                raise ValueError(f"not a float16 matrix: {dtype} {shape}")
            offset = fh.tell()
            if os.fstat(fh.fileno()).st_size != offset + shape[0] * shape[1] * HALF.itemsize:
                raise ValueError("the file's size does not match its header")
            out = cls(int(shape[1]))
            out._fd, out._offset, out._disk_count = fh.fileno(), offset, int(shape[0])
            if shape[0] * shape[1] * 4 <= (RESIDENT_MAX if resident_max is None else resident_max):
                if shape[0] >= HALF_RESIDENT_MIN:
                    out._base = np.empty((shape[0], shape[1]), dtype=HALF)
                    out._pread(memoryview(out._base.data).cast("B"), 0)
                elif shape[0]:
                    out._base = np.concatenate(list(out.blocks()))
                out._fd, out._disk_count = -1, 0  # read: no descriptor kept (a daemon may serve many partitions)
                return out
            out._fd = os.dup(fh.fileno())
        weakref.finalize(out, os.close, out._fd)
        return out

    @property
    def base_count(self) -> int:
        """How many windows the saved file holds (on disk or read into memory)."""
        return self._disk_count or len(self._base)

    @property
    def ntotal(self) -> int:
        return self.base_count + self._tail_count

    @property
    def on_disk(self) -> int:
        """How many windows are read from disk as they are asked for (0: all are in memory)."""
        return self._disk_count

    def add(self, matrix: np.ndarray) -> None:
        x = np.asarray(matrix, dtype=np.float32).reshape(-1, self.dim)
        need = self._tail_count + len(x)
        if need > len(self._tail):
            grown = np.empty((max(need, 2 * len(self._tail), 1024), self.dim), dtype=np.float32)
            grown[: self._tail_count] = self._tail[: self._tail_count]
            self._tail = grown
        self._tail[self._tail_count: need] = x
        self._tail_count = need

    def gather(self, positions: np.ndarray) -> np.ndarray:
        """Copies of the vectors at these positions (any order, repeats allowed)."""
        positions = np.asarray(positions, dtype=np.int64)
        split = self.base_count
        out = np.empty((len(positions), self.dim), dtype=np.float32)
        low = positions < split
        if self._disk_count:
            self._read_rows(positions[low], out, np.flatnonzero(low))
        else:
            out[low] = self._base[positions[low]]
        if not low.all():
            out[~low] = self._tail[positions[~low] - split]
        return out

    def blocks(self, start: int = 0, size: int = BLOCK, *, copy: bool = True) -> Iterator[np.ndarray]:
        """The vectors from `start` on, a block at a time, in order: copies, since a block may outlive the
        pass; `copy=False` for a pass that keeps none (resident windows are then read in place)."""
        split = self.base_count
        for at in range(start, self.ntotal, size):
            stop = min(at + size, self.ntotal)
            if stop <= split:
                yield self._read_base(at, stop, copy)
            elif at >= split:
                tail = self._tail[at - split: stop - split]
                yield tail.copy() if copy else tail
            else:
                yield np.concatenate([self._read_base(at, split, copy), self._tail[: stop - split]])

    def rows(self, positions: np.ndarray) -> np.ndarray:
        """gather() for many positions in ascending order, read a block at a time (a training sample)."""
        positions = np.asarray(positions, dtype=np.int64)
        out = np.empty((len(positions), self.dim), dtype=np.float32)
        at = 0
        for start, block in zip(range(0, self.ntotal, BLOCK), self.blocks(copy=False), strict=False):
            upto = int(np.searchsorted(positions, start + len(block)))
            out[at:upto] = block[positions[at:upto] - start]
            at = upto
        return out

    def top(self, q: np.ndarray, k: int, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(positions, inner products) of the best k windows where `mask` is set, best first, ties by
        position: the exact scan, a block at a time."""
        best_pos = np.zeros(0, dtype=np.int64)
        best = np.zeros(0, dtype=np.float32)
        for start, block in zip(range(0, self.ntotal, BLOCK), self.blocks(copy=False), strict=False):
            keep = np.flatnonzero(mask[start: start + len(block)])
            if not len(keep):
                continue
            best_pos = np.concatenate([best_pos, keep + start])
            # A scope that reads most of the block: one product over it beats copying the rows out first
            dense = 4 * len(keep) >= len(block)
            best = np.concatenate([best, (block @ q)[keep] if dense else block[keep] @ q])
            if len(best) > k:
                cut = np.argpartition(-best, k - 1)[:k]
                best_pos, best = best_pos[cut], best[cut]
        order = np.lexsort((best_pos, -best))
        return best_pos[order], best[order]

    def write(self, fh: IO[bytes]) -> None:
        """The whole array as a float16 `.npy`, a block at a time (the vectors are the store's, already
        float16 values: nothing is lost)."""
        np.lib.format.write_array_header_1_0(
            fh, {"descr": HALF.str, "fortran_order": False, "shape": (self.ntotal, self.dim)})
        for block in self.blocks(copy=False):
            fh.write(block.astype(HALF).tobytes())

    def _read_base(self, start: int, stop: int, copy: bool = True) -> np.ndarray:
        if not self._disk_count:
            if copy or self._base.dtype != np.float32:
                return np.array(self._base[start:stop], dtype=np.float32)
            return self._base[start:stop]
        raw = np.empty((stop - start, self.dim), dtype=HALF)
        self._pread(memoryview(raw.data).cast("B"), start)
        return raw.astype(np.float32, copy=False)

    def _read_rows(self, positions: np.ndarray, out: np.ndarray, slots: np.ndarray) -> None:
        """out[slots[i]] = the saved vector at positions[i], a pread per row (the GIL is released for each)."""
        raw = np.empty((len(positions), self.dim), dtype=HALF)
        view = memoryview(raw.data).cast("B")
        row = self.dim * raw.itemsize
        for i, position in enumerate(positions.tolist()):
            self._pread(view[i * row: (i + 1) * row], position)
        out[slots] = raw

    def _pread(self, view: memoryview, position: int) -> None:
        got = os.preadv(self._fd, [view], self._offset + position * self.dim * HALF.itemsize)
        if got != len(view):
            raise OSError(f"short read of the vectors file: {got} of {len(view)} bytes")
