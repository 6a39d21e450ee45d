"""The control socket's file: bound with its mode set at bind, and bound again should the file go.

A cleaner or an `rm` that removes `<store>.sock` left a daemon that no `recallfs ingest` or `recall` could
reach: they took the store for unmounted and met its lock (a recall waited 120 s for it). The daemon holds
the store, so the name is its own: it looks once a second and binds the name again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path

import trio

log = logging.getLogger("recallfs.mount")
CHECK_S = 1.0  # how often the daemon looks whether its socket file is still there


async def serve_socket(path: Path, mode: int, handler: Callable[[trio.SocketStream], Awaitable[None]], *,
                       task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    sock = await _bind(path, mode)  # at start, a failure is the mount's (daemon.serve reports it)
    task_status.started()
    while True:
        bound = _inode(path)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.serve_listeners, handler, [trio.SocketListener(sock)])
            await _until_changed(path, bound)
            log.warning("the control socket %s was removed or replaced: binding it again", path)
            nursery.cancel_scope.cancel()
        sock.close()
        while True:
            try:
                sock = await _bind(path, mode, replace=True)
                break
            except OSError as exc:  # never fatal here: the mount serves on, and the next try may do
                log.error("could not bind the control socket %s again: %s", path, exc)
                await trio.sleep(CHECK_S)


async def _bind(path: Path, mode: int, *, replace: bool = False) -> trio.socket.SocketType:
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if replace:  # whatever took its place
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    # The mode is set at bind through the umask: a chmod afterwards would leave a window.
    old_umask = os.umask(0o777 & ~mode)
    try:
        await sock.bind(str(path))
    except OSError:
        sock.close()
        raise
    finally:
        os.umask(old_umask)
    sock.listen(32)
    return sock


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


async def _until_changed(path: Path, bound: int | None) -> None:
    """Returns once the file at `path` is gone or another one: a file system has no event for this that
    trio can wait on, so it is a stat once a second."""
    while _inode(path) == bound:  # noqa: ASYNC110
        await trio.sleep(CHECK_S)
