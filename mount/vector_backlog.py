"""A mount embeds the rows that have no vectors: at start, and after a large write, in parts.

An ingest embeds after its commit, so one killed in between (or a power cut) leaves rows the semantic
arm cannot see (query/vector_gap.py); a DuckLake replica replays other hosts' rows without embedding
them. The mount has the model loaded anyway, so it embeds them through its writer, as an ingest would,
and health says so meanwhile: degraded while rows wait (recall is hybrid for the rest), a note once
done, and degraded with the reason when it failed. A store that never had vectors (ingested with the
semantic arm off) is left to `recallfs reindex`, which the semantic arm's own error names: embedding a
whole store is not a start-up repair.

A write through the mount (inbox/, or `recallfs ingest` routed to it) embeds its own rows up to
OWN_PART and leaves the rest here (found 2026-12-07: a one-line inbox write waited 72 s behind a
3,000-turn file's embedding). Parts go through the writer one at a time, so other writes get in between.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from recallfs.query.ingest import IngestReport
from recallfs.query.ingest_file import IndexRefreshError

log = logging.getLogger(__name__)
BACKLOG_PART = 64  # rows embedded per turn at the writer: a write waits for one part (~0.3 s idle)
OWN_PART = 512  # of a write's own rows, embedded before it returns
RETRY_S = 60.0  # after a full disk stopped it, the loop tries again this often (and after each write)


@dataclass(slots=True)
class VectorBacklog:
    waiting: int = 0  # rows without vectors being embedded now
    embedded: int = 0
    finished_at: str | None = None
    failure: str | None = None
    retry: bool = False  # the failure may pass by itself (a full disk): try again every RETRY_S
    wanted: Any = None  # trio.Event set by `wake`, waited on by `keep_embedding`

    def wake(self) -> None:
        """Ask the mount's embedding loop for another look (trio thread): a write left rows to it."""
        if self.wanted is not None:
            self.wanted.set()

    def state(self) -> tuple[str | None, str | None]:
        """(problem, note) for the health verdict."""
        # No counts here: the daemon's health is every view's (`index.md`, status), and how many rows a
        # --map-uid mount embeds would tell one agent the size of another's private write. The log has them.
        if self.failure is not None:
            return ("some rows have no vectors, so the semantic arm misses them (embedding them failed: "
                    f"{self.failure}); " + ("the mount tries again every minute and after each write" if self.retry
                                            else "the mount tries again after each write")), None
        if self.waiting:
            return ("embedding rows that have no vectors yet (left by an earlier ingest, or the rest of a large "
                    "one); until then only the lexical arm finds them"), None
        if self.embedded:
            return None, (f"embedded the rows that had no vectors (left by an earlier ingest, or the rest of a "
                          f"large one), at {self.finished_at}")
        return None, None


def count_backlog(store: Any) -> int:
    """Rows without a vector from the store's model, in a store that has vectors (0 otherwise)."""
    from recallfs.query.vector_meta import stored_model
    from recallfs.query.vector_write import missing_in

    cur = store.cursor()
    stored = stored_model(cur)
    if stored is None:
        return 0
    return missing_in(cur, [s for s in (store.partition(o, w) for o, w in store.workspaces()) if s], stored.model)


async def embed_backlog(ops: Any, embedder: Any, backlog: VectorBacklog, *, replayed: bool = False) -> None:
    """Embed what the store lacks, through the mount's writer. Never raises: a failure is logged and
    reported by health. `replayed`: a lake replica's rows, replayed before the model was up, are embedded
    even in a store that has no vectors yet."""
    import trio

    from recallfs.query.ingest_file import embed_new_rows

    store = ops.store
    if embedder is None or store.read_only:
        return
    try:  # DuckDB is never called on the trio thread
        backlog.waiting = await trio.to_thread.run_sync(count_backlog, store)
        if not backlog.waiting and not replayed:
            return
        backlog.failure, backlog.retry = None, False  # woken again (a write, the retry timer): try again
        await ops.refresh_health()

        first, parts = backlog.waiting, [0]

        def embed() -> int:  # on the writer thread; one part of the backlog
            done = embed_new_rows(store, IngestReport(partitions=set(store.workspaces())), embedder=embedder,
                                  limit=BACKLOG_PART)
            parts[0] += done
            backlog.waiting = count_backlog(store)  # what is left: more parts, or the model did not load
            # an ingest between parts embeds the rest; a replica's first rows were not counted before
            backlog.embedded = max(first - backlog.waiting, parts[0])
            return done

        # In parts, each through the writer on its own: an ingest or an inbox/ write waits for one part
        # (seconds) rather than the whole backlog (minutes at 50k rows), though it then embeds what is
        # left of the backlog in its workspace itself, as any ingest does.
        while await ops.write_store(embed) and backlog.waiting:
            pass
        backlog.finished_at = datetime.now().isoformat(timespec="seconds")
        if backlog.waiting:
            backlog.failure = getattr(embedder, "problem", None) or "the embedding model did not load in time"
        if backlog.embedded:
            log.info("embedded %d rows that had no vectors", backlog.embedded)
    except IndexRefreshError as exc:  # a full disk: its cause, not the message meant for one ingest
        log.warning("could not embed the rows left without vectors: %s; trying again in %d s", exc.short, RETRY_S)
        backlog.failure, backlog.retry = exc.short, True
    except Exception as exc:
        log.exception("could not embed the rows left without vectors; the next write tries again")
        backlog.failure = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    await ops.refresh_health()


async def keep_embedding(ops: Any, embedder: Any, backlog: VectorBacklog) -> None:
    """The mount's embedding loop: the backlog at start, then again each time a write leaves rows."""
    import trio

    backlog.wanted = trio.Event()
    while True:
        await embed_backlog(ops, embedder, backlog)
        with trio.move_on_after(RETRY_S if backlog.retry else math.inf):
            await backlog.wanted.wait()
        backlog.wanted = trio.Event()
