"""What the inbox file system holds (mount/inbox_fs.py): the files being written, the notes of refused
ones, and how a close by a killed writer is told apart from a real one."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


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
    """What one open of a file wrote. A create, or an open that truncates, starts a draft of its own:
    agents that write one name at once (`echo ... > inbox/note.md` from eight shells) never write into,
    truncate or close one another's bytes, and each close remembers what its own writer wrote."""

    pid: int  # the process that opened it last: its death mid-file is not a close
    data: bytearray = field(default_factory=bytearray)
    dirty: bool = False  # written since the last close
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


_PF_EXITING = 0x4


def killed_by(pid: int) -> int:
    """The signal that is ending process `pid` now, or 0. A process killed mid-write has its files closed
    by the kernel as it exits: /proc/<pid>/stat then shows PF_EXITING in its flags (field 9) and the
    signal in its exit code (field 52), both set before the kernel closes its files."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return 0
    try:
        flags, exit_code = int(fields[9 - 3]), int(fields[52 - 3])
    except (IndexError, ValueError):
        return 0
    return exit_code & 0x7F if flags & _PF_EXITING else 0


def rejected_name(name: str) -> str:
    """inbox/.rejected/<name>.md: `db.md` -> `db.md`, `batch.jsonl` -> `batch.jsonl.md`."""
    return name if name.lower().endswith(".md") else f"{name}.md"
