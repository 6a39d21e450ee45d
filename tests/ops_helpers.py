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
    fh = await ops.opendir(ino)
    names = [e.name for e in ops.dirs[fh][1]]
    await ops.releasedir(fh)
    return names


async def read_all(ops: MountOps, ino: int) -> bytes:
    fh = (await ops.open(ino, os.O_RDONLY)).fh
    chunks, off = [], 0
    while chunk := await ops.read(fh, off, 4096):
        chunks.append(chunk)
        off += len(chunk)
    await ops.release(fh)
    return b"".join(chunks)
