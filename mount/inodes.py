"""Inodes: a node per (parent inode, name, content identity), with kernel lookup counts.

- A node's content never changes. Changed content (a new fact version, a longer transcript, a new
  recall run) is a different identity, so it gets a fresh inode number; numbers are never reused.
- The kernel holds a node for every successful lookup and every readdir entry it accepted; `forget`
  gives them back and a node with none left is dropped (structural directories stay pinned).
- `by_name` holds, per (parent, name), the node the kernel's binding of that name reaches (or the
  newest one made there): the same identity under that name finds it again. A node with `bound` set
  may be cached by the kernel under its name, so that an ingest can invalidate exactly the bindings
  whose meaning changed. (One dict and one key tuple per node: a walk of 100k memories holds ~360k.)
- Attributes are built on each request from the node's own fields, in `make_attr`, the one place that
  sets timeouts: a walk of 100k memories holds ~360k nodes, and a stored EntryAttributes per node was
  ~200 bytes of each node's ~760 (issue 13's peak RSS).
- `listed` remembers the directories whose listing the kernel may cache (it keeps listings: the daemon
  declines opendir, mount/serving.py) and what each listing depends on (`listing_deps`), so that an
  ingest can drop exactly the cached listings it changed.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyfuse3

from recallfs.mount.entries import EVERYTHING_DEP, INDEX_DEP, RECALL_DEP, Content, Dep, Deps, Entry, RecallSnapshot
from recallfs.mount.paths import KINDS, Kind

_UID, _GID = os.getuid(), os.getgid()
LONG_TIMEOUT = 3600.0  # seconds; immutable content, and bindings that ingest invalidates explicitly


@dataclass(slots=True, eq=False)
class Node:
    ino: int
    where: tuple[int, str]  # (parent inode, name): its key in InodeTable.by_name
    parts: tuple[str, ...]
    kind: Kind
    params: dict[str, Any]
    mtime: datetime | None = None  # the entry's; none: the mount's start
    content: Content | None = None
    target: bytes | None = None
    deps: Deps = ()
    lookups: int = 0
    pinned: bool = False
    snapshot: RecallSnapshot | None = None  # a recall directory's run
    listed: list[Entry] | None = None  # the listing the last readdir pass started with (mount/serving.py)
    touched_ns: int = 0  # a later mtime, given when the kernel is told to drop this directory's listing
    no_entry_cache: bool = False  # the kernel must look this name up again on every use
    bound: bool = False  # the kernel may cache (parent, name) -> this node, and the node has deps

    @property
    def parent(self) -> int:
        return self.where[0]

    @property
    def name(self) -> str:
        return self.where[1]

    @property
    def is_dir(self) -> bool:
        return self.content is None and self.target is None


def _ns(when: datetime | None, default_ns: int) -> int:
    if when is None:
        return default_ns
    return int(when.timestamp() * 1e9)


def make_attr(node: Node, recall_ttl: float, default_ns: int) -> pyfuse3.EntryAttributes:
    attr = pyfuse3.EntryAttributes()
    attr.st_ino = node.ino
    attr.generation = 0
    if node.content is not None:
        attr.st_mode = stat.S_IFREG | 0o444
        attr.st_size = node.content.size
    elif node.target is not None:
        attr.st_mode = stat.S_IFLNK | 0o777
        attr.st_size = len(node.target)
    else:
        attr.st_mode = stat.S_IFDIR | 0o555
        attr.st_size = 0
    # Directories say nlink 1 ("not counted"): find then makes no leaf-directory assumptions.
    attr.st_nlink = 1
    attr.st_uid = _UID
    attr.st_gid = _GID
    attr.st_blksize = 4096
    attr.st_blocks = (attr.st_size + 511) // 512
    ns = max(_ns(node.mtime, default_ns), node.touched_ns)
    attr.st_atime_ns = attr.st_mtime_ns = attr.st_ctime_ns = ns
    timeout = recall_ttl if KINDS[node.kind].recall else LONG_TIMEOUT
    # recall/.results/<q> names a new run (a new inode) after each write: rather than have an ingest tell
    # the kernel to drop each such name (invalidate_entry waits for the directory's lock, held by every
    # lookup that is running a recall there: 8 readers of distinct queries made a 20-row ingest take
    # 29 s instead of 1.3), the kernel asks again on every use, and the daemon answers from its run cache.
    attr.entry_timeout = 0 if node.kind is Kind.QUERY or node.no_entry_cache else timeout
    attr.attr_timeout = timeout
    return attr


# Directories listed by one value: their listing changes when a memory with that value changes.
_LISTED_BY: dict[Kind, str] = {Kind.KIND: "kind", Kind.TAG: "tag", Kind.SESSION: "session", Kind.TURNS: "session",
                               Kind.VERSIONS: "id"}
_NEVER_CHANGE = frozenset({Kind.QUERY, Kind.RESULTS})  # a recall run is fixed per inode; .results/ lists nothing


def listing_deps(kind: Kind, params: dict[str, Any]) -> Deps:
    """What a directory's listing depends on. The root and the top-level lists (facts/, sessions/,
    entities/, history/, by-kind/, by-tag/) change with any store change, which always carries INDEX_DEP
    (browse.deps_of); recall/ lists the recent queries, which a recall lookup changes too (MountOps)."""
    if kind in _NEVER_CHANGE:
        return ()
    if kind is Kind.RECALL:
        return (RECALL_DEP,)
    key = _LISTED_BY.get(kind)
    if key is not None:
        return ((key, str(params[key])),)
    return (INDEX_DEP,)


def same_identity(node: Node, entry: Entry) -> bool:
    """Whether `entry` is what `node` shows: the same content key (("row", table, rid, lineage) or
    ("blob", digest)), link target, or directory (a recall run's directory: the same run)."""
    if entry.content is not None:
        return node.content is not None and node.content.key == entry.content.key
    if entry.target is not None:
        return node.target == os.fsencode(entry.target)
    return node.is_dir and node.params.get("snapshot") == entry.params.get("snapshot")


# inbox/ in every view of a --map-uid mount: one number for all of them and for any caller (mount/views.py).
# The inbox's own file system is mounted over it, and the kernel detaches a mount whose dentry a lookup
# or listing answers with another node. (Views number their own inodes from 1 << VIEW_BITS on.)
SHARED_INBOX_INO = pyfuse3.ROOT_INODE + 1


class InodeTable:
    def __init__(self, recall_ttl: float, *, first_ino: int = pyfuse3.ROOT_INODE + 1,
                 shared_root: bool = False) -> None:
        self.recall_ttl = recall_ttl
        self.started_ns = time.time_ns()
        self.nodes: dict[int, Node] = {}
        self.by_name: dict[tuple[int, str], Node] = {}
        self.listed: dict[int, Deps] = {}  # directory inode -> what its cached listing depends on
        self.recall_ino: int | None = None  # recall/, once looked up: its listing changes with each new query
        self.runs_held = 0  # recall run directories (recall/.results/<q>) the kernel holds: Upkeep.prune_runs
        self._next = first_ino  # views of one mount (--map-uid) number their inodes in disjoint ranges
        # Several views share the root inode: the kernel's (root, name) dentries are shared by every
        # caller, so names below the root must be looked up again on every use (entry timeout 0) to
        # reach the caller's own view. Everything below them is reached only through its own view.
        self.shared_root = shared_root
        self.root = Node(pyfuse3.ROOT_INODE, (pyfuse3.ROOT_INODE, ""), (), Kind.ROOT, {}, pinned=True)
        self.nodes[self.root.ino] = self.root

    def get(self, ino: int) -> Node | None:
        return self.nodes.get(ino)

    def attr(self, node: Node) -> pyfuse3.EntryAttributes:
        return make_attr(node, self.recall_ttl, self.started_ns)

    def node_for(self, parent: Node, entry: Entry) -> Node:
        """The node for `entry` below `parent`: the existing one when its identity is unchanged."""
        where = (parent.ino, entry.name)
        held = self.by_name.get(where)
        if held is not None and same_identity(held, entry):
            return held
        if self.shared_root and entry.kind is Kind.INBOX:
            ino = SHARED_INBOX_INO
        else:
            ino = self._next
            self._next += 1
        node = Node(
            # only directories need their path (to resolve names below them)
            ino=ino, where=where, kind=entry.kind,
            parts=(*parent.parts, entry.name) if entry.is_dir else (),
            params=entry.params, mtime=entry.mtime, content=entry.content,
            target=os.fsencode(entry.target) if entry.target is not None else None,
            deps=entry.deps, pinned=KINDS[entry.kind].fixed,
            # Several views share the root inode: the kernel's (root, name) dentries are shared by every
            # caller, so names below the root must be looked up again to reach the caller's own view.
            no_entry_cache=self.shared_root and parent.ino == pyfuse3.ROOT_INODE,
        )
        if entry.kind is Kind.RECALL:
            self.recall_ino = ino
        elif entry.kind is Kind.QUERY:
            self.runs_held += 1
        self.nodes[ino] = node
        if held is None or not held.bound:
            self.by_name[where] = node  # else when the kernel binds the name to it (remember)
        return node

    def remember(self, node: Node) -> None:
        """The kernel now holds one more reference, under (parent, name). Bindings that no change can
        affect (a version in history/) are not tracked for invalidation."""
        node.lookups += 1
        held = self.by_name.get(node.where)
        if held is not node:
            if held is not None:
                held.bound = False  # the kernel's binding of the name reaches this node now
            self.by_name[node.where] = node
        node.bound = bool(node.deps)

    def bound_ino(self, parent: int, name: str) -> int | None:
        """The inode the kernel may have cached under (parent, name), if one with deps."""
        held = self.by_name.get((parent, name))
        return held.ino if held is not None and held.bound else None

    def discard_if_unused(self, node: Node) -> None:
        if node.lookups <= 0 and not node.pinned:
            self._drop(node)

    def forget(self, ino: int, count: int) -> None:
        node = self.nodes.get(ino)
        if node is None:
            return
        node.lookups -= count
        if node.lookups <= 0 and not node.pinned:
            self._drop(node)

    def _drop(self, node: Node) -> None:
        if self.nodes.pop(node.ino, None) is node and node.kind is Kind.QUERY:
            self.runs_held -= 1
        if self.by_name.get(node.where) is node:
            del self.by_name[node.where]
        self.listed.pop(node.ino, None)

    def take_stale(self, deps: Iterable[Dep]) -> list[tuple[int, str]]:
        """The cached bindings whose node depends on any of `deps`; they are forgotten here, and the
        caller tells the kernel to drop them."""
        wanted = set(deps)
        every = EVERYTHING_DEP in wanted
        stale: list[tuple[int, str]] = []
        for where, node in self.by_name.items():
            if not node.bound or node.kind is Kind.QUERY or node.no_entry_cache:
                continue  # not cached, or the kernel keeps no such name: it looks it up again on every use
            if every or not wanted.isdisjoint(node.deps):
                stale.append(where)
                node.bound = False
        return stale

    def served(self, node: Node) -> None:
        """The kernel may now cache this directory's listing (also one that never changes: a recall run's,
        dropped when the name shows another run)."""
        self.listed[node.ino] = listing_deps(node.kind, node.params)

    def take_stale_listings(self, deps: Iterable[Dep]) -> list[int]:
        """The directories whose cached listing depends on any of `deps`; forgotten here (the next
        readdir marks them again), and the caller tells the kernel to drop their listings."""
        wanted = set(deps)
        every = EVERYTHING_DEP in wanted
        stale = [ino for ino, needs in self.listed.items() if every or not wanted.isdisjoint(needs)]
        self.forget_listings(stale)
        return stale

    def forget_listings(self, inos: Iterable[int]) -> None:
        """These directories' cached listings are about to be dropped: each gets a new mtime. Dropping a
        listing drops its pages, and an empty listing has none, so the kernel would list a directory it
        saw empty (facts/ before the first ingest, by-tag/ before the first tag) as empty for good; at
        the next listing it compares the directory's mtime, asked again, with the one it cached under."""
        now = time.time_ns()
        for ino in inos:
            self.listed.pop(ino, None)
            node = self.nodes.get(ino)
            if node is not None:
                node.touched_ns = max(now, _ns(node.mtime, self.started_ns) + 1, node.touched_ns + 1)

    def __len__(self) -> int:
        return len(self.nodes)
