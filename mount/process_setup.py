"""How the daemon process sets itself up before serving: log format, malloc arenas (the cyclic
collector's settings are query/collector.py, shared with the in-process benches).

Process-wide knobs, kept apart from the daemon's serving loop (mount/daemon.py) because each is about
the Python or C runtime, not about recallfs.
"""

from __future__ import annotations

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

