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
from datetime import datetime
from pathlib import Path

import trio

from recallfs.mount import registry

log = logging.getLogger("recallfs.mount")
START_S = 30.0  # how long the mount waits for its inbox to appear (an import of pyfuse3 and trio)
STOP_S = 10.0
WATCH_S = 1.0  # how often the daemon looks whether its inbox process is alive
RETRY_S = 10.0  # after a start that failed
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
        self.problem: str | None = None  # why inbox/ takes no writes now (health: degraded)
        self.note: str | None = None  # that the process died and was started again (health: a note)
        self.restarts = 0
        self._watch = trio.CancelScope()  # keep(), cancelled before the inbox is stopped

    def state(self) -> tuple[str | None, str | None]:
        """(problem, note) for the health verdict: a death is reported at once, before `keep` sees it."""
        if self.problem is None and self.proc is not None and self.proc.poll() is not None:
            return f"the inbox process exited with status {self.proc.returncode}", self.note
        if self.problem is None and self.proc is not None and (stopped := registry.pid_stopped(self.proc.pid)):
            # found 2026-12-07: health said ok while every write to inbox/, and any walk that stats it, hung
            return (f"the inbox process (pid {self.proc.pid}) is {stopped}: writes to inbox/ wait, and so does a "
                    f"walk that reaches it, until `kill -CONT {self.proc.pid}`"), self.note
        return self.problem, self.note

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
        self.problem = await self._start()
        return self.problem

    async def _start(self) -> str | None:
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

    async def keep(self) -> None:
        """Start the inbox again whenever its process dies (killed, out of memory): until then a write to
        inbox/ fails with ENOTCONN and a walk of the mount meets an unreadable directory, which health
        says (degraded) for as long as it lasts. Runs until `unwatch`."""
        failures = 0
        with self._watch:
            while True:
                await trio.sleep(WATCH_S)
                if self.proc is None or self.proc.poll() is None:
                    continue
                status = self.proc.returncode
                self.problem = f"the inbox process exited with status {status}; starting it again"
                log.error("inbox/ takes no writes: %s", self.problem)
                await trio.to_thread.run_sync(self._detach)  # the dead one's mount (ENOTCONN) first
                if await self.start() is None:
                    failures = 0
                    self.restarts += 1
                    self.note = (f"the inbox process was started again {self.restarts} time(s), last at "
                                 f"{datetime.now().isoformat(timespec='seconds')} after it exited with status {status}")
                    log.info("inbox/ serves again: %s", self.note)
                else:
                    failures += 1
                    log.error("inbox/ takes no writes: %s", self.problem)
                    await trio.sleep(min(RETRY_S * 2 ** failures, 300.0))

    def unwatch(self) -> None:
        """No more restarts: the mount is stopping (trio thread)."""
        self._watch.cancel()

    def _detach(self) -> None:
        if self.mounted():
            ok, problem = registry.lazy_unmount(self.path)
            if not ok:
                log.warning("could not unmount the inbox at %s: %s", self.path, problem)

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
        self._detach()
