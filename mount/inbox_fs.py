"""The inbox file system (issue 17): the one writable directory of a mount, served on a FUSE connection of
its own, mounted over the mount's `inbox/`.

Why a connection of its own: the mount serves without OPEN and FLUSH (mount/operations.py; the kernel
then sends neither for the whole connection), which keeps warm walks at native speed but leaves a write
no request at close() to answer. Here open, flush and release are served as usual, and a file is
remembered at its close: the first FLUSH after its last write hands its bytes to `remember` (the daemon
parses, checks the writer's scope and ingests them in one transaction, query/inbox_file.py), and close()
returns only after that answer. Accepted, the file leaves inbox/; refused, close() fails with EINVAL (EACCES
for a policy that denies writes) and `.rejected/<name>.md` says why, for as long as the mount lives. The
close the kernel makes for a writer killed mid-file is told apart and remembers nothing
(mount/inbox_state.killed_below). The process around it: mount/inbox_main.py.

Everything is held in memory: a pending file is at most `limit` bytes (EFBIG past it).
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Callable
from typing import Any

import pyfuse3

from recallfs.mount.inbox_state import Draft, Handle, Note, Pending, killed_below, not_the_last_close, rejected_name
from recallfs.mount.names import NAME_MAX

ROOT, REJECTED = pyfuse3.ROOT_INODE, pyfuse3.ROOT_INODE + 1
REJECTED_NAME = ".rejected"
# uid, file name, bytes -> None when remembered, else (the errno close() fails with, the reason)
Remember = Callable[[int, str, bytes], "tuple[int, str] | None"]


# A writer killed before it closed: its close fails (the killed process ignores it; should another close be
# taken for a killed one, it fails too, never silently storing nothing)
KILLED = errno.ECANCELED
# What the writer of a refused file can do, by the errno its close answered with: only a refusal of the
# file itself asks for the file to be fixed (the store's own state, or a policy, is not the file's fault).
AFTER_REFUSAL = {
    errno.EINVAL: "Fix the file and write it again.",
    errno.ENOSPC: "Write it again once the disk holding the store has room.",
    errno.EROFS: "Write it again once the store takes writes (`recallfs status` says why it does not).",
    errno.ENOTCONN: "Write it again once the daemon serving the store answers again (mounted again, or "
                    "resumed if it was stopped).",
    errno.EFBIG: "Write it as several smaller files, or raise RECALLFS_INBOX_MAX_BYTES.",
    KILLED: "Write the whole file again.",
}


# How a reason says the daemon took the file and died before answering (mount/inbox_main.forward_to)
UNKNOWN_OUTCOME = "whether the file was stored is unknown"


class InboxOps(pyfuse3.Operations):
    supports_dot_lookup = True
    enable_writeback_cache = False

    def __init__(self, remember: Remember, *, limit: int, owner: tuple[int, int] = (0, 0),
                 mountpoint: str | None = None) -> None:
        super().__init__()
        self.remember = remember
        self.remembering = 0  # closes handed to the daemon and not answered yet (inbox_main drains them)
        self._drained: Any = None  # a trio.Event while `drained` waits
        self.limit = limit
        self.mountpoint = mountpoint  # where the inbox is mounted, as /proc/<pid>/fd links name its files
        self.owner = owner  # the directories' owner (the daemon's user)
        # Each writer (uid) has its own names: two agents may both write notes.md, and none sees, opens or
        # lists another's files or notes (on a --map-uid mount every mapped user writes here).
        self.files: dict[tuple[int, str], Pending] = {}
        self.by_ino: dict[int, Pending] = {}
        self.rejected: dict[tuple[int, str], Note] = {}  # (uid, name) -> the note saying why it was refused
        self.notes: dict[int, Note] = {}  # the same notes by inode
        self.handles: dict[int, Handle] = {}  # fh -> the name, the draft it writes, its opener
        self.dirs_open: dict[int, tuple[int, int]] = {}  # fh -> (directory, the uid that opened it)
        self.notes_open: dict[int, bytes] = {}  # fh -> the note a reader of .rejected/ opened
        self._next_ino = REJECTED + 1
        self._next_fh = 1
        # A directory's times change when a name in it does, not on every stat: tar and rsync compare them
        self.changed_ns = {ROOT: time.time_ns(), REJECTED: time.time_ns()}

    # -- attributes --------------------------------------------------------------------------------
    def _dir_attr(self, ino: int) -> pyfuse3.EntryAttributes:
        # 1777: anyone the mount lets in may write here; sticky, so each writer owns its files
        attr = self._attr(ino, stat.S_IFDIR | 0o1777, 0, *self.owner, self.changed_ns[ino])
        attr.st_nlink = 2
        return attr

    def _attr(self, ino: int, mode: int, size: int, uid: int, gid: int, mtime_ns: int) -> pyfuse3.EntryAttributes:
        attr = pyfuse3.EntryAttributes()
        attr.st_ino = ino
        attr.st_mode = mode
        attr.st_size = size
        attr.st_uid, attr.st_gid = uid, gid
        attr.st_nlink = 1
        attr.st_atime_ns = attr.st_mtime_ns = attr.st_ctime_ns = mtime_ns
        attr.attr_timeout = attr.entry_timeout = 0  # everything here changes under the kernel's feet
        return attr

    def _file_attr(self, pending: Pending) -> pyfuse3.EntryAttributes:
        draft = pending.draft
        return self._attr(pending.ino, stat.S_IFREG | 0o600, len(draft.data), pending.uid, pending.gid,
                          draft.mtime_ns)

    # -- lookups and listings ----------------------------------------------------------------------
    async def getattr(self, inode: int, ctx: Any = None) -> pyfuse3.EntryAttributes:
        if inode in (ROOT, REJECTED):
            return self._dir_attr(inode)
        pending = self.by_ino.get(inode)
        if pending is not None and _sees(ctx, pending.uid):
            return self._file_attr(pending)
        note = self.notes.get(inode)
        if note is not None and _sees(ctx, note.uid):
            return self._note_attr(note)
        raise pyfuse3.FUSEError(errno.ENOENT)

    def _note_attr(self, note: Note) -> pyfuse3.EntryAttributes:
        return self._attr(note.ino, stat.S_IFREG | 0o400, len(note.data), note.uid, note.gid, note.mtime_ns)

    async def lookup(self, parent_inode: int, name: bytes, ctx: Any = None) -> pyfuse3.EntryAttributes:
        text = os.fsdecode(name)
        if text in (".", ".."):
            return self._dir_attr(ROOT if text == ".." or parent_inode == ROOT else REJECTED)
        key = (ctx.uid, text)
        if parent_inode == ROOT:
            if text == REJECTED_NAME:
                return self._dir_attr(REJECTED)
            if key in self.files:
                return self._file_attr(self.files[key])
        elif parent_inode == REJECTED and key in self.rejected:
            return self._note_attr(self.rejected[key])
        raise pyfuse3.FUSEError(errno.ENOENT)

    async def opendir(self, inode: int, ctx: Any = None) -> int:
        if inode not in (ROOT, REJECTED):
            raise pyfuse3.FUSEError(errno.ENOTDIR)
        fh = self._next_fh
        self._next_fh += 1
        self.dirs_open[fh] = (inode, ctx.uid)  # readdir has no caller: its handle says whose names to list
        return fh

    async def readdir(self, fh: int, start_id: int, token: Any) -> None:
        inode, uid = self.dirs_open.get(fh, (ROOT, -1))
        if inode == ROOT:
            entries = [(REJECTED_NAME, self._dir_attr(REJECTED)),
                       *((name, self._file_attr(p)) for (owner, name), p in sorted(self.files.items())
                         if owner == uid)]
        else:
            entries = [(name, self._note_attr(n)) for (owner, name), n in sorted(self.rejected.items()) if owner == uid]
        for position in range(start_id, len(entries)):
            name, attr = entries[position]
            if not pyfuse3.readdir_reply(token, os.fsencode(name), attr, position + 1):
                return

    async def releasedir(self, fh: int) -> None:
        self.dirs_open.pop(fh, None)

    # -- writing -----------------------------------------------------------------------------------
    async def create(self, parent_inode: int, name: bytes, mode: int, flags: int,
                     ctx: Any = None) -> tuple[pyfuse3.FileInfo, pyfuse3.EntryAttributes]:
        if parent_inode != ROOT:
            raise pyfuse3.FUSEError(errno.EROFS if parent_inode == REJECTED else errno.ENOTDIR)
        text = self._checked_name(name)
        pending = self.files.get((ctx.uid, text))
        if pending is None:
            pending = Pending(self._next_ino, text, ctx.uid, ctx.gid, Draft())
            self._next_ino += 1
            self.files[(ctx.uid, text)], self.by_ino[pending.ino] = pending, pending
            self.changed_ns[ROOT] = time.time_ns()
        else:  # another writer's draft of this name goes on as its own
            pending.draft = Draft()
        return self._open(pending, ctx.pid), self._file_attr(pending)

    async def open(self, inode: int, flags: int, ctx: Any = None) -> pyfuse3.FileInfo:
        pending = self.by_ino.get(inode)
        if pending is None:
            note = self.notes.get(inode)
            if note is None or not _sees(ctx, note.uid):
                raise pyfuse3.FUSEError(errno.ENOENT)
            if flags & (os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_TRUNC):
                raise pyfuse3.FUSEError(errno.EROFS)  # the notes in .rejected/ are read-only
            fh = self._next_fh
            self._next_fh += 1
            self.notes_open[fh] = note.data
            return pyfuse3.FileInfo(fh=fh, direct_io=True)
        if not _sees(ctx, pending.uid):
            raise pyfuse3.FUSEError(errno.ENOENT)
        if flags & os.O_TRUNC:  # a new draft: what another writer is writing to this name stays its own
            pending.draft = Draft()
        # else `>>`, an editor, a reader: this handle shares the current draft, as a file would be shared
        return self._open(pending, ctx.pid)

    def _open(self, pending: Pending, pid: int) -> pyfuse3.FileInfo:
        fh = self._next_fh
        self._next_fh += 1
        self.handles[fh] = Handle(pending, pending.draft, pid)
        pending.handles += 1
        return pyfuse3.FileInfo(fh=fh, direct_io=True)

    async def write(self, fh: int, off: int, buf: bytes) -> int:
        handle = self._handle(fh)
        draft = handle.draft
        handle.dirty = draft.dirty = True
        if off + len(buf) > self.limit:  # the close refuses the draft: what is kept is not the whole file
            draft.too_large = True
            raise pyfuse3.FUSEError(errno.EFBIG)
        if off > len(draft.data):
            draft.data.extend(bytes(off - len(draft.data)))
        draft.data[off: off + len(buf)] = buf
        draft.mtime_ns = time.time_ns()
        return len(buf)

    async def read(self, fh: int, off: int, size: int) -> bytes:
        held = self.handles.get(fh)
        data = bytes(held.draft.data) if held is not None else self.notes_open.get(fh)
        if data is None:
            raise pyfuse3.FUSEError(errno.EBADF)
        return data[off: off + size]

    async def setattr(self, inode: int, attr: Any, fields: Any, fh: int | None, ctx: Any = None) -> Any:
        pending = self.by_ino.get(inode)
        if pending is None or not _sees(ctx, pending.uid):
            raise pyfuse3.FUSEError(errno.EPERM if inode in (ROOT, REJECTED) else
                                    errno.EROFS if inode in self.notes else errno.ENOENT)
        if fields.update_size:
            held = self.handles.get(fh) if fh is not None else None
            mine = held is not None and held.pending is pending
            draft = held.draft if held is not None and mine else pending.draft  # ftruncate: its own
            if held is not None and mine:
                held.dirty = True
            draft.dirty = True
            if attr.st_size > self.limit:
                draft.too_large = True
                raise pyfuse3.FUSEError(errno.EFBIG)
            del draft.data[attr.st_size:]
            draft.data.extend(bytes(attr.st_size - len(draft.data)))
        return self._file_attr(pending)

    async def flush(self, fh: int) -> None:
        """close(): the draft is remembered now if this handle wrote since its last close (a dup'd descriptor
        closed twice remembers it once; a reader's close never does) and no other writer of the same draft
        has unclosed writes (the last of them remembers it whole); close() returns the answer."""
        if fh in self.notes_open:
            return
        handle = self._handle(fh)
        pending, draft = handle.pending, handle.draft
        if not handle.dirty:
            return
        if not draft.dirty or pending.removed:
            handle.dirty = False
            return  # remembered or refused already, at another writer's close; or `rm` took the name
        killed = killed_below(handle.pid)
        if killed:  # the kernel closes a killed writer's files: what it wrote is not a whole file
            handle.dirty = False
            self._refused(pending, draft, f"the writer (pid {killed[0]}) was killed by signal {killed[1]} before "
                                          "it closed the file", KILLED)
            raise pyfuse3.FUSEError(KILLED)
        one_open = not any(other is not handle and other.pid == handle.pid and other.pending is pending
                           for other in self.handles.values())
        if not_the_last_close(handle.pid, self._path(pending), pending.ino, opener_has_one_open=one_open):
            return  # a command the writer ran exited, or the writer closed while a command writes on
        handle.dirty = False
        if any(other.dirty for other in self.handles.values() if other.draft is draft):
            return  # `>>` beside a writer still writing: the draft is stored at that writer's close
        if draft.too_large:
            self._refused(pending, draft, f"the file is larger than inbox/ takes ({self.limit:,} bytes; a write past "
                                          "that failed with EFBIG)", errno.EFBIG)
            raise pyfuse3.FUSEError(errno.EFBIG)
        draft.dirty = False  # before the wait: another close meanwhile must not remember it twice
        refused = await self._remembered(pending, draft)
        if refused is None:
            self._settled(pending, draft)
            return
        self._refused(pending, draft, refused[1], refused[0])
        raise pyfuse3.FUSEError(refused[0])

    def _settled(self, pending: Pending, draft: Draft) -> None:
        """A draft was remembered or refused: its name leaves inbox/, unless another writer has a newer
        draft of it open (that one leaves at its own close)."""
        if pending.draft is draft:
            self._drop(pending)

    def _refused(self, pending: Pending, draft: Draft, reason: str, number: int) -> None:
        if UNKNOWN_OUTCOME in reason:  # the daemon died with it: it may have committed first
            note = f"# {pending.name}: not confirmed\n\n{reason}\n"
        else:
            after = AFTER_REFUSAL.get(number, "")
            note = f"# {pending.name}: refused\n\n{reason}\n\nNothing was stored. {after}".rstrip() + "\n"
        key = (pending.uid, rejected_name(pending.name))
        old = self.rejected.get(key)
        if old is not None:
            del self.notes[old.ino]
        kept = Note(self._next_ino, note.encode(), pending.uid, pending.gid)
        self._next_ino += 1
        self.rejected[key], self.notes[kept.ino] = kept, kept
        self.changed_ns[REJECTED] = time.time_ns()
        draft.dirty = False
        self._settled(pending, draft)

    async def _remembered(self, pending: Pending, draft: Draft) -> tuple[int, str] | None:
        import trio

        self.remembering += 1
        try:
            return await trio.to_thread.run_sync(self.remember, pending.uid, pending.name, bytes(draft.data))
        finally:
            self.remembering -= 1
            if not self.remembering and self._drained is not None:
                self._drained.set()

    async def drained(self) -> None:
        """Return once no close waits on the daemon (inbox_main, before it leaves)."""
        import trio

        while self.remembering:
            self._drained = trio.Event()
            await self._drained.wait()

    async def release(self, fh: int) -> None:
        """The last close of an open file (every dup of its descriptor closed). A file nothing was ever
        written to (`touch`) leaves here: there is nothing to remember or refuse. Not at its FLUSH: a
        shell's redirection closes one descriptor of the file before the command writes to the other."""
        self.notes_open.pop(fh, None)
        held = self.handles.pop(fh, None)
        if held is not None:
            pending = held.pending
            pending.handles -= 1
            if pending.handles <= 0 and not pending.draft.data and not pending.draft.dirty:
                self._drop(pending)

    async def unlink(self, parent_inode: int, name: bytes, ctx: Any = None) -> None:
        text = os.fsdecode(name)
        if parent_inode == REJECTED and (ctx.uid, text) in self.rejected:
            del self.notes[self.rejected.pop((ctx.uid, text)).ino]
            self.changed_ns[REJECTED] = time.time_ns()
            return
        pending = self.files.get((ctx.uid, text)) if parent_inode == ROOT else None
        if pending is None:
            raise pyfuse3.FUSEError(errno.ENOENT)
        pending.removed = True  # an agent that removes its draft wants it gone: its writers' closes keep nothing
        self._drop(pending)

    # -- what the inbox does not take: one answer each, as the README's errno table says -------------
    async def mkdir(self, parent_inode: int, name: bytes, mode: int, ctx: Any = None) -> pyfuse3.EntryAttributes:
        raise pyfuse3.FUSEError(errno.EPERM)  # files only

    async def rmdir(self, parent_inode: int, name: bytes, ctx: Any = None) -> None:
        raise pyfuse3.FUSEError(errno.EPERM if name == os.fsencode(REJECTED_NAME) else errno.ENOENT)

    async def rename(self, parent_inode_old: int, name_old: bytes, parent_inode_new: int, name_new: bytes,
                     flags: int, ctx: Any = None) -> None:
        raise pyfuse3.FUSEError(errno.EPERM)  # a file is remembered under the name it was closed with

    async def symlink(self, parent_inode: int, name: bytes, target: bytes, ctx: Any = None) -> pyfuse3.EntryAttributes:
        raise pyfuse3.FUSEError(errno.EPERM)

    async def link(self, inode: int, new_parent_inode: int, new_name: bytes,
                   ctx: Any = None) -> pyfuse3.EntryAttributes:
        raise pyfuse3.FUSEError(errno.EPERM)

    async def mknod(self, parent_inode: int, name: bytes, mode: int, rdev: int,
                    ctx: Any = None) -> pyfuse3.EntryAttributes:
        raise pyfuse3.FUSEError(errno.EPERM)

    async def readlink(self, inode: int, ctx: Any = None) -> bytes:
        raise pyfuse3.FUSEError(errno.EINVAL)

    async def statfs(self, ctx: Any = None) -> pyfuse3.StatvfsData:
        data = pyfuse3.StatvfsData()
        data.f_bsize = data.f_frsize = 4096
        data.f_namemax = NAME_MAX
        return data

    # -- helpers -----------------------------------------------------------------------------------
    def _handle(self, fh: int) -> Handle:
        held = self.handles.get(fh)
        if held is None:
            raise pyfuse3.FUSEError(errno.EBADF)
        return held

    def _path(self, pending: Pending) -> str | None:
        return os.path.join(self.mountpoint, pending.name) if self.mountpoint is not None else None

    def _drop(self, pending: Pending) -> None:
        """The file leaves inbox/ (remembered or refused); handles still open keep writing to nothing."""
        if self.files.get((pending.uid, pending.name)) is pending:
            del self.files[(pending.uid, pending.name)]
            self.changed_ns[ROOT] = time.time_ns()
        self.by_ino.pop(pending.ino, None)

    @staticmethod
    def _checked_name(name: bytes) -> str:
        text = os.fsdecode(name)
        if len(name) > NAME_MAX:
            raise pyfuse3.FUSEError(errno.ENAMETOOLONG)
        if text.startswith(".") or any("\udc80" <= c <= "\udcff" for c in text):
            raise pyfuse3.FUSEError(errno.EINVAL)  # hidden names are the inbox's own; names are UTF-8
        return text


def _sees(ctx: Any, uid: int) -> bool:
    """A writer's files and notes are its own (the kernel asks some attributes with no caller: ctx None)."""
    return ctx is None or getattr(ctx, "uid", uid) == uid
