"""Driving MountOps in process (no kernel): path lookup, directory listing and whole-file reads, the way
the kernel would call the operations."""

from __future__ import annotations

import os

import pyfuse3

from recallfs.mount.operations import MountOps


async def lookup_path(ops: MountOps, path: str) -> int:
    ino = pyfuse3.ROOT_INODE
    for part in [p for p in path.split("/") if p]:
        ino = (await ops.lookup(ino, os.fsencode(part))).st_ino
    return ino


async def listing(ops: MountOps, ino: int) -> list[str]:
    """What readdir lists (no handle: the daemon declines opendir, and readdir gets the inode)."""
    return [e.name for e in await ops.entries(ino)]


async def read_all(ops: MountOps, ino: int) -> bytes:
    """Reads by inode, as the kernel sends them once open declined."""
    chunks, off = [], 0
    while chunk := await ops.read(ino, off, 4096):
        chunks.append(chunk)
        off += len(chunk)
    return b"".join(chunks)
