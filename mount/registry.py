"""Where live mounts are recorded, and how a mount point is inspected without touching it.

- One JSON state file per mount point in the runtime directory ($XDG_RUNTIME_DIR/recallfs, else
  /tmp/recallfs-<uid>): pid, store, principal, control socket, log file. `recallfs status` reads them.
  A runtime directory someone else owns, or others may write, is refused: they could plant state files
  or, for long store paths, the control socket (/tmp is everyone's, so /tmp/recallfs-0 may be anyone's).
- The mount table (/proc/self/mountinfo) says whether a point is mounted; reading it never enters the
  file system, so a hung or dead mount cannot hang the caller.
- The control socket lives next to the store (`<store>.sock`), or in the runtime directory when that
  path would be too long for a Unix socket.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import stat
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

SOCKET_PATH_MAX = 100  # sun_path holds 108 bytes; keep a margin


class RuntimeDirError(RuntimeError):
    """The runtime directory cannot be trusted; the message says why and what to do."""


def _runtime_base() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR")
    return Path(base) / "recallfs" if base else Path(f"/tmp/recallfs-{os.getuid()}")


def runtime_dir() -> Path:
    path = _runtime_base()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # XDG_RUNTIME_DIR names a file, or a place the caller may not write
        raise RuntimeDirError(f"cannot use the runtime directory {path}: {exc.strerror}; set XDG_RUNTIME_DIR "
                              "to a directory of your own") from None
    for directory in (path, path / "mounts"):
        _private_dir(directory)
    return path


def _private_dir(path: Path) -> None:
    """Create `path` (0700), or accept an existing one only if it is a directory of the caller's that no
    one else may write (checked after mkdir, with lstat: a symlink is not followed)."""
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise RuntimeDirError(f"cannot use the runtime directory {path}: {exc.strerror}; set XDG_RUNTIME_DIR "
                              "to a directory of your own") from None
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        why = "it is a symbolic link" if stat.S_ISLNK(st.st_mode) else "it is not a directory"
    elif st.st_uid != os.geteuid():
        why = f"it belongs to uid {st.st_uid}, not to you"
    elif st.st_mode & 0o022:
        why = f"others may write in it (mode {stat.S_IMODE(st.st_mode):o})"
    else:
        return
    raise RuntimeDirError(f"refusing to use the runtime directory {path}: {why}; remove it, or set "
                          "XDG_RUNTIME_DIR to a directory of your own")


def _key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]  # a path of any bytes


def canonical(path: str | Path) -> Path:
    return Path(os.path.abspath(Path(path).expanduser()))


def state_path(mountpoint: Path) -> Path:
    return runtime_dir() / "mounts" / f"{_key(str(canonical(mountpoint)))}.json"


def log_path(mountpoint: Path) -> Path:
    return runtime_dir() / "mounts" / f"{_key(str(canonical(mountpoint)))}.log"


def canonical_store(store: str | Path) -> Path:
    """A store's path with symbolic links resolved: a daemon and its clients find one socket however
    each names the file (found 2026-12-07: an ingest through a link to a mounted store waited 120 s for
    the store's lock, then failed). Not for mount points: resolving one stats it, which a hung FUSE
    mount would block."""
    return Path(os.path.realpath(Path(store).expanduser()))


def _beside(store: str | Path) -> Path | None:
    store_path = canonical_store(store)
    beside = store_path.with_name(store_path.name + ".sock")
    return beside if len(os.fsencode(str(beside))) <= SOCKET_PATH_MAX else None


def _in_runtime_dir(store: str | Path) -> Path:
    return runtime_dir() / f"{_key(str(canonical_store(store)))}.sock"


def socket_path(store: str | Path) -> Path:
    """Where the daemon serving `store` binds its socket: next to the store, or in the runtime directory
    when that path is too long for a socket or the store's directory is not writable (a read-only store)."""
    beside = _beside(store)
    if beside is not None and os.access(beside.parent, os.W_OK):
        return beside
    return _in_runtime_dir(store)


def socket_candidates(store: str | Path) -> Iterator[Path]:
    """Where a client looks for that socket, in order (it cannot know which the daemon could use). Lazy:
    the runtime directory is only looked at (and checked) when the first place holds no daemon, and a
    client never creates it: where it does not exist, no daemon listens."""
    beside = _beside(store)
    if beside is not None:
        yield beside
        if not _runtime_base().exists():
            return
    yield _in_runtime_dir(store)


@dataclass(slots=True)
class MountState:
    pid: int
    mountpoint: str
    store: str
    org: str
    workspace: str
    agent: str
    socket: str
    log: str
    started_at: str

    @property
    def principal(self) -> str:
        return f"{self.org}/{self.workspace} as {self.agent}"


def write_state(state: MountState) -> None:
    path = state_path(Path(state.mountpoint))
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(state), indent=2))
    tmp.replace(path)


def read_states() -> list[MountState]:
    states = []
    for path in sorted((runtime_dir() / "mounts").glob("*.json")):
        try:
            states.append(MountState(**json.loads(path.read_text())))
        except (OSError, ValueError, TypeError):
            continue
    return states


def read_state(mountpoint: Path) -> MountState | None:
    try:
        return MountState(**json.loads(state_path(mountpoint).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def remove_state(mountpoint: Path, pid: int | None = None) -> None:
    """Remove the state file (only if it still names `pid`, when given: a newer mount may own it)."""
    path = state_path(mountpoint)
    if pid is not None:
        current = read_state(mountpoint)
        if current is not None and current.pid != pid:
            return
    path.unlink(missing_ok=True)


def _proc_state(pid: int) -> str | None:
    """The process's state letter in /proc/<pid>/stat (R, S, D, T, t, Z, ...); None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    state = _proc_state(pid)
    return state is not None and state != "Z"  # a zombie (killed, not yet reaped by its parent) is not alive


_STOPPED = {"T": "stopped (SIGSTOP, or ^Z)", "t": "stopped by a debugger"}


def pid_stopped(pid: int) -> str | None:
    """Why a live process cannot run now, or None. A stopped daemon still takes connections (the kernel
    queues them) and answers nothing, so without this the CLI could only wait out its timeouts."""
    state = _proc_state(pid)
    return _STOPPED.get(state) if state is not None else None


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as \ooo
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1: i + 4].isdigit() and len(field[i + 1: i + 4]) == 3:
            out.append(chr(int(field[i + 1: i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mount_type(mountpoint: Path) -> str | None:
    """The file system type mounted at exactly this point ('fuse.recallfs'), or None."""
    target = str(canonical(mountpoint))
    found = None
    try:
        with open("/proc/self/mountinfo") as fh:
            for line in fh:
                left, _, right = line.partition(" - ")
                fields = left.split()
                if len(fields) >= 5 and _unescape(fields[4]) == target:
                    found = right.split()[0]  # the last (top) mount wins
    except OSError:
        return None
    return found


DEAD_ERRNOS = (errno.ENOTCONN, errno.ECONNABORTED)


def is_dead(mountpoint: Path) -> bool:
    """A FUSE mount whose daemon is gone: requests fail with ENOTCONN ("Transport endpoint is not
    connected"), or ECONNABORTED while the kernel is still tearing the connection down.

    `statvfs` asks the file system itself (the kernel caches no STATFS answer), whereas `stat` of the
    mount point may be answered from the kernel's attribute cache long after the daemon died."""
    try:
        os.statvfs(mountpoint)
    except OSError as exc:
        return exc.errno in DEAD_ERRNOS
    return False


def answers(mountpoint: Path, timeout: float) -> str | None:
    """None when the mount answers a STATFS within `timeout`, even with an error; else why not (dead, or
    hung). The request runs in a daemon thread, so a hung mount cannot hang the caller."""
    outcome: list[str | None] = []

    def probe() -> None:
        try:
            os.statvfs(mountpoint)
            outcome.append(None)
        except OSError as exc:  # an answer all the same (EACCES: a --map-uid mount refusing this uid)
            outcome.append(os.strerror(exc.errno) if exc.errno in DEAD_ERRNOS else None)

    worker = threading.Thread(target=probe, daemon=True)
    worker.start()
    worker.join(timeout)
    return outcome[0] if outcome else f"no answer in {timeout:.0f} s"


def lazy_unmount(mountpoint: Path) -> tuple[bool, str]:
    """Detach the mount now, even if busy (fusermount3 -uz; umount -l as a fallback)."""
    path = str(canonical(mountpoint))
    problem = "no unmount tool found (install fuse3)"
    for cmd in (["fusermount3", "-u", "-z", path], ["fusermount", "-u", "-z", path], ["umount", "-l", path]):
        if shutil.which(cmd[0]) is None:
            continue
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        if proc.returncode == 0 or mount_type(mountpoint) is None:
            return True, ""
        problem = proc.stderr.strip() or f"{cmd[0]} exited {proc.returncode}"
    return False, problem
