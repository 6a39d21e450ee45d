"""One mount, several agents: `recallfs mount --map-uid UID=AGENT ...`.

The kernel tells us who asks (the uid in each request's context); the uid picks a principal (the
mount's org and workspace, the mapped agent), and the request is served by that agent's own view: a
`MountOps` with its own browser, inode table, listing and content caches and recall snapshots. Nothing
is shared between views except the store, the semantic arm and the worker threads, so no cached
listing, size or recall result of one agent can answer another.

- Inode and handle numbers of view i lie in [i << VIEW_BITS, (i + 1) << VIEW_BITS). A request for an
  inode outside the caller's range (only possible through the root's shared dentries) is ENOENT.
- The root inode is shared (the kernel fixes it); its children are never cached by the kernel (entry
  timeout 0), so every path walk asks again as its caller and lands in the caller's view.
- A uid not in the map gets EACCES for everything, at the root and below.
- Requests without a context (read, readdir, forget) carry an inode number (or, for the root's readdir,
  the view's base number as its handle), which names its view.
- Kernel caches (developer-notes/pyfuse3-patch.md): `open` declines (ENOSYS), so no OPEN/RELEASE is sent
  and pages are kept; safe, since every file inode belongs to one view. `opendir` stays: the kernel's
  no-opendir would cache the shared root's listing for every caller, and an unmapped uid would list it
  without asking. Each view's own directories are opened with `cache_readdir` (their inodes are its
  own); the root is opened without, so its listing is asked for (and checked) on every opendir.
"""

from __future__ import annotations

import errno
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import pyfuse3
import trio

from recallfs.mount.boundary import ReadOnly, RefusesWrites, Stats, boundary
from recallfs.mount.health import Verdict
from recallfs.mount.inodes import SHARED_INBOX_INO
from recallfs.mount.operations import VIEW_BITS, MountOps

INBOX_NAME = b"inbox"

log = logging.getLogger("recallfs.mount")
T = TypeVar("T")
SUMMED = ("requests", "unexpected_errors", "loop_thread_violations", "inodes", "content_cache_bytes",
          "listings_cached", "listings_in_kernel", "invalidations", "recall_runs_held", "recall_run_prunes")
COUNTED = ("by_op", "errnos")


def parse_uid_map(items: Sequence[str]) -> dict[int, str]:
    """`UID=AGENT` (or `USER=AGENT`, resolved through the password database) -> {uid: agent}."""
    import pwd

    from recallfs.scope.principal import check_name

    out: dict[int, str] = {}
    for item in items:
        who, sep, agent = item.partition("=")
        if not sep or not who or not agent:
            raise ValueError(f"bad --map-uid {item!r}: expected UID=AGENT")
        if who.isdigit():
            uid = int(who)
        else:
            try:
                uid = pwd.getpwnam(who).pw_uid
            except KeyError:
                raise ValueError(f"bad --map-uid {item!r}: no user {who!r}") from None
        if uid in out and out[uid] != agent:
            raise ValueError(f"--map-uid maps uid {uid} twice ({out[uid]}, {agent})")
        out[uid] = check_name("agent", agent)
    return out


class UidViews(RefusesWrites, pyfuse3.Operations):
    supports_dot_lookup = False
    enable_writeback_cache = False
    enable_acl = False

    def __init__(self, by_uid: dict[int, MountOps]) -> None:
        super().__init__()
        self.by_uid = by_uid
        self.views: list[MountOps] = []
        for view in by_uid.values():
            if all(v is not view for v in self.views):
                self.views.append(view)
        self.by_index = {v.view_index: v for v in self.views}
        first = self.views[0]
        self.store = first.store
        self.semantic = first.semantic
        self.stats = Stats()  # the router's own counters (`boundary` records into them)
        self.denied = 0

    # -- routing -----------------------------------------------------------------------------------
    def _caller(self, ctx: Any) -> MountOps:
        view = self.by_uid.get(getattr(ctx, "uid", -1))
        if view is None:
            self.denied += 1
            raise PermissionError(f"uid {getattr(ctx, 'uid', '?')} is not in the mount's --map-uid")
        return view

    def _own(self, view: MountOps, number: int) -> int:
        """`number` (an inode) must be the root or one of the caller's view; else it does not exist for it."""
        if number != pyfuse3.ROOT_INODE and number >> VIEW_BITS != view.view_index:
            raise pyfuse3.FUSEError(errno.ENOENT)
        return number

    def _numbered(self, number: int) -> MountOps:
        if number == SHARED_INBOX_INO:
            return self.views[0]
        view = self.by_index.get(number >> VIEW_BITS)
        if view is None:
            raise pyfuse3.FUSEError(errno.EBADF)
        return view

    async def _inode_op(self, ctx: Any, inode: int, call: Callable[[MountOps], Awaitable[T]]) -> T:
        if inode == SHARED_INBOX_INO:  # the same empty directory for every caller (the inbox covers it)
            return await call(self.views[0])
        view = self._caller(ctx)
        self._own(view, inode)
        return await call(view)

    # -- requests with a caller --------------------------------------------------------------------
    @boundary()
    async def lookup(self, parent_inode: int, name: bytes, ctx: Any = None) -> pyfuse3.EntryAttributes:
        if parent_inode == pyfuse3.ROOT_INODE and name == INBOX_NAME:
            # Any caller, the daemon mounting the inbox included: one node, holding nothing of anyone's
            return await self.views[0].lookup(parent_inode, name, ctx)
        return await self._inode_op(ctx, parent_inode, lambda v: v.lookup(parent_inode, name, ctx))

    @boundary()
    async def getattr(self, inode: int, ctx: Any = None) -> pyfuse3.EntryAttributes:
        if inode == pyfuse3.ROOT_INODE and getattr(ctx, "uid", -1) not in self.by_uid:
            # A caller outside the map may stat the root (it lists nothing, opens nothing): the path walk
            # of the daemon's own inbox mount, over <mount>/inbox, needs it.
            return await self.views[0].getattr(inode, ctx)
        return await self._inode_op(ctx, inode, lambda v: v.getattr(inode, ctx))

    @boundary()
    async def readlink(self, inode: int, ctx: Any = None) -> bytes:
        return await self._inode_op(ctx, inode, lambda v: v.readlink(inode, ctx))

    @boundary()
    async def opendir(self, inode: int, ctx: Any = None) -> pyfuse3.FileInfo:
        return await self._inode_op(ctx, inode, lambda v: v.opendir(inode, ctx))

    @boundary()
    async def open(self, inode: int, flags: int, ctx: Any = None) -> pyfuse3.FileInfo:
        return await self._inode_op(ctx, inode, lambda v: v.open(inode, flags, ctx))

    @boundary()
    async def access(self, inode: int, mode: int, ctx: Any = None) -> bool:
        return await self._inode_op(ctx, inode, lambda v: v.access(inode, mode, ctx))

    @boundary()
    async def statfs(self, ctx: Any = None) -> pyfuse3.StatvfsData:
        return await self._caller(ctx).statfs(ctx)

    @boundary()
    async def getxattr(self, inode: int, name: bytes, ctx: Any = None) -> bytes:
        self._caller(ctx)
        raise pyfuse3.FUSEError(errno.ENOSYS)

    @boundary()
    async def listxattr(self, inode: int, ctx: Any = None) -> list[bytes]:
        self._caller(ctx)
        raise pyfuse3.FUSEError(errno.ENOSYS)

    # -- requests named by a handle or inode number ------------------------------------------------
    @boundary()
    async def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
        await self._numbered(fh).readdir(fh, start_id, token)

    @boundary()
    async def releasedir(self, fh: int) -> None:
        await self._numbered(fh).releasedir(fh)

    @boundary()
    async def read(self, fh: int, off: int, size: int) -> bytes:
        return await self._numbered(fh).read(fh, off, size)

    @boundary()
    async def flush(self, fh: int) -> None:
        raise pyfuse3.FUSEError(errno.ENOSYS)

    @boundary()
    async def release(self, fh: int) -> None:
        await self._numbered(fh).release(fh)

    @boundary(reply=False)
    async def forget(self, inode_list: Sequence[tuple[int, int]]) -> None:
        by_view: dict[int, list[tuple[int, int]]] = {}
        for inode, count in inode_list:
            if inode not in (pyfuse3.ROOT_INODE, SHARED_INBOX_INO):  # pinned in every view
                by_view.setdefault(inode >> VIEW_BITS, []).append((inode, count))
        for index, items in by_view.items():
            view = self.by_index.get(index)
            if view is not None:
                await view.forget(items)

    # -- writes: refused by RefusesWrites (mount/boundary.py), EACCES first for a caller outside the map --
    async def _refuse(self, ctx: Any) -> Any:
        self._caller(ctx)
        raise ReadOnly()

    # -- what the daemon and the control channel use -----------------------------------------------
    async def _sync(self, fn: Callable[..., T], *args: Any) -> T:
        return await self.views[0]._sync(fn, *args)

    async def write_store(self, fn: Callable[[], T], *, refuse: Callable[[], str | None] | None = None) -> T:
        """One write; every view drops what it changed."""
        return await self.views[0].write_store(fn, also=self.views[1:], refuse=refuse)

    async def refresh_semantic(self) -> None:
        for view in self.views:
            await view.refresh_semantic()

    async def refresh_health(self) -> None:
        for view in self.views:
            await view.refresh_health()

    def report(self, helper: str, state: Callable[[], tuple[str | None, str | None]]) -> None:
        for view in self.views:
            view.report(helper, state)

    def verdict(self) -> Verdict:
        """The worst view's verdict: the views share one store and one daemon."""
        order = {"ok": 0, "degraded": 1, "failing": 2}
        return max((v.verdict() for v in self.views), key=lambda v: order[v.state])

    def describe(self) -> str:
        agents = ", ".join(f"uid {uid} as {v.browser.principal.agent}" for uid, v in sorted(self.by_uid.items()))
        return f"{self.views[0].browser.principal.workspace_path} ({agents})"

    def health(self) -> dict[str, Any]:
        views = {v.browser.principal.agent: v.health() for v in self.views}
        merged = dict(next(iter(views.values())))
        own = self.stats.as_dict()  # requests the router answered itself (a uid with no view)
        for key in SUMMED:
            merged[key] = sum(int(h.get(key) or 0) for h in [*views.values(), own])
        for key in COUNTED:  # op -> requests and errno -> answers, over every view: they add up to the sums
            merged[key] = dict(sum((Counter(h.get(key) or {}) for h in [*views.values(), own]), Counter()))
        merged["denied_uid_requests"] = self.denied
        merged["views"] = views
        merged["health"] = self.verdict().as_dict()
        return merged


def build_views(store: Any, principals: dict[int, Any], make: Callable[[Any, int, trio.CapacityLimiter], MountOps],
                threads: int = 4) -> UidViews:
    """One view per distinct agent (uids mapped to one agent share its view)."""
    limiter = trio.CapacityLimiter(threads)
    by_agent: dict[str, MountOps] = {}
    by_uid: dict[int, MountOps] = {}
    for uid, principal in sorted(principals.items()):
        if principal.agent not in by_agent:
            by_agent[principal.agent] = make(principal, len(by_agent) + 1, limiter)
        by_uid[uid] = by_agent[principal.agent]
    return UidViews(by_uid)
