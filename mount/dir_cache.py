"""The listing and content caches of one view, and the sibling batches that fill them during a walk.

Trio thread only. A listing is computed in a worker thread (`run`), once for concurrent requests
(`SingleFlight`), and cached under (kind, params) with the token it was built for (Upkeep.token).

Read-ahead: a walk that reaches the middle sibling of a batch starts the next batch in the background
(a trio system task), so the store renders the next window while the walk lists this one, instead of
the walk stopping at every BATCH_WINDOW-th directory to wait for it (cold `find`, issue 13).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import trio

from recallfs.mount import recall_readme
from recallfs.mount.browse import Browser
from recallfs.mount.concurrency import Blocking, SingleFlight
from recallfs.mount.entries import NO_ROWS, ContentKey, Entry, Listing
from recallfs.mount.inodes import InodeTable, Node
from recallfs.mount.listings import Batch
from recallfs.mount.paths import BATCHES, KINDS, RESULTS_DIR, Kind
from recallfs.query.caches import LruCache

BATCH_WINDOW = 256  # sibling directories listed together when a walk opens the first of them
# Read-ahead batches double up to this: a content load of a few thousand scattered rows costs hardly
# more than one of 256 (one pass over the table's segments), so a long walk makes few of them.
READ_AHEAD_WINDOW = 4096
CONTENT_CACHE_BYTES = 256 << 20
LISTING_CACHE_ENTRIES = 1_000_000
ListingKey = tuple[Kind, tuple[tuple[str, Any], ...]]
Token = tuple[Any, ...]
log = logging.getLogger("recallfs.mount")


def freeze(params: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    if len(params) == 1:  # most directories (a walk makes one key per directory it lists)
        ((k, v),) = params.items()
        return ((k, v),) if isinstance(v, str | int) else ()
    return tuple(sorted((k, v) for k, v in params.items() if isinstance(v, str | int)))


def listing_key(kind: Kind, params: dict[str, Any]) -> ListingKey:
    return (kind, freeze(params))


def sibling_key(kind: Kind, name: str, value: Any) -> ListingKey:
    """listing_key(kind, {name: value}), without the dict (a window looks at thousands of siblings)."""
    return (kind, ((name, value),) if isinstance(value, str | int) else ())


class Directories:
    def __init__(self, browser: Browser, inodes: InodeTable, *, run: Blocking,
                 token: Callable[[], Token], status: Callable[[], dict[str, Any]],
                 recent_queries: Callable[[], Iterable[str]]) -> None:
        self.browser = browser
        self.inodes = inodes
        self.run = run
        self.token = token
        self.status = status
        self.recent_queries = recent_queries  # newest first: what recall/ lists
        self.content: LruCache[ContentKey, bytes] = LruCache(CONTENT_CACHE_BYTES, len)
        self.listings: LruCache[ListingKey, tuple[Token, Listing]] = LruCache(
            LISTING_CACHE_ENTRIES, lambda v: len(v[1].entries) + 1)
        self.flights = SingleFlight()
        self._batching: dict[ListingKey, trio.Event] = {}  # listings a sibling batch is building now
        self._triggers: dict[ListingKey, int] = {}  # a batch's middle sibling -> the next batch's size
        self.batches_waited = 0  # batches a request had to wait for (each one stalls a walk)
        self.batches_ahead = 0  # batches built ahead of a walk
        self.rows_rendered = 0  # memory versions rendered by listings and lookups (each once a generation)

    def install_rows(self, rows: Mapping[ContentKey, bytes]) -> None:
        self.rows_rendered += len(rows)
        for key, data in rows.items():
            self.content.put(key, data)

    def cached(self, node: Node) -> Listing | None:
        if node.kind is Kind.QUERY:
            assert node.snapshot is not None  # set when the node was made (MountOps._materialize)
            return Listing(node.snapshot.entries, unlisted=node.snapshot.earlier)
        if node.kind is Kind.RECALL:
            links = [Entry(q, Kind.QUERY_LINK, target=f"{RESULTS_DIR}/{q}") for q in self.recent_queries()
                     if q != recall_readme.NAME]  # that name is the file (its query is reached as .results/README.md)
            return Listing([recall_readme.entry(), *links])
        if node.kind is Kind.RESULTS:
            return Listing([])  # hidden: reached through the links in recall/
        cached = self.listings.get(listing_key(node.kind, node.params))
        if cached is not None and cached[0] == self.token():
            return cached[1]
        return None

    def _install(self, key: ListingKey, token: Token, listing: Listing) -> None:
        self.install_rows(listing.rows)
        listing.rows = NO_ROWS  # the content cache holds them now; the listing cache must not pin them
        self.listings.put(key, (token, listing))

    async def listing(self, node: Node) -> Listing:
        key = listing_key(node.kind, node.params)
        pending = self._batching.get(key)
        if pending is not None:  # a batch for siblings is building this one too: wait for it
            await pending.wait()
        cached = self.cached(node)
        if cached is not None:
            size = self._triggers.pop(key, 0)
            if size:  # a walk is half-way through a batch: build the next one meanwhile
                trio.lowlevel.spawn_system_task(self._read_ahead, node, size)
            return cached
        token = self.token()

        async def compute() -> Listing:
            if KINDS[node.kind].batch_key is not None:
                return await self._batch(node, key, token)
            listing: Listing = await self.run(self.browser.listing, node.kind, node.params, self.status())
            self._install(key, token, listing)
            return listing

        return await self.flights.run(("list", key, token), compute)

    async def _batch(self, node: Node, key: ListingKey, token: Token) -> Listing:
        field_name = KINDS[node.kind].batch_key
        assert field_name is not None
        values = await self._window(node, field_name, BATCH_WINDOW)
        self.batches_waited += 1
        batch = await self._build(node.kind, field_name, values, token)
        return next(listing for kind, params, listing in batch if listing_key(kind, params) == key)

    async def _read_ahead(self, node: Node, size: int) -> None:
        """The next batch of this node's siblings (a system task: an error is logged, never raised, as
        it would end the daemon; a request that needs a listing it failed to build builds it itself)."""
        field_name = KINDS[node.kind].batch_key
        assert field_name is not None
        try:
            token = self.token()
            values = (await self._window(node, field_name, size))[1:]  # its own listing is built already
            if values:
                self.batches_ahead += 1
                await self._build(node.kind, field_name, values, token)
        except Exception:
            log.exception("read-ahead of %s failed", node.name)

    async def _build(self, kind: Kind, field_name: str, values: list[str], token: Token) -> Batch:
        keys = [listing_key(k, {field_name: v}) for v in values for k in BATCHES[field_name]]
        done = trio.Event()
        for k in keys:
            self._batching.setdefault(k, done)
        try:
            batch = await self.run(self.browser.batch, kind, values)
            for listed_kind, params, listing in batch:
                self._install(listing_key(listed_kind, params), token, listing)
        finally:
            for k in keys:
                if self._batching.get(k) is done:
                    del self._batching[k]
            done.set()
        if len(values) > 1:  # the sibling a walk lists half-way through this batch, either way it goes
            walked = Kind.SESSION if kind is Kind.TURNS else kind
            middle = listing_key(walked, {field_name: values[len(values) // 2]})
            self._triggers[middle] = min(READ_AHEAD_WINDOW, 2 * len(values))
        return batch

    async def _window(self, node: Node, field_name: str, size: int) -> list[str]:
        """This directory's key and those of the siblings a walk will open next (history/<id>/ after
        history/<id>/, sessions/<s>/ after sessions/<s>/), so that one content load lists them all.

        Walks go forward (find, grep -r) or backward (rg's parallel walker pops the last directory
        first), so the window takes the unlisted siblings after this one, then those before it."""
        own = str(node.params[field_name])
        anchor = node if node.kind is not Kind.TURNS else self.inodes.get(node.parent)
        holder = self.inodes.get(anchor.parent) if anchor is not None else None
        listing = None
        if holder is not None:
            # history/ and sessions/ list names only (no content), so they are cheap to build here
            listing = self.cached(holder) or await self.listing(holder)
        position = listing.position(anchor.name) if listing is not None and anchor is not None else None
        if listing is None or position is None:
            return [own]
        kind = Kind.SESSION if node.kind is Kind.TURNS else node.kind
        token = self.token()
        values = [own]
        entries = listing.entries
        after = entries[position + 1: position + 1 + size]
        before = entries[max(0, position - size): position][::-1]
        for entry in after + before:
            if len(values) > size:
                break
            value = entry.params.get(field_name)
            if value is None:
                continue
            sibling = sibling_key(kind, field_name, value)
            if sibling in self._batching:
                continue  # another batch is already building it
            cached = self.listings.peek(sibling)
            if cached is None or cached[0] != token:
                values.append(str(value))
        return values
