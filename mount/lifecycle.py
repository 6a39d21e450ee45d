"""The mount's life cycle as the CLI drives it: mount, unmount, recover, report.

- `mount` checks the mount point first (a dead mount left by a crash is detached), then, unless
  --foreground, starts the daemon in a new session (`python -m recallfs.mount.daemon`, given the resolved
  settings, logging to the runtime directory) and returns once the daemon says the mount is ready, or
  says why it is not.
- `unmount` sends the daemon SIGTERM (and SIGCONT, so a stopped one wakes to it), which unmounts cleanly;
  one that does not stop in 30 s is killed; a dead mount is detached (fusermount3 -uz).
- `mount_status` reports every recorded mount with its health (mount/health.py).

Exit codes: 0 mounted / clean unmount; 1 an error explained on stderr or in the daemon's log.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from recallfs.mount import registry
from recallfs.mount.daemon import serve
from recallfs.mount.mount_config import MountConfig, MountError

log = logging.getLogger("recallfs.mount")
READY_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 30.0
KILL_TIMEOUT_S = 5.0


# -- the mount point ----------------------------------------------------------------------------------
def prepare_mountpoint(mountpoint: Path) -> None:
    """Make the point mountable: detach a dead recallfs mount, refuse a live one."""
    kind = registry.mount_type(mountpoint)
    if kind is not None:
        state = registry.read_state(mountpoint)
        if state is not None and registry.pid_alive(state.pid):
            raise MountError(f"{mountpoint} is already mounted by recallfs (pid {state.pid}, store {state.store}); "
                             f"run `recallfs umount {mountpoint}` first")
        if not kind.startswith("fuse") or not registry.is_dead(mountpoint):
            raise MountError(f"{mountpoint} is already a mount point ({kind}); unmount it first")
        ok, problem = registry.lazy_unmount(mountpoint)
        if not ok:
            raise MountError(f"{mountpoint} holds a dead mount that could not be detached: {problem}")
        log.warning("detached a dead mount at %s", mountpoint)
        registry.remove_state(mountpoint)
    if not mountpoint.is_dir():
        raise MountError(f"mount point {mountpoint} is not a directory (create it with mkdir -p)")


def mount(config: MountConfig) -> int:
    prepare_mountpoint(config.mountpoint)
    if not config.store.exists():
        raise MountError(f"no store at {config.store}; create one with `recallfs init --store {config.store}` "
                         "or `recallfs ingest`")
    if config.foreground:
        return serve(config)
    return _spawn(config)


def _spawn(config: MountConfig) -> int:
    """Start the daemon detached from this terminal and wait until it reports ready."""
    log_file = registry.log_path(config.mountpoint)
    read_fd, write_fd = os.pipe()
    # The daemon is its own module: it takes the settings this command resolved, not the CLI's flags.
    cmd = [sys.executable, "-m", "recallfs.mount.daemon", "--ready-fd", str(write_fd), config.to_json()]
    with open(log_file, "ab") as out:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out, pass_fds=(write_fd,),
                                start_new_session=True, cwd="/")
    os.close(write_fd)
    message = b""
    deadline = time.monotonic() + READY_TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([read_fd], [], [], 0.5)
            if ready:
                chunk = os.read(read_fd, 4096)
                if not chunk:
                    break
                message += chunk
            elif proc.poll() is not None:
                break
    finally:
        os.close(read_fd)
    text = message.decode(errors="replace").strip()
    if text == "ready":
        print(f"mounted {config.describe_store()} at {config.mountpoint} as {config.who()} (pid {proc.pid}; "
              f"log {log_file})")
        return 0
    if proc.poll() is None and not text:
        proc.terminate()
        raise MountError(f"the daemon did not become ready in {READY_TIMEOUT_S:.0f} s; see {log_file}")
    raise MountError((text.removeprefix("error: ") or f"the daemon exited ({proc.poll()})") + f"; log: {log_file}")


# -- umount and status ----------------------------------------------------------------------------------
def unmount(mountpoint: Path) -> str:
    """Stop the daemon (SIGTERM, which unmounts), or detach a dead mount. Returns what was done."""
    state = registry.read_state(mountpoint)
    done = []
    if state is not None and registry.pid_alive(state.pid):
        done.append(stop_daemon(state.pid, state.log))
    if registry.mount_type(mountpoint) is not None:
        ok, problem = registry.lazy_unmount(mountpoint)
        if not ok:
            raise MountError(f"could not unmount {mountpoint}: {problem}")
        done.append("detached the mount" if not done else "detached the mount left behind")
    if state is not None:
        registry.remove_state(mountpoint)
        if not registry.pid_alive(state.pid):
            Path(state.socket).unlink(missing_ok=True)
    if not done:
        raise MountError(f"{mountpoint} is not mounted")
    return f"unmounted {mountpoint}: " + ", ".join(done)


def stop_daemon(pid: int, log: str, stop_timeout: float = STOP_TIMEOUT_S) -> str:
    """SIGTERM, and SIGCONT after it: a daemon stopped with SIGSTOP (or ^Z) then wakes to the pending
    SIGTERM and unmounts cleanly, instead of waiting out the timeout to be killed. One that still does
    not stop (hung) is killed: the user asked for the mount to go, and what the daemon committed is in
    the store (DuckDB replays its WAL)."""
    os.kill(pid, signal.SIGTERM)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGCONT)
    if _gone(pid, stop_timeout):
        return f"stopped the daemon (pid {pid})"
    os.kill(pid, signal.SIGKILL)
    if not _gone(pid, KILL_TIMEOUT_S):  # stuck in the kernel (uninterruptible): nothing more to do from here
        raise MountError(f"the daemon (pid {pid}) did not stop in {stop_timeout:.0f} s, nor when killed; see {log}")
    return (f"killed the daemon (pid {pid}), which did not stop in {stop_timeout:.0f} s (what it committed is "
            f"in the store; its log: {log})")


def _gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while registry.pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not registry.pid_alive(pid)


def mount_status(timeout: float = 3.0) -> list[dict[str, Any]]:
    """Every recorded mount with its health: ok, stopped, unresponsive, dead (mount left behind) or stale."""
    from recallfs.mount.control_client import ControlError, request

    out = []
    for state in registry.read_states():
        alive = registry.pid_alive(state.pid)
        mounted = registry.mount_type(Path(state.mountpoint)) is not None
        info: dict[str, Any] = {"mountpoint": state.mountpoint, "store": state.store, "pid": state.pid,
                                "principal": state.principal, "started_at": state.started_at, "log": state.log}
        stopped = registry.pid_stopped(state.pid) if alive else None
        if stopped is not None:  # it answers nothing until resumed, so nothing is asked of it
            info["health"] = (f"stopped: the daemon (pid {state.pid}) is {stopped}: `kill -CONT {state.pid}` "
                              f"resumes it, and `recallfs umount {state.mountpoint}` stops it")
        elif alive and mounted:
            try:
                reply = request(state.store, {"op": "ping"}, timeout=timeout)
            except (OSError, ControlError) as exc:
                reply, info["problem"] = None, str(exc)
            answers = registry.answers(Path(state.mountpoint), timeout)
            if reply is None or reply.get("pid") != state.pid:
                info["health"] = "unresponsive: the daemon does not answer on its control socket"
            elif answers is not None:
                info.update(health=f"failing: the mount does not answer ({answers})", detail=reply.get("health"))
            else:
                detail = reply.get("health") or {}
                verdict = detail.get("health") or {"state": "failing", "problems": ["the daemon reports no health"]}
                problems = "; ".join(verdict.get("problems") or [])
                info.update(health=verdict["state"] + (f": {problems}" if problems else ""),
                            uptime_s=reply.get("uptime_s"), detail=detail)
        elif mounted:
            info["health"] = f"dead: the daemon is gone; run `recallfs umount {state.mountpoint}`"
        else:
            info["health"] = "stale: neither daemon nor mount; record removed"
            registry.remove_state(Path(state.mountpoint), pid=state.pid)
        out.append(info)
    return out
