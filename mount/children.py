"""The entry one name below a directory names: from the grammar alone, a cached listing, one direct
lookup in the catalog, or the directory's listing. Trio thread only."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from recallfs.mount import recall_readme
from recallfs.mount.browse import Browser
from recallfs.mount.concurrency import Blocking
from recallfs.mount.dir_cache import Directories
from recallfs.mount.entries import Entry, NeedsListing, NotFound
from recallfs.mount.inodes import Node
from recallfs.mount.paths import KINDS, RESULTS_DIR, Kind, Match
from recallfs.mount.recall_dirs import RecallDirs

DIRECT_BEFORE_LISTING = 8  # single-name lookups in one directory before it is listed whole instead


class Children:
    def __init__(self, browser: Browser, dirs: Directories, recalls: RecallDirs, *,
                 run: Blocking, token: Callable[[], tuple[Any, ...]]) -> None:
        self.browser = browser
        self.dirs = dirs
        self.recalls = recalls
        self.run = run
        self.token = token
        self._direct_lookups: Counter[int] = Counter()  # per directory inode

    async def child(self, parent: Node, name: str, match: Match) -> Entry:
        """`name` below `parent`, which the grammar resolved to `match` (a kind and the route's params)."""
        if KINDS[match.kind].fixed:  # facts/, sessions/, facts/by-kind/, recall/.results/ ...: no store query
            return Entry(name, match.kind)
        if parent.kind is Kind.RECALL:
            if match.kind is Kind.RECALL_README:
                return recall_readme.entry()
            if match.kind is not Kind.QUERY_LINK:
                raise NotFound(name)
            return Entry(name, Kind.QUERY_LINK, target=f"{RESULTS_DIR}/{name}")
        if parent.kind is Kind.RESULTS:
            return await self.recalls.entry(name, str(match.params["query"]), self.token())
        return await self._stored(parent, name, match)

    async def _stored(self, parent: Node, name: str, match: Match) -> Entry:
        """A name the store answers: from the cached listing, one lookup, or the listing built now."""
        cached = self.dirs.cached(parent)
        if cached is not None:
            entry = cached.find(name)
            if entry is not None:
                return entry
            if cached.truncated is None:
                raise NotFound(name)
        # Not listed yet, or listed only in part (max_rows): one query answers one name. Once a
        # directory has had a few of those, a walk is going through it: list it once instead.
        direct = self._direct_lookups.get(parent.ino, 0)
        if cached is None and direct >= DIRECT_BEFORE_LISTING:
            cached = await self.dirs.listing(parent)
            entry = cached.find(name)
            if entry is not None:
                return entry
        if KINDS[match.kind].direct:
            self._direct_lookups[parent.ino] = direct + 1
            try:
                found, rows = await self.run(self.browser.lookup, parent.kind, parent.params, name, match)
            except NeedsListing:
                pass
            else:
                self.dirs.install_rows(rows)
                return found
        listing = cached if cached is not None else await self.dirs.listing(parent)
        entry = listing.find(name)
        if entry is None:
            raise NotFound(name)
        return entry
