"""pyfuse3 Operations: thin async methods over the browser (which runs in worker threads).

Rules (developer-notes/concurrency.md):
- Every method goes through `boundary` (mount/boundary.py): domain errors become their errno, anything
  else is logged and becomes EIO. No request can end the main loop. Every write is refused there too.
- DuckDB, FAISS and the model are only reached through `_sync` (a worker thread, bounded by a
  CapacityLimiter). Inodes, caches and handles are touched only on the trio thread, so they need no locks.
- A directory's listing is taken at opendir and served from that snapshot with cookies = positions.
- Sizes are known before reads: files are rendered when they are looked up or listed.

One MountOps is one view (one principal). Its parts: the inode table (mount/inodes.py), listings and
content (mount/dir_cache.py), names below a directory (mount/children.py), recall directories
(mount/recall_dirs.py), and what changes outside requests (mount/upkeep.py).
"""

from __future__ import annotations

import errno
import functools
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
from recallfs.mount.upkeep import Upkeep

T = TypeVar("T")

VIEW_BITS = 40  # inode and handle numbers of view i lie in [i << VIEW_BITS, (i + 1) << VIEW_BITS)
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
    ) -> None:
        super().__init__()
        self.store = store
        self.browser = browser
        self.recall_ttl = float(recall_ttl)
        self.semantic = semantic
        # view_index > 0: one of several per-agent views of one mount (mount/views.py). Its inode and
        # handle numbers live in their own range, and the root's children are never cached by the kernel.
        self.view_index = view_index
        base = view_index << VIEW_BITS
        self.limiter = limiter or trio.CapacityLimiter(threads)
        self.stats = Stats()
        self.inodes = (InodeTable(self.recall_ttl, first_ino=base + 1, shared_root=True) if view_index
                       else InodeTable(self.recall_ttl))
        self.upkeep = Upkeep(store, browser, self.inodes, self.stats, run=self._sync, semantic=semantic,
                             kernel=kernel, recall_ttl=self.recall_ttl)
        self.recalls = RecallDirs(browser, run=self._sync, recall_ttl=self.recall_ttl)
        self.cache = Directories(browser, self.inodes, run=self._sync, token=self.upkeep.token,
                                 status=self.upkeep.status, recent_queries=self.recalls.queries)
        self.children = Children(browser, self.cache, self.recalls, run=self._sync, token=self.upkeep.token)
        self.dirs: dict[int, tuple[Node, list[Entry]]] = {}
        self.files: dict[int, bytes] = {}
        self._fh = base
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

    def _next_fh(self) -> int:
        self._fh += 1
        return self._fh

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
            node = self._materialize(parent, await self.children.child(parent, text, match))
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
        listing = await self.cache.listing(node)
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
        data = self.cache.content.get(content.key)
        if data is None:
            _, table, rid, lineage = content.key
            data = await self._sync(self.browser.row_bytes, table, rid, lineage)
            self.cache.content.put(content.key, data)
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

    # -- changes from outside the request path (control socket, semantic warm-up): mount/upkeep.py --
    async def write_store(self, fn: Callable[[], T], *, also: Sequence[MountOps] = ()) -> T:
        """Run a store write, then invalidate what it changed here and in the views `also`."""
        return await self.upkeep.write_store(fn, also=[view.upkeep for view in also])

    async def invalidate(self, deps: Iterable[Dep]) -> int:
        return await self.upkeep.invalidate(deps)

    async def refresh_semantic(self) -> None:
        await self.upkeep.refresh_semantic()

    async def refresh_health(self) -> None:
        await self.upkeep.refresh_health()

    def verdict(self) -> Verdict:
        return self.upkeep.verdict()

    def health(self) -> dict[str, Any]:
        content = self.cache.content
        return self.upkeep.health(
            {"inodes": len(self.inodes), "content_cache_bytes": content.weight, "content_cache_hits": content.hits,
             "content_cache_misses": content.misses, "listings_cached": len(self.cache.listings)},
            {"open_files": len(self.files), "open_dirs": len(self.dirs)})
