"""Recall directories of one view: one recall run per name, shared while fresh, and the recent queries
that recall/ lists. Trio thread only; recall itself runs in a worker thread (`run`)."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import trio

from recallfs.mount.browse import Browser
from recallfs.mount.concurrency import Blocking, SingleFlight
from recallfs.mount.entries import RECALL_DEP, Entry, RecallSnapshot
from recallfs.mount.paths import Kind
from recallfs.query.caches import LruCache

RECENT_QUERIES = 50  # how many recent queries recall/ lists
RECALL_RUNS = 256  # recall runs kept (by directory name)
# Hit names of earlier runs that still open under a directory's newest run. One run back was not enough:
# with the kernel caching listings, `ls` can show a run two ingests old (16 readers and an ingest a
# second did it: tests/test_mount_cache.py).
EARLIER_KEPT = 512


def still_open(earlier: list[Entry], shown: set[str]) -> list[Entry]:
    """The earlier runs' hits a new run does not show, newest run first, one per name, at most EARLIER_KEPT."""
    seen = set(shown)
    out: list[Entry] = []
    for entry in earlier:
        if entry.name not in seen:
            seen.add(entry.name)
            out.append(entry)
            if len(out) == EARLIER_KEPT:
                break
    return out


@dataclass(slots=True)
class _Run:
    sid: int
    snapshot: RecallSnapshot
    token: tuple[Any, ...]
    born: float


class RecallDirs:
    def __init__(self, browser: Browser, *, run: Blocking, recall_ttl: float) -> None:
        self.browser = browser
        self.run = run
        self.recall_ttl = recall_ttl
        self.runs: LruCache[str, _Run] = LruCache(RECALL_RUNS)
        self.recent: OrderedDict[str, None] = OrderedDict()
        self.flights = SingleFlight()
        self._sid = 0
        self.version = 0  # changes with what recall/ lists: a name added or dropped
        self.runs_made = 0  # changes with every new run: the kernel may drop the old run's caches
        self._first: dict[str, int] = {}  # name -> when it joined the list, which orders the listing

    def queries(self) -> list[str]:
        """The recent directory names, newest to the list first. Using a listed name again keeps it (the
        least recently used goes first when the list is full) without moving it: a walk that follows the
        links (`tar -ch`, `find -L`) re-runs them, and recall/ changing under it was "file changed as we
        read it" (found 2026-12-07)."""
        return sorted(self.recent, key=self._first.__getitem__, reverse=True)

    async def entry(self, name: str, query: str, token: tuple[Any, ...]) -> Entry:
        """recall/.results/<name>/: the run for `token` that is younger than recall_ttl, or a new one."""
        now = trio.current_time()
        cached = self.runs.get(name)
        if cached is None or cached.token != token or now - cached.born >= self.recall_ttl:

            earlier = [*cached.snapshot.entries, *cached.snapshot.earlier] if cached is not None else []

            async def compute() -> _Run:
                snapshot = await self.run(self.browser.recall, query)
                snapshot.earlier = still_open(earlier, {e.name for e in snapshot.entries})
                self._sid += 1
                run = _Run(self._sid, snapshot, token, trio.current_time())
                self.runs.put(name, run)
                self.runs_made += 1
                return run

            cached = await self.flights.run(("recall", name, token), compute)
        if name in self.recent:
            self.recent.move_to_end(name)
        else:
            self.recent[name] = None
            self._first[name] = self.version  # grows by one per name added: the order names joined
            while len(self.recent) > RECENT_QUERIES:
                del self._first[self.recent.popitem(last=False)[0]]
            self.version += 1
        return Entry(name, Kind.QUERY, {"snapshot": cached.sid, "query": query, "result": cached.snapshot},
                     deps=(RECALL_DEP,))
