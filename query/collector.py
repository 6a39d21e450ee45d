"""The cyclic garbage collector's settings for a long-lived process that serves recalls: the daemon
(mount/process_setup.py) and the in-process benchmarks, which measure recall as the daemon runs it.

Such a process keeps millions of long-lived objects (the store's catalog and held ranking columns, and
in the daemon its inodes and listings), and each recall makes thousands of short-lived containers (its
candidates, their sets and dicts). With CPython's default thresholds the young collections that these
trigger keep scanning the long-lived objects as they age: a cold `find` of the 100k bench store spent
9.0 of its 35 s in the collector (6,636 young, 603 middle and 22 full collections), and a hybrid
recall at 100k spent about a third of its fusion and loading there. Reference counting frees all else
as before; only garbage in cycles waits a little longer.
"""

from __future__ import annotations

import gc

# Container allocations between two young collections (CPython's default: 700). A cold `find` of the
# 100k store: 1.9 s in the collector with these (80, 4 and 1 collections), against 9.0 s.
GC_THRESHOLDS = (50_000, 20, 10)


def tune_gc() -> None:
    """Called once set up, before serving: what start-up made (modules, the store, the caches filled so
    far) lives as long as the process, so no full collection needs to scan it again (`gc.freeze`)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
