"""A tiny read-only pyfuse3 file system (not recallfs) that counts the handlers the kernel calls.

It exists to test and measure the pyfuse3 patch (patches/pyfuse3-*-no-open.patch) on its own: a
tree of `dirs` directories with `files` files each, served in one of three modes:
  classic   open/opendir return handles (what stock pyfuse3 supports; the kernel sends OPEN,
            OPENDIR, RELEASE, RELEASEDIR on every walk)
  cachedir  as classic, but opendir returns a FileInfo with cache_readdir (needs the patch)
  noopen    open/opendir raise ENOSYS: the kernel stops sending them and caches files and
            listings; read/readdir then get the inode as fh (needs the patch)
The file system runs in a forked process; the parent reads the counters from shared memory.
"""

from __future__ import annotations

import errno
import multiprocessing
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyfuse3
import trio

MODES = ("classic", "cachedir", "noopen")
OPS = ("lookup", "getattr", "open", "opendir", "read", "readdir", "release", "releasedir", "flush",
       "bad_fh")
TIMEOUT = 3600.0  # entries and attributes never change: let the kernel keep them


@dataclass(frozen=True)
class Tree:
    dirs: int
    files: int

    def dir_inode(self, d: int) -> int:
        return 2 + d * (self.files + 1)

    def file_inode(self, d: int, f: int) -> int:
        return self.dir_inode(d) + 1 + f

    def locate(self, inode: int) -> tuple[int, int] | None:
        """(dir, file) for an inode; file is -1 for a directory; None for the root or unknown."""
        if inode < 2 or inode >= self.dir_inode(self.dirs):
            return None
        d, rest = divmod(inode - 2, self.files + 1)
        return d, rest - 1

    def content(self, d: int, f: int) -> bytes:
        needle = " needle" if f == 0 else ""
        return f"dir {d} file {f}{needle}\n".encode()

    def dir_name(self, d: int) -> str:
        return f"d{d:05d}"

    def file_name(self, f: int) -> str:
        return f"f{f}.txt"

    def write_native(self, root: Path) -> None:
        """The same tree as plain files, to compare against."""
        for d in range(self.dirs):
            (root / self.dir_name(d)).mkdir(parents=True, exist_ok=True)
            for f in range(self.files):
                (root / self.dir_name(d) / self.file_name(f)).write_bytes(self.content(d, f))


class TinyFS(pyfuse3.Operations):
    def __init__(self, tree: Tree, mode: str, counts: Any) -> None:
        super().__init__()
        self.tree = tree
        self.mode = mode
        self._counts = counts
        self._root: list[tuple[bytes, int]] | None = None  # built once: a large root is read per buffer

    def count(self, op: str) -> None:
        self._counts[OPS.index(op)] += 1

    def _attr(self, inode: int) -> Any:
        where = self.tree.locate(inode)
        attr = pyfuse3.EntryAttributes()
        attr.st_ino = inode
        is_dir = inode == pyfuse3.ROOT_INODE or (where is not None and where[1] < 0)
        attr.st_mode = (stat.S_IFDIR | 0o755) if is_dir else (stat.S_IFREG | 0o644)
        attr.st_nlink = 2 if is_dir else 1
        attr.st_size = 0 if is_dir or where is None else len(self.tree.content(*where))
        attr.st_mtime_ns = attr.st_ctime_ns = attr.st_atime_ns = 1_700_000_000 * 10**9
        attr.entry_timeout = attr.attr_timeout = TIMEOUT
        return attr

    def _children(self, inode: int) -> list[tuple[bytes, int]]:
        tree = self.tree
        if inode == pyfuse3.ROOT_INODE:
            if self._root is None:
                self._root = [(tree.dir_name(d).encode(), tree.dir_inode(d)) for d in range(tree.dirs)]
            return self._root
        where = tree.locate(inode)
        if where is None or where[1] >= 0:
            self.count("bad_fh")
            raise pyfuse3.FUSEError(errno.EBADF)
        return [(tree.file_name(f).encode(), tree.file_inode(where[0], f)) for f in range(tree.files)]

    async def lookup(self, parent: int, name: bytes, ctx: Any = None) -> Any:
        self.count("lookup")
        for child, inode in self._children(parent):
            if child == name:
                return self._attr(inode)
        # a negative entry the kernel caches: rg asks every directory for .gitignore, .ignore...
        missing = pyfuse3.EntryAttributes()
        missing.st_ino = 0
        missing.entry_timeout = TIMEOUT
        return missing

    async def getattr(self, inode: int, ctx: Any = None) -> Any:
        self.count("getattr")
        return self._attr(inode)

    async def open(self, inode: int, flags: int, ctx: Any) -> Any:
        self.count("open")
        if self.mode == "noopen":
            raise pyfuse3.FUSEError(errno.ENOSYS)
        return pyfuse3.FileInfo(fh=inode, keep_cache=True)

    async def opendir(self, inode: int, ctx: Any) -> Any:
        self.count("opendir")
        if self.mode == "noopen":
            raise pyfuse3.FUSEError(errno.ENOSYS)
        if self.mode == "cachedir":
            return pyfuse3.FileInfo(fh=inode, keep_cache=True, cache_readdir=True)
        return inode

    async def read(self, fh: int, off: int, size: int) -> bytes:
        self.count("read")
        where = self.tree.locate(fh)
        if where is None or where[1] < 0:
            self.count("bad_fh")  # stock pyfuse3 passes fh=0 once open declined
            raise pyfuse3.FUSEError(errno.EBADF)
        return self.tree.content(*where)[off:off + size]

    async def readdir(self, fh: int, start_id: int, token: Any) -> None:
        self.count("readdir")
        children = self._children(fh)
        for i in range(start_id, len(children)):
            name, inode = children[i]
            if not pyfuse3.readdir_reply(token, name, self._attr(inode), i + 1):
                return

    async def release(self, fh: int) -> None:
        self.count("release")

    async def releasedir(self, fh: int) -> None:
        self.count("releasedir")

    async def flush(self, fh: int) -> None:
        self.count("flush")
        raise pyfuse3.FUSEError(errno.ENOSYS)

    async def forget(self, inode_list: Any) -> None:
        return None


def _serve(tree: Tree, mode: str, counts: Any, mountpoint: str) -> None:
    options = set(pyfuse3.default_options)
    options.add("fsname=tinyfs")
    options.discard("default_permissions")
    pyfuse3.init(TinyFS(tree, mode, counts), mountpoint, options)
    try:
        trio.run(pyfuse3.main)
    finally:
        pyfuse3.close(unmount=False)


class Mounted:
    """A running tinyfs: its path and the counters of handler calls."""

    def __init__(self, path: Path, counts: Any) -> None:
        self.path = path
        self._counts = counts

    def counts(self) -> dict[str, int]:
        return {op: int(self._counts[i]) for i, op in enumerate(OPS)}

    def reset(self) -> None:
        for i in range(len(OPS)):
            self._counts[i] = 0


def _wait_mounted(path: Path, child: Any) -> None:
    # A mount shows as a change of device; the child dying means it failed.
    parent_dev = os.stat(path.parent).st_dev
    while os.stat(path).st_dev == parent_dev:
        if not child.is_alive():
            raise RuntimeError(f"tinyfs did not mount (exit code {child.exitcode})")
        child.join(0.05)


@contextmanager
def mounted(tree: Tree, mode: str, path: Path) -> Iterator[Mounted]:
    """Mount tinyfs at `path` in a forked process; unmount and reap it on exit."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    ctx = multiprocessing.get_context("fork")
    counts = ctx.Array("q", len(OPS), lock=False)
    path.mkdir(parents=True, exist_ok=True)
    child = ctx.Process(target=_serve, args=(tree, mode, counts, str(path)), daemon=True)
    child.start()
    try:
        _wait_mounted(path, child)
        yield Mounted(path, counts)
    finally:
        fusermount = shutil.which("fusermount3") or "fusermount3"
        subprocess.run([fusermount, "-u", "-z", str(path)], capture_output=True, timeout=60)
        child.join(30)
        if child.is_alive():
            child.kill()
            child.join(10)


def patched() -> bool:
    """Whether the installed pyfuse3 carries the no-open patch (FileInfo has cache_readdir)."""
    return hasattr(pyfuse3.FileInfo(), "cache_readdir")
