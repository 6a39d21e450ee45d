"""The inbox's own process (mount/inbox_fs.py, issue 17): started once the mount serves, mounted over
`<mount>/inbox`, and stopped before the mount itself is unmounted (a mount under it would keep it busy).

pyfuse3 serves one session per process, and the inbox needs a FUSE connection of its own (open, flush
and release served), hence a process. It dies with the daemon (PR_SET_PDEATHSIG), and `recallfs umount`
of a dead daemon detaches both mounts at once (a lazy unmount takes the mounts below it along).
Nothing here touches a path inside the mount from the daemon's own loop: the kernel would send that
request to the loop that is waiting for it.
"""

from __future__ import annotations

import ctypes
import logging
import signal
import subprocess
import sys
import time
from pathlib import Path

import trio

from recallfs.mount import registry

log = logging.getLogger("recallfs.mount")
START_S = 30.0  # how long the mount waits for its inbox to appear (an import of pyfuse3 and trio)
STOP_S = 10.0
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the daemon's thread that started it ends."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class InboxProcess:
    def __init__(self, store: Path, mountpoint: Path, limit: int, *, allow_other: bool, log_path: Path) -> None:
        self.path = Path(str(mountpoint).rstrip("/") + "/inbox")  # not resolved: that would ask the mount
        self.argv = [sys.executable, "-m", "recallfs.mount.inbox_main", str(store), str(self.path), str(limit),
                     *(["allow_other"] if allow_other else [])]
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def mounted(self) -> bool:
        return registry.mount_type(self.path) == "fuse.recallfs"

    def spawn(self) -> None:
        """Start it, from the daemon's main thread: the child dies with the thread that forked it."""
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                         preexec_fn=_die_with_parent)

    async def start(self) -> str | None:
        """Start it and wait for its mount; None when it serves, else why not (the mount serves anyway,
        with inbox/ read-only)."""
        self.spawn()
        assert self.proc is not None
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            if await trio.to_thread.run_sync(self.mounted):
                return None
            if self.proc.poll() is not None:
                return f"the inbox process exited with status {self.proc.returncode} (see {self.log_path})"
            await trio.sleep(0.05)
        return f"the inbox did not mount in {START_S:.0f} s (see {self.log_path})"

    def stop(self) -> None:
        """SIGTERM (it unmounts itself), then whatever is left detached. Blocking: called once the loop is
        done serving."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.mounted():
            ok, problem = registry.lazy_unmount(self.path)
            if not ok:
                log.warning("could not unmount the inbox at %s: %s", self.path, problem)
