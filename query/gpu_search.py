"""The flat index's GPU copy, where faiss-gpu sees a GPU (not exercised on the CPU-only development
machine and CI; `python -m recallfs.evals.bench_recall` measures it where one is lent).

GPU flat indexes take no IDSelector: the search asks for more windows than it needs, filters them by
the allowed rows, and widens until `k` allowed windows are found. The answer is the CPU path's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from recallfs.query.flat_vectors import FlatVectors

_GPU_K_MAX = 2048  # the GPU flat search's limit on k
_RESOURCES: Any = None


def gpu_copy(faiss: Any, vectors: FlatVectors) -> Any:
    """A GPU flat index of the same vectors in the same positions, filled a block at a time."""
    global _RESOURCES
    if _RESOURCES is None:
        _RESOURCES = faiss.StandardGpuResources()
    gpu = faiss.GpuIndexFlatIP(_RESOURCES, vectors.dim)
    for block in vectors.blocks():
        gpu.add(block)
    return gpu


def gpu_flat_search(
    gpu_index: Any, window_rids: np.ndarray, q: np.ndarray, allowed: np.ndarray, k: int,
) -> tuple[np.ndarray, np.ndarray] | None:
    """(rid of each window, inner product) of the best `k` allowed windows, best first; None when a
    narrow scope over a large index leaves fewer than `k` within the GPU's k limit (the caller then
    searches on the CPU, with its selector)."""
    ntotal = int(gpu_index.ntotal)
    want = min(ntotal, max(4 * k, 64))
    while True:
        scores, pos = gpu_index.search(q, min(want, _GPU_K_MAX))
        ok = pos[0] >= 0
        rids, scores = window_rids[pos[0][ok]], scores[0][ok]
        mask = np.isin(rids, allowed)
        if mask.sum() >= k or want >= ntotal or want >= _GPU_K_MAX:
            break
        want *= 4
    if mask.sum() < k and want >= _GPU_K_MAX and ntotal > _GPU_K_MAX:
        return None
    return rids[mask][:k].astype(np.int64), scores[mask][:k]
