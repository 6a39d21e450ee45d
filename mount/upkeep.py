"""What changes outside the request path, and what cached answers depend on.

Store writes (ingest from the control socket) and the kernel invalidation after them, the semantic
arm's state, and the health verdict. `token()` is what every cached listing and recall result is valid
for besides its own key; `status()` is the daemon state index.md shows.
"""

from __future__ import annotations

import errno
import logging
import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import pyfuse3
import trio

from recallfs.mount.boundary import Stats
from recallfs.mount.browse import Browser
from recallfs.mount.concurrency import Blocking, GuardedStore
from recallfs.mount.entries import EVERYTHING_DEP, INDEX_DEP, RECALL_DEP, Dep
from recallfs.mount.health import Verdict, verdict
from recallfs.mount.inodes import InodeTable
from recallfs.mount.paths import RESULTS_DIR
from recallfs.query.repairs import index_health

log = logging.getLogger("recallfs.mount")
T = TypeVar("T")
# Each distinct query leaves a run directory (its files' bytes, ~30 KB) that the kernel keeps cached, and
# the daemon with it, until memory pressure: 6,000 queries held 21,000 inodes and 190 MB. Past
# `recall_runs_held` runs held, the kernel is asked to drop the ones nothing uses, at most this often.
PRUNE_EVERY_S = 1.0
WRITER_RECHECK_S = 0.5  # a write given `refuse` asks it again this often while it waits for the writer


def _invalidate(listings: Iterable[int], stale: Iterable[tuple[int, str]]) -> None:
    """Blocking writes to /dev/fuse; the kernel handles each without a request to us."""
    for ino in listings:  # the cached listing (and attributes) of a directory
        try:
            pyfuse3.invalidate_inode(ino, attr_only=False)
        except OSError as exc:
            if exc.errno != errno.ENOENT:  # ENOENT: the kernel holds no such inode (nothing cached)
                log.warning("could not invalidate inode %d: %s", ino, exc)
    for parent, name in stale:
        try:
            pyfuse3.invalidate_entry(parent, os.fsencode(name))
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTDIR):  # ENOENT: the kernel had already dropped it
                log.warning("could not invalidate %s in inode %d: %s", name, parent, exc)


class Upkeep:
    def __init__(self, store: GuardedStore, browser: Browser, inodes: InodeTable, stats: Stats, *, run: Blocking,
                 semantic: Any, kernel: bool, recall_ttl: float, runs_held: int = 512) -> None:
        self.store = store
        self.browser = browser
        self.inodes = inodes
        self.stats = stats
        self.run = run
        self.semantic = semantic
        self.kernel = kernel  # False when driven directly (tests): no kernel to notify
        self.recall_ttl = recall_ttl
        self.write_limiter = trio.CapacityLimiter(1)
        self.notify_limiter = trio.CapacityLimiter(1)
        # Its own: a lookup handler waits for it, and an ingest's invalidate_entry (under notify_limiter)
        # can wait for that very lookup (the kernel holds the directory's lock while it asks).
        self.listing_limiter = trio.CapacityLimiter(1)
        self.write_lock = trio.Lock()
        self.semantic_ready = False
        self.degraded_reason: str | None = "off"
        self.last_change: datetime | None = None
        self.invalidations = 0
        self.runs_held = runs_held
        self.prunes = 0  # times the kernel was asked to drop the recall runs nothing uses
        self._pruned_at = -PRUNE_EVERY_S
        self.semantic_stuck_s = 0.0  # how long the model has been loading past its load timeout
        self.health_digest: tuple[str, ...] = ("ok",)  # the verdict index.md was last rendered with
        # (problem, note) of the daemon's helpers, by name: "inbox", the inbox's own process
        # (mount/inbox_process.py), where the daemon runs one; "vectors", the start-up embedding of rows
        # left without vectors (mount/vector_backlog.py)
        self.helpers: dict[str, Callable[[], tuple[str | None, str | None]]] = {}

    def token(self) -> tuple[Any, ...]:
        """What cached listings and recall results depend on, besides their own key."""
        return (self.store.generation, self.semantic_ready, self.degraded_reason, self.health_digest)

    def status(self) -> dict[str, Any]:
        return {"generation": self.store.generation, "semantic_ready": self.semantic_ready,
                "degraded_reason": self.degraded_reason, "recall_ttl_s": self.recall_ttl,
                "last_change": self.last_change, "health": self.verdict()}

    # -- store writes --------------------------------------------------------------------------------
    async def write_store(self, fn: Callable[[], T], *, also: Sequence[Upkeep] = (),
                          refuse: Callable[[], str | None] | None = None) -> T:
        """Run a store write in the writer thread, then invalidate what it changed (here and in the
        other views of the same mount, `also`). `refuse`: asked before the write and while it waits for
        the writer; a reason refuses it (StoreError) instead of waiting (a lake that hangs mid-replay
        holds the writer for as long as it hangs).

        Called from the control channel, never from a request handler, so kernel invalidation here
        cannot deadlock against the request that would have to finish first."""
        await self._take_writer(refuse)
        try:
            return await self._write_held(fn, also)
        finally:
            self.write_lock.release()

    async def _take_writer(self, refuse: Callable[[], str | None] | None) -> None:
        from recallfs.query.store import StoreError

        while True:
            why = refuse() if refuse is not None else None
            if why is not None:
                raise StoreError(f"{why}; nothing was written")
            with trio.move_on_after(WRITER_RECHECK_S if refuse is not None else math.inf):
                await self.write_lock.acquire()
                return

    async def _write_held(self, fn: Callable[[], T], also: Sequence[Upkeep]) -> T:
        before = await self.run(self.browser.state)
        generation = self.store.generation
        result: Any = None
        try:
            # An ingest is idempotent, so one that an invalidated database cut short is run again.
            result = await trio.to_thread.run_sync(self.store.consistent, fn, limiter=self.write_limiter)
            return result
        finally:
            # Also after a failure that came after the commit (a full disk at the index rebuild):
            # the rows are in, and the kernel must not keep serving the old names.
            if self.store.generation != generation:
                await self._invalidate_changes(before, getattr(result, "written_rids", {}), also)

    async def _invalidate_changes(self, before: Any, written: dict[str, Any], also: Sequence[Upkeep]) -> None:
        changed: set[int] = await self.run(self.browser.heads_changed_since, before)
        for rids in written.values():
            changed.update(rids)
        deps = await self.run(self.browser.deps_of, changed)
        if await self.run(self.browser.policies_changed_since, before):
            deps.add(EVERYTHING_DEP)  # any name of any view may now be hidden, or shown
        for view in (self, *also):
            view.last_change = datetime.now()
            await view.invalidate(deps)

    async def invalidate(self, deps: Iterable[Dep]) -> int:
        """Make the kernel drop the cached names that depend on `deps`, and return once it has.

        Never called from a request handler. The blocking `invalidate_entry` runs in its own thread
        while the trio loop goes on serving, so a request the kernel waits for can still finish; when
        this returns (and the ingest is answered) no stale name is left in the kernel's cache."""
        deps = set(deps)
        stale = self.inodes.take_stale(deps)
        listings = self.inodes.take_stale_listings(deps)
        if self.kernel and (stale or listings):
            await trio.to_thread.run_sync(_invalidate, listings, stale, limiter=self.notify_limiter)
        self.invalidations += len(stale) + len(listings)
        return len(stale) + len(listings)

    async def drop_listings(self, inodes: Sequence[int]) -> None:
        """Make the kernel drop what it cached of these directories (listing, attributes), and wait.

        Called from a lookup handler (a new recall run): unlike invalidate_entry, invalidate_inode takes
        no directory lock that a request in flight could hold and waits for no request. It must not
        queue behind an ingest's invalidate_entry either, which may be waiting for the lookup that
        waits here: hence its own limiter (tests/test_mount_cache.py, parallel readers)."""
        self.inodes.forget_listings(inodes)
        if self.kernel and inodes:
            await trio.to_thread.run_sync(_invalidate, list(inodes), [], limiter=self.listing_limiter)
        self.invalidations += len(inodes)

    def prune_runs(self) -> None:
        """Past `runs_held` recall run directories in the kernel's cache, ask it to drop recall/.results:
        it then lets go of every run below that no process uses (a cwd or an open file keeps its own), and
        forgets them here, which frees their bytes. Safe from a lookup handler: the call is queued to
        pyfuse3's notify thread, and it takes recall/'s lock, which no recall run holds (a lookup running
        a recall holds .results/'s), so it waits for no recall."""
        if self.inodes.runs_held <= self.runs_held or self.inodes.recall_ino is None:
            return
        now = time.monotonic()
        if now - self._pruned_at < PRUNE_EVERY_S:
            return
        self._pruned_at = now
        self.prunes += 1
        if self.kernel:
            pyfuse3.invalidate_entry_async(self.inodes.recall_ino, os.fsencode(RESULTS_DIR), ignore_enoent=True)

    # -- the semantic arm and health -----------------------------------------------------------------
    async def refresh_semantic(self) -> None:
        """Poll the semantic arm's state (in a thread: it may take the model's lock); on a change, the
        index and every recall directory are stale."""
        if self.semantic is None:
            ready, reason = False, "off"
        else:
            ready, reason = await self.run(self.semantic.availability)
            self.semantic_stuck_s = self.semantic.stuck_for_s()
        if (ready, reason) != (self.semantic_ready, self.degraded_reason):
            self.semantic_ready, self.degraded_reason = ready, reason
            await self.invalidate({INDEX_DEP, RECALL_DEP})

    def store_state(self) -> dict[str, Any]:
        return {**self.store.health.as_dict(), "broken": self.store.broken, "read_only": self.store.read_only,
                "stale": self.store.stale, "gone": self.store.file.problem()}

    def verdict(self) -> Verdict:
        """Whether this daemon can serve (mount/health.py)."""
        return verdict(store=self.store_state(), recent_errors=self.stats.recent.count(),
                       last_error=self.stats.last_unexpected, semantic_reason=self.degraded_reason,
                       semantic_stuck_s=self.semantic_stuck_s, repairs=index_health()["recent_index_repairs"],
                       inbox=self._helper("inbox"), vectors=self._helper("vectors"))

    def _helper(self, name: str) -> tuple[str | None, str | None]:
        state = self.helpers.get(name)
        return state() if state is not None else (None, None)

    async def refresh_health(self) -> None:
        """On a change of the verdict, index.md (which shows it) is stale."""
        digest = self.verdict().digest()
        if digest != self.health_digest:
            self.health_digest = digest
            await self.invalidate({INDEX_DEP})

    def query_embedding(self) -> str | None:
        """How this mount embeds a query now: "onnx float32", "traced float32", "traced bfloat16" or
        "stock float32" (query/query_encoder.py), with ", saved graph" where the graph was loaded from
        disk (query/query_graph.py: the model itself is not loaded for queries); None without a
        semantic arm."""
        embedder = getattr(self.semantic, "embedder", None)
        if embedder is None:
            return None
        saved = ", saved graph" if embedder.query_from_saved_graph else ""
        return f"{embedder.query_path} {embedder.query_dtype}{saved}"

    def health(self, caches: dict[str, Any]) -> dict[str, Any]:
        """The health report of one view, with its own counts: inodes and caches."""
        return {
            "health": self.verdict().as_dict(),
            "store": self.store_state(),
            **self.stats.as_dict(),
            "loop_thread_violations": self.store.violations,
            **caches,
            "invalidations": self.invalidations,
            "recall_runs_held": self.inodes.runs_held,
            "recall_run_prunes": self.prunes,
            "generation": self.store.generation,
            "degraded": not self.semantic_ready or self.store.stale is not None,
            "degraded_reason": "; ".join(r for r in (None if self.semantic_ready else self.degraded_reason,
                                                     self.store.stale) if r) or None,
            "query_embedding": self.query_embedding(),
            **index_health(),  # derived indexes this process found behind or damaged, and rebuilt
        }
