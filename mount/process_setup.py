"""How the daemon process sets itself up before serving: log format, malloc arenas, the cyclic collector.

Process-wide knobs, kept apart from the daemon's serving loop (mount/daemon.py) because each is about
the Python or C runtime, not about recallfs.
"""

from __future__ import annotations

import gc
import logging
import os


def configure_logging(level: str) -> None:
    root = logging.getLogger()
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
    for handler in root.handlers:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.getLogger("pyfuse3").setLevel(logging.WARNING)


def limit_malloc_arenas(arenas: int = 2) -> None:
    """glibc gives every thread that allocates its own malloc arena; DuckDB's, FAISS's and torch's
    threads then keep hundreds of MB of freed memory resident. Two arenas bound that (a known glibc
    behaviour; MALLOC_ARENA_MAX does the same from the environment). Harmless elsewhere."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(-8, arenas)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass


# Container allocations between two young collections of the cyclic collector (CPython's default: 700).
# The daemon keeps millions of long-lived objects (inodes, listings, the catalog's rows): with the
# default, a cold `find` of the 100k bench store spent 9.0 of its 35 s in the collector (6,636 young, 603
# middle and 22 full collections); with these, 1.9 s (80, 4, 1). Reference counting frees all else as
# before; only garbage in cycles waits a little longer.
GC_THRESHOLDS = (50_000, 20, 10)


def tune_gc() -> None:
    """Called once set up, before serving: what start-up made (modules, the store, the operations) lives
    as long as the daemon, so no full collection needs to scan it again (`gc.freeze`)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
