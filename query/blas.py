"""One BLAS thread for recall's small matrix products.

Recall multiplies matrices of a few hundred rows (near-duplicate collapse: candidates x candidates,
MMR: the same under budget:N). OpenBLAS splits even those across its threads, and on a busy machine a
thread that is not scheduled holds the others at a barrier: on the 2-core dev VM shared by four
processes, collapse's 530 x 384 product took 12-16 ms with 2 threads and about 1 ms with one
(developer-notes/recall-performance.md). A daemon already runs recalls side by side in worker threads,
so BLAS threads inside each only oversubscribe the cores.

Process-wide and applied once, at the first recall. torch (query embeddings) keeps its own thread pool:
threadpoolctl's "blas" API covers the OpenBLAS copies numpy, scipy and faiss load, not torch's.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger("recallfs.recall")

_DONE = False
_LOCK = threading.Lock()


def one_blas_thread() -> None:
    """Limit the process's BLAS libraries to one thread (once; later calls cost a flag test)."""
    global _DONE
    if _DONE:
        return
    with _LOCK:
        if _DONE:
            return
        _DONE = True
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # an install without the semantic extra: numpy keeps its threads
            return
        try:
            threadpool_limits(limits=1, user_api="blas")
        except Exception:  # a tuning, never a reason for recall to fail
            log.exception("could not limit BLAS threads")
