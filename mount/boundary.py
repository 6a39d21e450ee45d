"""The one error boundary every Operations method goes through, and the writes it refuses.

- `boundary`: domain errors become their errno, anything else is logged and becomes EIO. No request can
  end pyfuse3's main loop.
- `RefusesWrites`: every write handler of pyfuse3.Operations, defined once for the Operations classes
  here (MountOps, and the --map-uid router UidViews, which checks the caller first).
"""

from __future__ import annotations

import errno
import functools
import logging
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

import pyfuse3

from recallfs.mount.entries import NotADirectory, NotFound
from recallfs.mount.health import ErrorWindow
from recallfs.mount.names import NameTooLong

log = logging.getLogger("recallfs.mount")
P = ParamSpec("P")
T = TypeVar("T")


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

    def unexpected_error(self, op: str, exc: BaseException) -> None:
        """Count a failure no errno row explains (a bug, or DuckDB out of memory): the health verdict
        reads these, from file-system requests and control requests (an ingest, an inbox file) alike."""
        self.unexpected += 1
        self.last_unexpected = f"{op}: {type(exc).__name__}: {exc}"
        self.recent.add()

    def as_dict(self) -> dict[str, Any]:
        return {"requests": sum(self.requests.values()), "by_op": dict(self.requests),
                "errnos": dict(self.errnos), "unexpected_errors": self.unexpected,
                "last_unexpected_error": self.last_unexpected}


Handler = Callable[P, Coroutine[Any, Any, T]]  # pyfuse3's Operations methods are coroutine functions


def boundary(*, reply: bool = True) -> Callable[[Handler[P, T]], Handler[P, T]]:
    """The one error boundary every Operations method goes through.

    Domain errors map to their errno; FUSEError passes; anything else is logged and becomes EIO. A
    method without a reply (forget) swallows everything, since an exception there would reach
    pyfuse3's main loop."""

    def wrap(fn: Handler[P, T]) -> Handler[P, T]:
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
                    stats.unexpected_error(op, exc)
                    log.exception("unexpected error in %s; answered EIO", op)
                    number = errno.EIO
                if not reply:
                    return None  # type: ignore[return-value]
                stats.errnos[errno.errorcode[number]] += 1
                raise pyfuse3.FUSEError(number) from None

        return guarded

    return wrap


class RefusesWrites:
    """Every write is refused with EROFS. The mount is also mounted `ro`, so the kernel refuses most of
    them first. A subclass checks its caller in `_refuse` (ctx: the request's context).

    `mkdir recall/<q>` never gets here: the kernel answers EEXIST first, because every name under
    recall/ exists (a query) and Linux checks existence before write access (fs/namei.c,
    filename_create(): a positive lookup is -EEXIST before mnt_want_write()'s -EROFS is returned). A
    FUSE lookup is not told that a mkdir asks, so no answer of ours can change that; EEXIST is true, and
    it keeps `mkdir -p recall/<q>` working (tests/test_recall_dir.py)."""

    stats: Stats

    async def _refuse(self, ctx: Any) -> Any:
        raise ReadOnly()

    @boundary()
    async def setattr(self, inode: int, attr: Any, fields: Any, fh: Any, ctx: Any = None) -> Any:
        return await self._refuse(ctx)

    @boundary()
    async def mknod(self, parent_inode: int, name: bytes, mode: int, rdev: int, ctx: Any = None) -> Any:
        return await self._refuse(ctx)

    @boundary()
    async def mkdir(self, parent_inode: int, name: bytes, mode: int, ctx: Any = None) -> Any:
        return await self._refuse(ctx)

    @boundary()
    async def unlink(self, parent_inode: int, name: bytes, ctx: Any = None) -> None:
        await self._refuse(ctx)

    @boundary()
    async def rmdir(self, parent_inode: int, name: bytes, ctx: Any = None) -> None:
        await self._refuse(ctx)

    @boundary()
    async def symlink(self, parent_inode: int, name: bytes, target: bytes, ctx: Any = None) -> Any:
        return await self._refuse(ctx)

    @boundary()
    async def rename(self, parent_inode_old: int, name_old: bytes, parent_inode_new: int, name_new: bytes,
                     flags: int, ctx: Any = None) -> None:
        await self._refuse(ctx)

    @boundary()
    async def link(self, inode: int, new_parent_inode: int, new_name: bytes, ctx: Any = None) -> Any:
        return await self._refuse(ctx)

    @boundary()
    async def write(self, fh: int, off: int, buf: bytes) -> int:
        raise ReadOnly()  # no context, so no caller to check

    @boundary()
    async def create(self, parent_inode: int, name: bytes, mode: int, flags: int, ctx: Any = None) -> Any:
        return await self._refuse(ctx)

    @boundary()
    async def setxattr(self, inode: int, name: bytes, value: bytes, ctx: Any = None) -> None:
        await self._refuse(ctx)

    @boundary()
    async def removexattr(self, inode: int, name: bytes, ctx: Any = None) -> None:
        await self._refuse(ctx)
