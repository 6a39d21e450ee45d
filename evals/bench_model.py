"""The model as a benchmark uses it: loaded from the packaged files, serving queries as the daemon does."""

from __future__ import annotations

import os
import sys
import time

from recallfs.query.embedder import Embedder
from recallfs.query.settings import resolve
from recallfs.query.shared_embedders import embedder_from_settings

QUERY_PATH_WAIT_S = 60.0


def serving_embedder(bench: str) -> Embedder | None:
    """The settings' embedder, ready and serving queries on its fast path, or None (the reason printed under
    `bench`'s name). A bench measured on the stock path would time the start-up, not recall, so it waits
    for the traced query path as the daemon does (up to a minute)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # offline by design: nothing is fetched
    embedder = embedder_from_settings(resolve())
    if not embedder.wait_ready():
        print(f"{bench}: no model: {embedder.problem}", file=sys.stderr)
        return None
    embedder.serve_queries()
    deadline = time.monotonic() + QUERY_PATH_WAIT_S
    while embedder.query_path == "stock" and time.monotonic() < deadline:
        time.sleep(0.1)
    return embedder
