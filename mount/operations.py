"""pyfuse3 Operations: thin async methods over the browser (which runs in worker threads).

Rules (developer-notes/concurrency.md):
- Every method goes through `boundary` (mount/boundary.py): domain errors become their errno, anything
  else is logged and becomes EIO. No request can end the main loop. Every write is refused there too.
- DuckDB, FAISS and the model are only reached through `_sync` (a worker thread, bounded by a
  CapacityLimiter). Inodes, caches and handles are touched only on the trio thread, so they need no locks.
- No handles: `open` and `opendir` decline (ENOSYS), so the kernel caches pages and listings and names
  the inode in `read`/`readdir` (mount/serving.py). A --map-uid view keeps `opendir` (mount/views.py).
- Sizes are known before reads: files are rendered when they are looked up or listed.

One MountOps is one view (one principal). Its parts: the inode table (mount/inodes.py), listings and
content (mount/dir_cache.py), names below a directory (mount/children.py), recall directories
(mount/recall_dirs.py), and what changes outside requests (mount/upkeep.py).
"""

from __future__ import annotations

import errno
import functools
import gc
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import pyfuse3
import trio

from recallfs.mount.boundary import IsADirectory, ReadOnly, RefusesWrites, Stats, boundary
from recallfs.mount.browse import Browser
from recallfs.mount.children import Children
from recallfs.mount.concurrency import GuardedStore
from recallfs.mount.dir_cache import Directories
from recallfs.mount.entries import Dep, Entry, NotADirectory, NotFound
from recallfs.mount.health import Verdict
from recallfs.mount.inodes import LONG_TIMEOUT, InodeTable, Node
from recallfs.mount.paths import Kind, resolve
from recallfs.mount.recall_dirs import RecallDirs
from recallfs.mount.serving import Serving
from recallfs.mount.upkeep import Upkeep

T = TypeVar("T")

VIEW_BITS = 40  # inode numbers of view i lie in [i << VIEW_BITS, (i + 1) << VIEW_BITS)
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


class MountOps(RefusesWrites, pyfuse3.Operations):
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
        runs_held: int = 512,
    ) -> None:
        super().__init__()
        self.store = store
        self.browser = browser
        self.recall_ttl = float(recall_ttl)
        self.semantic = semantic
        # view_index > 0: one of several per-agent views of one mount (mount/views.py). Its inode and
        # handle numbers live in their own range, and the root's children are never cached by the kernel.
        self.view_index = view_index
        self.base = base = view_index << VIEW_BITS  # a view's handle for the shared root (never an inode)
        self.limiter = limiter or trio.CapacityLimiter(threads)
        self.stats = Stats()
        self.inodes = (InodeTable(self.recall_ttl, first_ino=base + 1, shared_root=True) if view_index
                       else InodeTable(self.recall_ttl))
        self.upkeep = Upkeep(store, browser, self.inodes, self.stats, run=self._sync, semantic=semantic,
                             kernel=kernel, recall_ttl=self.recall_ttl, runs_held=runs_held)
        self.recalls = RecallDirs(browser, run=self._sync, recall_ttl=self.recall_ttl)
        self.cache = Directories(browser, self.inodes, run=self._sync, token=self.upkeep.token,
                                 status=self.upkeep.status, recent_queries=self.recalls.queries)
        self.children = Children(browser, self.cache, self.recalls, run=self._sync, token=self.upkeep.token)
        self.serving = Serving(browser, self.inodes, self.cache, run=self._sync, token=self.upkeep.token)
        self._never = pyfuse3.EntryAttributes()  # st_ino 0: a negative entry the kernel may cache
        self._never.st_ino = 0
        self._never.entry_timeout = LONG_TIMEOUT

    # -- plumbing ----------------------------------------------------------------------------------
    async def _sync(self, fn: Callable[..., T], *args: Any) -> T:
        """Run blocking work (DuckDB, FAISS, the model) in a worker thread. Should DuckDB invalidate the
        database meanwhile, the store reopens it and the work runs once more (Store.consistent)."""
        work = functools.partial(fn, *args)
        return await trio.to_thread.run_sync(self.store.consistent, work, limiter=self.limiter)

    def _node(self, inode: int) -> Node:
        node = self.inodes.get(inode)
        if node is None:
            raise NotFound(inode)
        return node

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
            recent, made = self.recalls.version, self.recalls.runs_made
            node = self._materialize(parent, await self.children.child(parent, text, match))
            if (recent, made) != (self.recalls.version, self.recalls.runs_made):  # a new recall run
                await self._recall_changed(parent, text, node, listed=recent != self.recalls.version)
        self.inodes.remember(node)
        if node.kind is Kind.QUERY:
            self.upkeep.prune_runs()
        return self.inodes.attr(node)

    async def _recall_changed(self, parent: Node, name: str, node: Node, *, listed: bool) -> None:
        """The kernel drops the listing of the run this name showed before (it expired, or a change made it
        stale): nothing reaches that inode by this name any more; and its listing of recall/ when that
        lists another name now (`listed`). Only what the kernel was served a listing of, so a first
        `ls recall/<q>/` waits for no notification."""
        earlier = self.inodes.bound_ino(parent.ino, name)
        stale = {self.inodes.recall_ino if listed else None, earlier if earlier != node.ino else None}
        await self.upkeep.drop_listings([ino for ino in stale if ino is not None and ino in self.inodes.listed])

    @boundary(reply=False)
    async def forget(self, inode_list: Sequence[tuple[int, int]]) -> None:
        for inode, count in inode_list:
            self.inodes.forget(inode, count)

    @boundary()
    async def getattr(self, inode: int, ctx: Any = None) -> pyfuse3.EntryAttributes:
        return self.inodes.attr(self._node(inode))

    @boundary()
    async def readlink(self, inode: int, ctx: Any = None) -> bytes:
        node = self._node(inode)
        if node.target is None:
            raise pyfuse3.FUSEError(errno.EINVAL)
        return node.target

    @boundary()
    async def opendir(self, inode: int, ctx: Any = None) -> pyfuse3.FileInfo:
        node = self._node(inode)
        if not node.is_dir:
            raise NotADirectory(node.name)
        if not self.view_index:
            raise pyfuse3.FUSEError(errno.ENOSYS)  # no OPENDIR/RELEASEDIR from now on; readdir gets the inode
        # A --map-uid view (mount/views.py): the kernel caches the listings of its own directories, never
        # the shared root's (it lists per caller); the view's base number routes the root's readdir here.
        if node is self.inodes.root:
            return pyfuse3.FileInfo(fh=self.base, keep_cache=False, cache_readdir=False)
        return pyfuse3.FileInfo(fh=inode, keep_cache=True, cache_readdir=True)

    @boundary()
    async def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
        parent = self.inodes.root if fh == self.base and self.view_index else self._node(fh)
        entries = await self.serving.entries(parent, start_id)
        for position in range(start_id, len(entries)):
            entry = entries[position]
            node = self._materialize(parent, entry)
            if not pyfuse3.readdir_reply(token, os.fsencode(entry.name), self.inodes.attr(node), position + 1):
                self.inodes.discard_if_unused(node)
                return
            self.inodes.remember(node)  # readdirplus: each accepted entry is a lookup
        parent.listed = None  # the pass is done: the listing cache holds it, the node need not

    async def entries(self, inode: int) -> list[Entry]:
        """The names `readdir` lists for this directory (tests drive the view without a kernel)."""
        return await self.serving.entries(self._node(inode), 0)

    @boundary()
    async def releasedir(self, fh: int) -> None:
        pass  # only a --map-uid view keeps opendir, and it holds nothing per handle

    @boundary()
    async def open(self, inode: int, flags: int, ctx: Any = None) -> pyfuse3.FileInfo:
        if flags & WRITE_FLAGS:
            raise ReadOnly()  # the mount is `ro`: the kernel refuses these itself, before and after this
        self._node(inode)
        # No OPEN/RELEASE from now on: every file is kept in the page cache (its content never changes
        # under one inode) and `read` gets the inode.
        raise pyfuse3.FUSEError(errno.ENOSYS)

    @boundary()
    async def read(self, fh: int, off: int, size: int) -> bytes:
        node = self._node(fh)
        if node.content is None:
            raise IsADirectory(node.name)
        data = await self.serving.content(node)
        return data[off: off + size]

    @boundary()
    async def flush(self, fh: int) -> None:
        raise pyfuse3.FUSEError(errno.ENOSYS)  # nothing to flush; the kernel stops asking

    @boundary()
    async def release(self, fh: int) -> None:
        pass  # never sent once open declined

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

    # -- changes from outside the request path (control socket, semantic warm-up): mount/upkeep.py --
    async def write_store(self, fn: Callable[[], T], *, also: Sequence[MountOps] = (),
                          refuse: Callable[[], str | None] | None = None) -> T:
        """Run a store write, then invalidate what it changed here and in the views `also` (`refuse`:
        Upkeep.write_store)."""
        return await self.upkeep.write_store(fn, also=[view.upkeep for view in also], refuse=refuse)

    async def invalidate(self, deps: Iterable[Dep]) -> int:
        return await self.upkeep.invalidate(deps)

    async def refresh_semantic(self) -> None:
        await self.upkeep.refresh_semantic()

    async def refresh_health(self) -> None:
        await self.upkeep.refresh_health()

    def report(self, helper: str, state: Callable[[], tuple[str | None, str | None]]) -> None:
        """Where the health verdict reads a helper's (problem, note): "inbox" (mount/inbox_process.py),
        "vectors" (mount/vector_backlog.py)."""
        self.upkeep.helpers[helper] = state

    def verdict(self) -> Verdict:
        return self.upkeep.verdict()

    def health(self) -> dict[str, Any]:
        content = self.cache.content
        return self.upkeep.health(
            {"inodes": len(self.inodes), "content_cache_bytes": content.weight, "content_cache_hits": content.hits,
             "content_cache_misses": content.misses, "listings_cached": len(self.cache.listings),
             "listings_in_kernel": len(self.inodes.listed), "listing_batches_waited": self.cache.batches_waited,
             "listing_batches_ahead": self.cache.batches_ahead, "rows_rendered": self.cache.rows_rendered,
             "gc_collections": [generation["collections"] for generation in gc.get_stats()]})
