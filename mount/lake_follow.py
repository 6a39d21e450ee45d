"""A mount of a DuckLake store follows the lake: what other hosts commit shows here within a poll.

Twice a second the lake's snapshot id is read (one small catalog query, in a thread). When it moved, the
new batches are replayed into this host's replica through the mount's writer, which invalidates what
they changed in the kernel's cache, as after an ingest here. When the lake cannot be reached the
replica keeps serving, health says degraded and why, and the next poll that reaches it catches up.
"""

from __future__ import annotations

import logging
from typing import Any

import trio

from recallfs.mount.vector_backlog import VectorBacklog, embed_backlog

log = logging.getLogger(__name__)

POLL_S = 0.5
RETRY_S = 2.0  # while the lake is unreachable: each try may wait for a connect timeout


async def follow_lake(ops: Any, backend: Any, embedder: Any, backlog: VectorBacklog) -> None:
    """Never returns, and never raises: a failure is logged and the next poll tries again (an exception
    here would end the daemon's nursery, and with it the mount). First the rows replayed before the model
    was up (the daemon's start replays without embedding) get their vectors; until then the lexical arm
    finds them."""
    store = ops.store
    await embed_backlog(ops, embedder, backlog, replayed=True)
    down = store.stale is not None
    while True:
        try:
            down = await _poll(ops, backend, store, embedder, down)
        except Exception:
            log.exception("could not follow the lake")
        await trio.sleep(RETRY_S if down else POLL_S)


async def _poll(ops: Any, backend: Any, store: Any, embedder: Any, down: bool) -> bool:
    """One poll: replay what the lake committed since the last. Returns whether the lake is unreachable."""
    from recallfs.query.lake import LakeUnavailable

    moved = False
    try:
        moved = await trio.to_thread.run_sync(backend.lake_moved, store)
        if moved:
            await ops.write_store(lambda: backend.sync(store, embedder=embedder))
    except LakeUnavailable as exc:
        if not down:
            log.warning("%s; serving this host's copy until it answers", exc)
    if down and store.stale is None:
        log.warning("the lake answers again; caught up to snapshot %d", backend.snapshot)
    if moved or down != (store.stale is not None):
        await ops.refresh_health()
    return store.stale is not None
