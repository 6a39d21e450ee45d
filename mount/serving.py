"""Serving without handles: listings and content by inode (issue 13).

The daemon declines `open` and `opendir` (ENOSYS), so the kernel sends no OPEN, OPENDIR, RELEASE or
RELEASEDIR for the connection and names the file or directory by its inode in `read` and `readdir`
(patches/pyfuse3-3.5.0-no-open.patch, developer-notes/pyfuse3-patch.md). The kernel then keeps pages
and listings until the daemon invalidates them (mount/upkeep.py). So nothing here is keyed by a handle:

- a listing is rebuilt from the node, in its stable (sorted) order, cookie = position; the listing a
  pass started with (offset 0) is kept on the node for the rest of that pass, so a listing longer than
  one reply buffer is served whole from one generation;
- a file's bytes come from the content cache by the node's content key (rendered again if evicted).
Trio thread only; the store is reached through `run` (a worker thread).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from recallfs.mount.browse import Browser
from recallfs.mount.concurrency import Blocking
from recallfs.mount.dir_cache import Directories
from recallfs.mount.entries import Entry, NotADirectory
from recallfs.mount.inodes import InodeTable, Node

RETRIES = 3  # listings rebuilt when a store change lands while one is being built


class Serving:
    def __init__(self, browser: Browser, inodes: InodeTable, cache: Directories, *, run: Blocking,
                 token: Callable[[], tuple[Any, ...]]) -> None:
        self.browser = browser
        self.inodes = inodes
        self.cache = cache
        self.run = run
        self.token = token

    async def entries(self, node: Node, start: int) -> list[Entry]:
        """What `readdir(node, start)` lists. A listing the kernel caches must be the current one: one
        built for a generation that an ingest replaced meanwhile could land in the kernel's cache after
        the ingest's invalidation, so it is built again."""
        if not node.is_dir:
            raise NotADirectory(node.name)
        if start > 0 and node.listed is not None:
            return node.listed
        for _ in range(RETRIES):
            token = self.token()
            listing = await self.cache.listing(node)
            if self.token() == token:
                break
        node.listed = listing.entries
        self.inodes.served(node)
        return listing.entries

    async def content(self, node: Node) -> bytes:
        content = node.content
        assert content is not None
        if content.data is not None:
            return content.data
        data = self.cache.content.get(content.key)
        if data is None:
            _, table, rid, lineage = content.key
            data = await self.run(self.browser.row_bytes, table, rid, lineage)
            self.cache.content.put(content.key, data)
        if len(data) != content.size:
            raise RuntimeError(f"{node.name}: rendered {len(data)} bytes, announced {content.size}")
        return data
