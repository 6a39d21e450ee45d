"""pyfuse3 Operations: thin async methods over the browser (which runs in worker threads).

Rules (developer-notes/concurrency.md):
- Every method goes through `boundary`: domain errors become their errno, anything else is logged and
  becomes EIO. No request can end the main loop.
- DuckDB, FAISS and the model are only reached through `_sync` (a worker thread, bounded by a
  CapacityLimiter). Inodes, caches and handles are touched only on the trio thread, so they need no locks.
- A directory's listing is taken at opendir and served from that snapshot with cookies = positions.
- Sizes are known before reads: files are rendered when they are looked up or listed.
"""

from __future__ import annotations

import errno
import functools
import logging
import os
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ParamSpec, TypeVar

import pyfuse3
import trio

from recallfs.mount.browse import Browser
from recallfs.mount.concurrency import GuardedStore, SingleFlight
from recallfs.mount.entries import (
    INDEX_DEP,
    RECALL_DEP,
    ContentKey,
    Dep,
    Entry,
    Listing,
    NeedsListing,
    NotADirectory,
    NotFound,
    RecallSnapshot,
)
from recallfs.mount.health import ErrorWindow, Verdict, verdict
from recallfs.mount.inodes import LONG_TIMEOUT, InodeTable, Node
from recallfs.mount.names import NameTooLong
from recallfs.mount.paths import BATCHES, KINDS, RESULTS_DIR, Kind, Match, resolve
from recallfs.query.caches import LruCache
from recallfs.query.repairs import index_health

log = logging.getLogger("recallfs.mount")
P = ParamSpec("P")
T = TypeVar("T")

RECENT_QUERIES = 50  # how many recent queries recall/ lists
BATCH_WINDOW = 256  # sibling directories listed together when a walk opens the first of them
DIRECT_BEFORE_LISTING = 8  # single-name lookups in one directory before it is listed whole instead
VIEW_BITS = 40  # inode and handle numbers of view i lie in [i << VIEW_BITS, (i + 1) << VIEW_BITS)
CONTENT_CACHE_BYTES = 256 << 20
LISTING_CACHE_ENTRIES = 1_000_000
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


class ReadOnly(Exception):
    """Every write: EROFS (the mount is read-only until an issue asks for writes)."""


class IsADirectory(Exception):
    """Opening a directory as a file: EISDIR."""


ERRNOS: tuple[tuple[type[BaseException], int], ...] = (
    (NotFound, errno.ENOENT),
    (NotADirectory, errno.ENOTDIR),
    (NameTooLong, errno.ENAMETOOLONG),
    (ReadOnly, errno.EROFS),
    (IsADirectory, errno.EISDIR),
    (PermissionError, errno.EACCES),
)


def errno_for(exc: BaseException) -> int | None:
    for cls, number in ERRNOS:
        if isinstance(exc, cls):
            return number
    return None


@dataclass(slots=True)
class Stats:
    requests: Counter[str] = field(default_factory=Counter)
    errnos: Counter[str] = field(default_factory=Counter)
    unexpected: int = 0
    last_unexpected: str | None = None
    recent: ErrorWindow = field(default_factory=ErrorWindow)  # unexpected errors, for the health verdict

    def as_dict(self) -> dict[str, Any]:
        return {"requests": sum(self.requests.values()), "by_op": dict(self.requests),
                "errnos": dict(self.errnos), "unexpected_errors": self.unexpected,
                "last_unexpected_error": self.last_unexpected}


def boundary(*, reply: bool = True) -> Callable[[Callable[P, Awaitable[T]]], Callable[P, Awaitable[T]]]:
    """The one error boundary every Operations method goes through.

    Domain errors map to their errno; FUSEError passes; anything else is logged and becomes EIO. A
    method without a reply (forget) swallows everything, since an exception there would reach
    pyfuse3's main loop."""

    def wrap(fn: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
        op = fn.__name__

        @functools.wraps(fn)
        async def guarded(*args: P.args, **kwargs: P.kwargs) -> T:
            stats: Stats = args[0].stats  # type: ignore[attr-defined]
            stats.requests[op] += 1
            try:
                return await fn(*args, **kwargs)
            except pyfuse3.FUSEError as exc:
                if not reply:
                    return None  # type: ignore[return-value]
                stats.errnos[errno.errorcode.get(exc.errno, str(exc.errno))] += 1
                raise
            except Exception as exc:
                number = errno_for(exc)
                if number is None:
                    stats.unexpected += 1
                    stats.last_unexpected = f"{op}: {type(exc).__name__}: {exc}"
                    stats.recent.add()
                    log.exception("unexpected error in %s; answered EIO", op)
                    number = errno.EIO
                if not reply:
                    return None  # type: ignore[return-value]
                stats.errnos[errno.errorcode[number]] += 1
                raise pyfuse3.FUSEError(number) from None

        return guarded

    return wrap


def _invalidate_entries(stale: Iterable[tuple[int, str]]) -> None:
    for parent, name in stale:
        try:
            pyfuse3.invalidate_entry(parent, os.fsencode(name))
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTDIR):  # ENOENT: the kernel had already dropped it
                log.warning("could not invalidate %s in inode %d: %s", name, parent, exc)


def _freeze(params: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((k, v) for k, v in params.items() if isinstance(v, str | int)))


@dataclass(slots=True)
class _Recall:
    sid: int
    snapshot: RecallSnapshot
    token: tuple[Any, ...]
    born: float


class MountOps(pyfuse3.Operations):
    supports_dot_lookup = False
    enable_writeback_cache = False
    enable_acl = False

    def __init__(
        self,
        store: GuardedStore,
        browser: Browser,
        *,
        recall_ttl: float = 5.0,
        threads: int = 4,
        semantic: Any = None,
        kernel: bool = True,
        view_index: int = 0,
        limiter: trio.CapacityLimiter | None = None,
    ) -> None:
        super().__init__()
        self.store = store
        self.browser = browser
        self.recall_ttl = float(recall_ttl)
        self.semantic = semantic
        self.kernel = kernel  # False when driven directly (tests): no kernel to notify
        # view_index > 0: one of several per-agent views of one mount (mount/views.py). Its inode and
        # handle numbers live in their own range, and the root's children are never cached by the kernel.
        self.view_index = view_index
        base = view_index << VIEW_BITS
        self.limiter = limiter or trio.CapacityLimiter(threads)
        self.write_limiter = trio.CapacityLimiter(1)
        self.notify_limiter = trio.CapacityLimiter(1)
        self.write_lock = trio.Lock()
        self.stats = Stats()
        self.inodes = (InodeTable(self.recall_ttl, first_ino=base + 1, shared_root=True) if view_index
                       else InodeTable(self.recall_ttl))
        self.content: LruCache[ContentKey, bytes] = LruCache(CONTENT_CACHE_BYTES, len)
        self.listings: LruCache[Any, tuple[tuple[Any, ...], Listing]] = LruCache(
            LISTING_CACHE_ENTRIES, lambda v: len(v[1].entries) + 1)
        self.flights = SingleFlight()
        self._batching: dict[Any, trio.Event] = {}  # listings a sibling batch is building now
        self._direct_lookups: Counter[int] = Counter()  # per directory inode
        self.recalls: LruCache[str, _Recall] = LruCache(256)
        self.recent: OrderedDict[str, None] = OrderedDict()
        self.dirs: dict[int, tuple[Node, list[Entry]]] = {}
        self.files: dict[int, bytes] = {}
        self._fh = base
        self._sid = 0
        self.semantic_ready = False
        self.degraded_reason: str | None = "off"
        self.last_change: datetime | None = None
        self.invalidations = 0
        self.semantic_stuck_s = 0.0  # how long the model has been loading past its load timeout
        self.health_digest: tuple[str, ...] = ("ok",)  # the verdict index.md was last rendered with
        self._never = pyfuse3.EntryAttributes()  # st_ino 0: a negative entry the kernel may cache
        self._never.st_ino = 0
        self._never.entry_timeout = LONG_TIMEOUT

    # -- plumbing ----------------------------------------------------------------------------------
    async def _sync(self, fn: Callable[..., T], *args: Any) -> T:
        """Run blocking work (DuckDB, FAISS, the model) in a worker thread. Should DuckDB invalidate the
        database meanwhile, the store reopens it and the work runs once more (Store.consistent)."""
        work = functools.partial(fn, *args)
        return await trio.to_thread.run_sync(self.store.consistent, work, limiter=self.limiter)

    def _token(self) -> tuple[Any, ...]:
        """What cached listings and recall results depend on, besides their own key."""
        return (self.store.generation, self.semantic_ready, self.degraded_reason, self.health_digest)

    def _status(self) -> dict[str, Any]:
        return {"generation": self.store.generation, "semantic_ready": self.semantic_ready,
                "degraded_reason": self.degraded_reason, "recall_ttl_s": self.recall_ttl,
                "last_change": self.last_change, "health": self.verdict()}

    def _node(self, inode: int) -> Node:
        node = self.inodes.get(inode)
        if node is None:
            raise NotFound(inode)
        return node

    def _next_fh(self) -> int:
        self._fh += 1
        return self._fh

    def _install_rows(self, rows: dict[ContentKey, bytes]) -> None:
        for key, data in rows.items():
            self.content.put(key, data)

    # -- listings ----------------------------------------------------------------------------------
    def _cached_listing(self, node: Node) -> Listing | None:
        if node.kind is Kind.QUERY:
            assert node.snapshot is not None  # set when the node was made (_materialize)
            return Listing(node.snapshot.entries)
        if node.kind is Kind.RECALL:
            return Listing([Entry(q, Kind.QUERY_LINK, target=f"{RESULTS_DIR}/{q}") for q in reversed(self.recent)])
        if node.kind is Kind.RESULTS:
            return Listing([])  # hidden: reached through the links in recall/
        cached = self.listings.get((node.kind, _freeze(node.params)))
        if cached is not None and cached[0] == self._token():
            return cached[1]
        return None

    def _install_listing(self, key: Any, token: tuple[Any, ...], listing: Listing) -> None:
        self._install_rows(listing.rows)
        listing.rows = {}  # the content cache holds them now; the listing cache must not pin them
        self.listings.put(key, (token, listing))

    async def _listing(self, node: Node) -> Listing:
        key = (node.kind, _freeze(node.params))
        pending = self._batching.get(key)
        if pending is not None:  # a batch for siblings is building this one too: wait for it
            await pending.wait()
        cached = self._cached_listing(node)
        if cached is not None:
            return cached
        token = self._token()

        async def compute() -> Listing:
            if KINDS[node.kind].batch_key is not None:
                return await self._batch(node, key, token)
            listing = await self._sync(self.browser.listing, node.kind, node.params, self._status())
            self._install_listing(key, token, listing)
            return listing

        return await self.flights.run(("list", key, token), compute)

    async def _batch(self, node: Node, key: Any, token: tuple[Any, ...]) -> Listing:
        field_name = KINDS[node.kind].batch_key
        assert field_name is not None
        values = await self._window(node, field_name)
        keys = [(k, _freeze({field_name: v})) for v in values for k in BATCHES[field_name]]
        done = trio.Event()
        for k in keys:
            self._batching.setdefault(k, done)
        try:
            batch = await self._sync(self.browser.batch, node.kind, values)
            for kind, params, listing in batch:
                self._install_listing((kind, _freeze(params)), token, listing)
        finally:
            for k in keys:
                if self._batching.get(k) is done:
                    del self._batching[k]
            done.set()
        return next(listing for kind, params, listing in batch if kind is node.kind and _freeze(params) == key[1])

    async def _window(self, node: Node, field_name: str) -> list[str]:
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
            listing = self._cached_listing(holder) or await self._listing(holder)
        position = listing.position(anchor.name) if listing is not None and anchor is not None else None
        if listing is None or position is None:
            return [own]
        kind = Kind.SESSION if node.kind is Kind.TURNS else node.kind
        token = self._token()
        values = [own]
        entries = listing.entries
        after = entries[position + 1: position + 1 + BATCH_WINDOW]
        before = entries[max(0, position - BATCH_WINDOW): position][::-1]
        for entry in after + before:
            if len(values) > BATCH_WINDOW:
                break
            value = entry.params.get(field_name)
            if value is None:
                continue
            sibling = (kind, _freeze({field_name: value}))
            if sibling in self._batching:
                continue  # another batch is already building it
            cached = self.listings.get(sibling)
            if cached is None or cached[0] != token:
                values.append(str(value))
        return values

    # -- names -------------------------------------------------------------------------------------
    async def _child(self, parent: Node, name: str, match: Match) -> Entry:
        if KINDS[match.kind].fixed:  # facts/, sessions/, facts/by-kind/, recall/.results/ ...: no store query
            return Entry(name, match.kind)
        if parent.kind is Kind.RECALL:
            if match.kind is not Kind.QUERY_LINK:
                raise NotFound(name)
            return Entry(name, Kind.QUERY_LINK, target=f"{RESULTS_DIR}/{name}")
        if parent.kind is Kind.RESULTS:
            return await self._recall_entry(name, str(match.params["query"]))
        cached = self._cached_listing(parent)
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
            cached = await self._listing(parent)
            entry = cached.find(name)
            if entry is not None:
                return entry
        if KINDS[match.kind].direct:
            self._direct_lookups[parent.ino] = direct + 1
            try:
                entry, rows = await self._sync(self.browser.lookup, parent.kind, parent.params, name, match)
            except NeedsListing:
                pass
            else:
                self._install_rows(rows)
                return entry
        listing = cached if cached is not None else await self._listing(parent)
        entry = listing.find(name)
        if entry is None:
            raise NotFound(name)
        return entry

    async def _recall_entry(self, name: str, query: str) -> Entry:
        token = self._token()
        now = trio.current_time()
        cached = self.recalls.get(name)
        if cached is None or cached.token != token or now - cached.born >= self.recall_ttl:

            async def compute() -> _Recall:
                snapshot = await self._sync(self.browser.recall, query)
                self._sid += 1
                run = _Recall(self._sid, snapshot, token, trio.current_time())
                self.recalls.put(name, run)
                return run

            cached = await self.flights.run(("recall", name, token), compute)
        self.recent.pop(name, None)
        self.recent[name] = None
        while len(self.recent) > RECENT_QUERIES:
            self.recent.popitem(last=False)
        return Entry(name, Kind.QUERY, {"snapshot": cached.sid, "query": query, "result": cached.snapshot},
                     deps=frozenset({RECALL_DEP}))

    def _materialize(self, parent: Node, entry: Entry) -> Node:
        node = self.inodes.node_for(parent, entry)
        if node.kind is Kind.QUERY and node.snapshot is None:
            node.snapshot = entry.params["result"]
        return node

    # -- Operations --------------------------------------------------------------------------------
    @boundary()
    async def lookup(self, parent_inode: int, name: bytes, ctx: Any = None) -> pyfuse3.EntryAttributes:
        parent = self._node(parent_inode)
        if not parent.is_dir:
            raise NotADirectory(parent.name)
        text = os.fsdecode(name)
        if text in (".", ".."):
            node = parent if text == "." else self._node(parent.parent)
        else:
            match = resolve((*parent.parts, text))
            if match is None:
                # No ingest can ever create this name (.git, .gitignore, .rgignore probes from every
                # tool): let the kernel cache the answer instead of asking again for each directory.
                return self._never
            node = self._materialize(parent, await self._child(parent, text, match))
        self.inodes.remember(node)
        return node.attr

    @boundary(reply=False)
    async def forget(self, inode_list: Sequence[tuple[int, int]]) -> None:
        for inode, count in inode_list:
            self.inodes.forget(inode, count)

    @boundary()
    async def getattr(self, inode: int, ctx: Any = None) -> pyfuse3.EntryAttributes:
        return self._node(inode).attr

    @boundary()
    async def readlink(self, inode: int, ctx: Any = None) -> bytes:
        node = self._node(inode)
        if node.target is None:
            raise pyfuse3.FUSEError(errno.EINVAL)
        return node.target

    @boundary()
    async def opendir(self, inode: int, ctx: Any = None) -> int:
        node = self._node(inode)
        if not node.is_dir:
            raise NotADirectory(node.name)
        listing = await self._listing(node)
        fh = self._next_fh()
        self.dirs[fh] = (node, listing.entries)
        return fh

    @boundary()
    async def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
        handle = self.dirs.get(fh)
        if handle is None:
            raise pyfuse3.FUSEError(errno.EBADF)
        parent, entries = handle
        for position in range(start_id, len(entries)):
            entry = entries[position]
            node = self._materialize(parent, entry)
            if not pyfuse3.readdir_reply(token, os.fsencode(entry.name), node.attr, position + 1):
                self.inodes.discard_if_unused(node)
                break
            self.inodes.remember(node)  # readdirplus: each accepted entry is a lookup

    @boundary()
    async def releasedir(self, fh: int) -> None:
        self.dirs.pop(fh, None)

    @boundary()
    async def open(self, inode: int, flags: int, ctx: Any = None) -> pyfuse3.FileInfo:
        if flags & WRITE_FLAGS:
            raise ReadOnly()
        node = self._node(inode)
        if node.content is None:
            raise IsADirectory(node.name)
        data = await self._bytes(node)
        fh = self._next_fh()
        self.files[fh] = data
        # Content never changes under one inode, so the kernel may keep its page cache across opens.
        return pyfuse3.FileInfo(fh=fh, keep_cache=True)

    async def _bytes(self, node: Node) -> bytes:
        content = node.content
        assert content is not None
        if content.data is not None:
            return content.data
        data = self.content.get(content.key)
        if data is None:
            _, table, rid = content.key
            data = await self._sync(self.browser.row_bytes, table, rid)
            self.content.put(content.key, data)
        if len(data) != content.size:
            raise RuntimeError(f"{node.name}: rendered {len(data)} bytes, announced {content.size}")
        return data

    @boundary()
    async def read(self, fh: int, off: int, size: int) -> bytes:
        data = self.files.get(fh)
        if data is None:
            raise pyfuse3.FUSEError(errno.EBADF)
        return data[off: off + size]

    @boundary()
    async def flush(self, fh: int) -> None:
        raise pyfuse3.FUSEError(errno.ENOSYS)  # nothing to flush; the kernel stops asking

    @boundary()
    async def release(self, fh: int) -> None:
        self.files.pop(fh, None)

    @boundary()
    async def statfs(self, ctx: Any = None) -> pyfuse3.StatvfsData:
        data = pyfuse3.StatvfsData()
        data.f_bsize = data.f_frsize = 4096
        data.f_blocks = data.f_bfree = data.f_bavail = 0
        data.f_files = len(self.inodes)
        data.f_ffree = data.f_favail = 0
        data.f_namemax = 255
        return data

    @boundary()
    async def access(self, inode: int, mode: int, ctx: Any = None) -> bool:
        self._node(inode)
        return not mode & os.W_OK

    @boundary()
    async def getxattr(self, inode: int, name: bytes, ctx: Any = None) -> bytes:
        raise pyfuse3.FUSEError(errno.ENOSYS)  # no xattrs; the kernel stops asking

    @boundary()
    async def listxattr(self, inode: int, ctx: Any = None) -> list[bytes]:
        raise pyfuse3.FUSEError(errno.ENOSYS)

    # Every write is refused. The mount is also mounted `ro`, so the kernel refuses most of them first.
    @boundary()
    async def setattr(self, inode: int, attr: Any, fields: Any, fh: Any, ctx: Any = None) -> Any:
        raise ReadOnly()

    @boundary()
    async def mknod(self, parent_inode: int, name: bytes, mode: int, rdev: int, ctx: Any = None) -> Any:
        raise ReadOnly()

    @boundary()
    async def mkdir(self, parent_inode: int, name: bytes, mode: int, ctx: Any = None) -> Any:
        raise ReadOnly()

    @boundary()
    async def unlink(self, parent_inode: int, name: bytes, ctx: Any = None) -> None:
        raise ReadOnly()

    @boundary()
    async def rmdir(self, parent_inode: int, name: bytes, ctx: Any = None) -> None:
        raise ReadOnly()

    @boundary()
    async def symlink(self, parent_inode: int, name: bytes, target: bytes, ctx: Any = None) -> Any:
        raise ReadOnly()

    @boundary()
    async def rename(self, parent_inode_old: int, name_old: bytes, parent_inode_new: int, name_new: bytes,
                     flags: int, ctx: Any = None) -> None:
        raise ReadOnly()

    @boundary()
    async def link(self, inode: int, new_parent_inode: int, new_name: bytes, ctx: Any = None) -> Any:
        raise ReadOnly()

    @boundary()
    async def write(self, fh: int, off: int, buf: bytes) -> int:
        raise ReadOnly()

    @boundary()
    async def create(self, parent_inode: int, name: bytes, mode: int, flags: int, ctx: Any = None) -> Any:
        raise ReadOnly()

    @boundary()
    async def setxattr(self, inode: int, name: bytes, value: bytes, ctx: Any = None) -> None:
        raise ReadOnly()

    @boundary()
    async def removexattr(self, inode: int, name: bytes, ctx: Any = None) -> None:
        raise ReadOnly()

    # -- changes from outside the request path (control socket, semantic warm-up) ------------------
    async def write_store(self, fn: Callable[[], T], *, also: Sequence[MountOps] = ()) -> T:
        """Run a store write in the writer thread, then invalidate what it changed (here and in the
        other views of the same mount, `also`).

        Called from the control channel, never from a request handler, so kernel invalidation here
        cannot deadlock against the request that would have to finish first."""
        async with self.write_lock:
            before = await self._sync(self.browser.heads)
            generation = self.store.generation
            result: Any = None
            try:
                # An ingest is idempotent, so one that an invalidated database cut short is run again.
                result = await trio.to_thread.run_sync(self.store.consistent, fn, limiter=self.write_limiter)
                return result  # type: ignore[no-any-return]
            finally:
                # Also after a failure that came after the commit (a full disk at the index rebuild):
                # the rows are in, and the kernel must not keep serving the old names.
                if self.store.generation != generation:
                    await self._invalidate_changes(before, getattr(result, "written_rids", {}), also)

    async def _invalidate_changes(self, before: set[int], written: dict[str, Any], also: Sequence[MountOps]) -> None:
        after = await self._sync(self.browser.heads)
        changed: set[int] = before ^ after
        for rids in written.values():
            changed.update(rids)
        deps = await self._sync(self.browser.deps_of, changed)
        for view in (self, *also):
            view.last_change = datetime.now()
            await view.invalidate(deps)

    async def invalidate(self, deps: Iterable[Dep]) -> int:
        """Make the kernel drop the cached names that depend on `deps`, and return once it has.

        Never called from a request handler. The blocking `invalidate_entry` runs in its own thread
        while the trio loop goes on serving, so a request the kernel waits for can still finish; when
        this returns (and the ingest is answered) no stale name is left in the kernel's cache."""
        stale = self.inodes.take_stale(deps)
        if self.kernel and stale:
            await trio.to_thread.run_sync(_invalidate_entries, stale, limiter=self.notify_limiter)
        self.invalidations += len(stale)
        return len(stale)

    async def refresh_semantic(self) -> None:
        """Poll the semantic arm's state (in a thread: it may take the model's lock); on a change, the
        index and every recall directory are stale."""
        if self.semantic is None:
            ready, reason = False, "off"
        else:
            ready, reason = await self._sync(self.semantic.availability)
            self.semantic_stuck_s = self.semantic.stuck_for_s()
        if (ready, reason) != (self.semantic_ready, self.degraded_reason):
            self.semantic_ready, self.degraded_reason = ready, reason
            await self.invalidate({INDEX_DEP, RECALL_DEP})

    def _store_state(self) -> dict[str, Any]:
        return {**self.store.health.as_dict(), "broken": self.store.broken, "read_only": self.store.read_only}

    def verdict(self) -> Verdict:
        """Whether this daemon can serve (mount/health.py)."""
        return verdict(store=self._store_state(), recent_errors=self.stats.recent.count(),
                       last_error=self.stats.last_unexpected, semantic_reason=self.degraded_reason,
                       semantic_stuck_s=self.semantic_stuck_s, repairs=index_health()["recent_index_repairs"])

    async def refresh_health(self) -> None:
        """On a change of the verdict, index.md (which shows it) is stale."""
        digest = self.verdict().digest()
        if digest != self.health_digest:
            self.health_digest = digest
            await self.invalidate({INDEX_DEP})

    def health(self) -> dict[str, Any]:
        return {
            "health": self.verdict().as_dict(),
            "store": self._store_state(),
            **self.stats.as_dict(),
            "loop_thread_violations": self.store.violations,
            "inodes": len(self.inodes),
            "content_cache_bytes": self.content.weight,
            "content_cache_hits": self.content.hits,
            "content_cache_misses": self.content.misses,
            "listings_cached": len(self.listings),
            "invalidations": self.invalidations,
            "generation": self.store.generation,
            "degraded": not self.semantic_ready,
            "degraded_reason": None if self.semantic_ready else self.degraded_reason,
            "open_files": len(self.files),
            "open_dirs": len(self.dirs),
            **index_health(),  # derived indexes this process found behind or damaged, and rebuilt
        }
