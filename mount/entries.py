"""What the browser hands to the trio thread: entries, listings, recall snapshots, and the lookup outcomes.

Plain data, no store access (and no DuckDB import): the worker threads build these, the trio thread
turns them into inodes (mount/inodes.py) and caches (mount/operations.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import MappingProxyType
from typing import Any

from recallfs.mount.paths import Kind
from recallfs.query.labels import label

Dep = tuple[str, str]  # an invalidation tag: ("id", id), ("session", s), ("entity", e), ("kind", k), ...
# An entry's tags, as a tuple: a walk of 100k memories makes ~300k entries, and a one-tag frozenset is
# 216 bytes where a tuple is 48 (issue 13's peak RSS).
Deps = tuple[Dep, ...]
ContentKey = tuple[Any, ...]
INDEX_DEP: Dep = ("index", "")
RECALL_DEP: Dep = ("recall", "")
# Every name and listing: what a reader may read changed (a policy a lake replayed while mounted).
EVERYTHING_DEP: Dep = ("*", "")


class NotFound(LookupError):
    """No such name here (or the principal may not see it): ENOENT."""


class NotADirectory(LookupError):
    """A lookup or listing below a file: ENOTDIR."""


class NeedsListing(Exception):
    """This name cannot be resolved on its own: build the directory's listing and look there."""


@dataclass(frozen=True, slots=True)
class Content:
    """A file's bytes are identified by `key`: ('row', table, rid) can be re-rendered from the store;
    ('blob', sha1) cannot, so the node that holds it keeps the bytes."""

    key: ContentKey
    size: int
    data: bytes | None = None


_NO_PARAMS: dict[str, Any] = {}  # shared by every file entry (hundreds of thousands): never written


@dataclass(frozen=True, slots=True, eq=False)
class Entry:
    name: str
    kind: Kind
    params: dict[str, Any] = field(default_factory=lambda: _NO_PARAMS)  # what a directory lists by
    content: Content | None = None  # files
    target: str | None = None  # symlinks
    mtime: datetime | None = None
    deps: Deps = ()

    @property
    def is_dir(self) -> bool:
        return self.content is None and self.target is None


# A cached listing holds neither (a walk of 100k memories caches ~100k listings): shared, never written.
NO_ROWS: Mapping[ContentKey, bytes] = MappingProxyType({})


@dataclass(slots=True)
class Listing:
    entries: list[Entry]
    # re-renderable bytes for the content cache
    rows: Mapping[ContentKey, bytes] = field(default_factory=lambda: NO_ROWS)
    truncated: tuple[int, int] | None = None  # (shown, total)
    unlisted: Sequence[Entry] = ()  # found by name, not listed (see RecallSnapshot)
    _positions: dict[str, int] | None = None

    def position(self, name: str) -> int | None:
        if self._positions is None:  # built once; listings are never changed after they are made
            self._positions = {e.name: i for i, e in enumerate(self.entries)}
        return self._positions.get(name)

    def find(self, name: str) -> Entry | None:
        """The entry of `name`; a name typed in another Unicode form (decomposed "café") finds the entry
        listed in NFC, under the name it was asked by (its own dentry, invalidated by that name)."""
        found = self._exact(name)
        if found is None and not name.isascii() and (listed := label(name)) != name:
            alias = self._exact(listed)
            return replace(alias, name=name) if alias is not None else None
        return found

    def _exact(self, name: str) -> Entry | None:
        i = self.position(name)
        if i is not None:
            return self.entries[i]
        return next((e for e in self.unlisted if e.name == name), None)


@dataclass(slots=True)
class RecallSnapshot:
    """One run of recall for one directory name: the files it shows, fixed for its inode's life.

    `earlier`: the hit files of the runs it replaced that it does not show (recall_dirs.still_open). They
    are not listed, but their names still open (with the bytes they had): `ls recall/q/` then
    `cat recall/q/03-...md` works even when runs expired in between and the newest one ranks differently."""

    query: str
    entries: list[Entry]
    degraded: bool
    degraded_reason: str | None
    hits: int
    earlier: list[Entry] = field(default_factory=list)


def blob(data: bytes) -> Content:
    return Content(("blob", hashlib.sha1(data).hexdigest()), len(data), data)


def directory(name: str, kind: Kind, deps: Iterable[Dep] = (), params: dict[str, Any] | None = None) -> Entry:
    return Entry(name=name, kind=kind, params=params or {}, deps=tuple(deps))
