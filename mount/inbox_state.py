"""What the inbox file system holds (mount/inbox_fs.py): the files being written, the notes of refused
ones, and how a close by a killed writer is told apart from a real one."""

from __future__ import annotations

import os
import platform
import time
from dataclasses import dataclass, field

from recallfs.mount.names import fitted


@dataclass(frozen=True, slots=True)
class Note:
    """inbox/.rejected/<name>.md: why a file was refused, readable by its writer only (on a --map-uid
    mount another agent would otherwise read what was refused, and by whom)."""

    ino: int
    data: bytes
    uid: int
    gid: int
    mtime_ns: int = field(default_factory=time.time_ns)


@dataclass(slots=True)
class Draft:
    """What the writers of one open file wrote. A create, or an open that truncates, starts a draft of its
    own: agents that write one name at once (`echo ... > inbox/note.md` from eight shells) never write into,
    truncate or close one another's bytes, and each close remembers what its own writer wrote."""

    data: bytearray = field(default_factory=bytearray)
    dirty: bool = False  # written since it was last remembered or refused
    too_large: bool = False  # a write or truncate past the limit was refused: the draft is not the whole file
    mtime_ns: int = field(default_factory=time.time_ns)


@dataclass(slots=True)
class Pending:
    """A name in inbox/ being written: who created it, its current draft (the latest create or truncating
    open: what stat, a listing and an open that does not truncate see), and how many handles it has."""

    ino: int
    name: str
    uid: int
    gid: int
    draft: Draft
    handles: int = 0
    removed: bool = False  # unlinked while open: as with an unlinked file, its writers' closes keep nothing


@dataclass(slots=True)
class Handle:
    """One open of a name in inbox/: the draft it reads and writes, the process that opened it, and whether
    it has written since its own last close. Only the close of a handle that wrote remembers
    a draft: a reader (`cat`, `grep -r` over the mount) that opens a file another process is still writing
    stores nothing, and the process checked for a kill is the one that holds this handle's descriptor."""

    pending: Pending
    draft: Draft
    pid: int  # the opener: the closing process is it or one that inherited the descriptor from it
    dirty: bool = False  # wrote (or truncated) through this handle since its last close


_PF_EXITING = 0x4
_TREE_LIMIT = 4096  # processes looked at below an opener (a runaway fork tree is not walked whole)


def killed_by(pid: int) -> int:
    """The signal that is ending process `pid` now, or 0. A process killed mid-write has its files closed
    by the kernel as it exits: /proc/<pid>/stat then shows PF_EXITING in its flags (field 9) and the
    signal in its exit code (field 52), both set before the kernel closes its files."""
    fields = _stat_fields(f"/proc/{pid}/stat")
    try:
        state, flags, exit_code = fields[0], int(fields[9 - 3]), int(fields[52 - 3])
    except (IndexError, ValueError):
        return 0
    if state in (b"Z", b"X"):  # killed earlier and not reaped yet: its files were closed long ago
        return 0
    return exit_code & 0x7F if flags & _PF_EXITING else 0


def killed_below(opener: int) -> tuple[int, int] | None:
    """(pid, signal) of a process being killed now among `opener` and its descendants, or None.

    A close reaches the inbox without the closing process's pid (pyfuse3's flush has no caller), but the
    descriptor is the opener's or was inherited from it: `timeout 2 sh -c '...' > inbox/x.md` opens the file
    in the process that becomes `timeout`, and the shell that writes and is killed is its child. Such a
    child is still listed under its parent while its files close (it becomes a zombie after)."""
    for pid in _tree(opener):
        signal = killed_by(pid)
        if signal:
            return pid, signal
    return None


# System calls that close a descriptor, by machine (each kernel's syscall table): a task blocked in one of
# them when a close reaches the inbox is the one closing. exit and exit_group are not needed: an exiting
# task has PF_EXITING.
_CLOSING_CALLS: dict[str, frozenset[int]] = {
    "x86_64": frozenset({3, 33, 292, 59, 322, 436}),  # close, dup2, dup3, execve, execveat, close_range
    "aarch64": frozenset({57, 24, 221, 281, 436}),  # close, dup3, execve, execveat, close_range
}


def not_the_last_close(opener: int, path: str | None, ino: int, *, opener_has_one_open: bool = False) -> bool:
    """Whether a process other than the one closing still holds this file, so that the writer is not done.

    A shell writing `{ echo head; git log -1; echo tail; } > inbox/x.md` forks commands that inherit the
    file: each one's exit is a close of the same open file before the writer is done. A writer that hands
    the file to a command (`Popen(cmd, stdout=f); f.close()`) closes its own copy while the command still
    writes. pyfuse3's `flush` names no caller, so /proc is asked: the opener is the one closing when one of
    its threads is blocked in a closing system call or it is exiting; the holders looked for are the
    processes below the opener, and the opener too when another closes (a descriptor on `path` with the
    file's inode). When the opener closes, its other descriptors count only if this is its one open of the
    name (`opener_has_one_open`): then they are copies of this one (`exec 5> f; echo a >&5` closes a copy
    of 5 after each echo), while beside another open they may be that one, with a draft of its own. Where
    it cannot be told (the opener gone, /proc hidden, another machine's syscall numbers, no path), the
    close is taken as the last, as before."""
    calls = _CLOSING_CALLS.get(platform.machine())
    if calls is None or path is None:
        return False
    closing = _is_closing(opener, calls)
    if closing is None:
        return False
    return any(_holds(pid, path, ino) for pid in _tree(opener) if pid != opener or not closing or opener_has_one_open)


def _is_closing(pid: int, calls: frozenset[int]) -> bool | None:
    """Whether a thread of `pid` is in a closing system call or the process is exiting; None: unknown."""
    tasks = _tasks(pid)
    if tasks is None:
        return None
    for task in tasks:
        try:
            if int(_stat_fields(f"/proc/{pid}/task/{task}/stat")[9 - 3]) & _PF_EXITING:
                return True
            with open(f"/proc/{pid}/task/{task}/syscall", "rb") as fh:
                call = fh.read().split(maxsplit=1)
        except (OSError, IndexError, ValueError):
            return None
        if call and call[0].lstrip(b"-").isdigit() and int(call[0]) in calls:
            return True
    return False


def _tree(opener: int) -> list[int]:
    """`opener` and the processes below it (at most _TREE_LIMIT)."""
    seen: list[int] = []
    todo = [opener]
    while todo and len(seen) < _TREE_LIMIT:
        pid = todo.pop()
        if pid not in seen:
            seen.append(pid)
            todo.extend(_children(pid))
    return seen


def _holds(pid: int, path: str, ino: int) -> bool:
    """Whether process `pid` has a descriptor open on the inbox file at `path` with inode `ino`."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != path:
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}", "rb") as fh:
                if any(line.split() == [b"ino:", str(ino).encode()] for line in fh):
                    return True
        except OSError:
            continue
    return False


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in _tasks(pid) or []:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as fh:
                out.extend(int(c) for c in fh.read().split())
        except (OSError, ValueError):
            continue
    return out


def _tasks(pid: int) -> list[str] | None:
    """The thread ids of process `pid` (None: gone, or hidden)."""
    try:
        return os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None


def _stat_fields(path: str) -> list[bytes]:
    """The fields of a /proc stat file after the command name (field 3 on); [] when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return []


def rejected_name(name: str) -> str:
    """inbox/.rejected/<name>.md: `db.md` -> `db.md`, `batch.jsonl` -> `batch.jsonl.md`. A name that
    `.md` takes past 255 bytes is cut as long names are (names.fitted): a longer one broke `cp -a` and tar."""
    return name if name.lower().endswith(".md") else fitted(name, ".md")
