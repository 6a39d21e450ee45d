"""The mount's life cycle: mount, serve, unmount, recover, report.

`recallfs mount [--store S] [--workspace ORG/WS] [--agent NAME] MOUNTPOINT [--foreground]`

- The command checks the mount point first (a dead mount left by a crash is detached), then, unless
  --foreground, starts the daemon in a new session (`python -m recallfs.mount.cli mount --foreground
  --ready-fd N ...`, logging to the runtime directory) and returns once the daemon says the mount is
  ready, or prints why it is not.
- The daemon opens the store (it owns it from then on), mounts, records itself in a state file,
  and serves FUSE requests and the control socket on one trio loop.
- SIGTERM, SIGINT and SIGHUP stop it in order: stop serving, unmount, close the store, remove the state
  file and the socket. `recallfs umount` sends SIGTERM; for a dead mount it detaches it (fusermount3 -uz).
- The daemon never looks at its own mount point once mounted (that would deadlock against itself).

Exit codes: 0 mounted / clean unmount; 1 an error explained on stderr or in the daemon's log.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from recallfs.mount import registry
from recallfs.scope.principal import Principal

log = logging.getLogger("recallfs.mount")
READY_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 30.0
MOUNT_OPTIONS = ("default_permissions", "ro", "fsname=recallfs", "subtype=recallfs")


class MountError(RuntimeError):
    """A mount or unmount that cannot be done; the message says why and what to do."""


@dataclass(slots=True)
class MountConfig:
    mountpoint: Path
    store: Path
    principal: Principal
    settings: dict[str, Any]
    foreground: bool = False
    ready_fd: int | None = None
    uid_map: dict[int, str] | None = None  # --map-uid: one view per agent, chosen by the caller's uid


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
    p = config.principal
    cmd = [sys.executable, "-m", "recallfs.mount.cli", "mount", "--foreground", "--ready-fd", str(write_fd),
           "--store", str(config.store), "--workspace", f"{p.org}/{p.workspace}", "--agent", p.agent,
           str(config.mountpoint)]
    for uid, agent in sorted((config.uid_map or {}).items()):
        cmd += ["--map-uid", f"{uid}={agent}"]
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
        print(f"mounted {config.store} at {config.mountpoint} as {_who(config)} (pid {proc.pid}; "
              f"log {log_file})")
        return 0
    if proc.poll() is None and not text:
        proc.terminate()
        raise MountError(f"the daemon did not become ready in {READY_TIMEOUT_S:.0f} s; see {log_file}")
    raise MountError((text.removeprefix("error: ") or f"the daemon exited ({proc.poll()})") + f"; log: {log_file}")


def _who(config: MountConfig) -> str:
    if not config.uid_map:
        return str(config.principal)
    agents = ", ".join(f"uid {uid} as {agent}" for uid, agent in sorted(config.uid_map.items()))
    return f"{config.principal.workspace_path} ({agents}; other uids: EACCES)"


def _make_ops(config: MountConfig, store: Any, semantic: Any) -> Any:
    """The Operations object: one view for one principal, or a router over one view per mapped agent."""
    from dataclasses import replace

    from recallfs.mount.browse import Browser
    from recallfs.mount.operations import MountOps
    from recallfs.mount.views import build_views
    from recallfs.query.settings import ranking_kwargs

    cfg = config.settings
    # k, and the ranking settings (weights, stages, rrf_k, candidates) every recall/ directory uses
    recall_settings = {"k": cfg["k"], **ranking_kwargs(cfg)}

    def view(principal: Principal, index: int = 0, limiter: Any = None) -> MountOps:
        browser = Browser(store, principal, max_rows=int(cfg["max_rows"]), mountpoint=str(config.mountpoint),
                          recall_settings=recall_settings, semantic=semantic)
        return MountOps(store, browser, recall_ttl=float(cfg["recall_ttl_s"]), semantic=semantic,
                        view_index=index, limiter=limiter)

    if not config.uid_map:
        return view(config.principal)
    principals = {uid: replace(config.principal, agent=agent) for uid, agent in config.uid_map.items()}
    return build_views(store, principals, view)


class _Ready:
    """Tells the waiting `recallfs mount` (through --ready-fd) that the mount is ready, or why not."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd

    def _send(self, text: str) -> None:
        if self.fd is None:
            print(f"recallfs mount: {text}", file=sys.stderr)
            return
        try:
            os.write(self.fd, text.encode() + b"\n")
            os.close(self.fd)
        except OSError:
            pass
        self.fd = None

    def ok(self) -> None:
        self._send("ready")

    def fail(self, message: str) -> None:
        self._send(f"error: {message}")


def _configure_logging(level: str) -> None:
    root = logging.getLogger()
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
    for handler in root.handlers:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.getLogger("pyfuse3").setLevel(logging.WARNING)


def _limit_malloc_arenas(arenas: int = 2) -> None:
    """glibc gives every thread that allocates its own malloc arena; DuckDB's, FAISS's and torch's
    threads then keep hundreds of MB of freed memory resident. Two arenas bound that (a known glibc
    behaviour; MALLOC_ARENA_MAX does the same from the environment). Harmless elsewhere."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(-8, arenas)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass


def _semantic_arm(settings: dict[str, Any]) -> Any:
    """The semantic arm, loading its model in the background; None when unavailable (recall degrades)."""
    if not settings.get("semantic", True):
        return None
    try:
        from recallfs.query.semantic import SemanticSearch

        return SemanticSearch.from_settings(settings)
    except Exception:
        log.exception("the semantic arm could not be set up; recall runs lexically")
        return None


def _owner_of(store: Path) -> str:
    from recallfs.mount.control import ControlError, request

    try:
        reply = request(store, {"op": "ping"}, timeout=5)
    except (OSError, ControlError):
        reply = None
    if reply is None:
        return "another process holds it (an ingest or a recall?); try again when it is done"
    return f"it is already mounted at {reply.get('mountpoint')} (pid {reply.get('pid')})"


def _open_store(path: Path) -> Any:
    """The daemon's store, read-write; read-only when its file system or file allows no more (browsing
    and recall work, ingest is refused, and health says why)."""
    from recallfs.mount.concurrency import GuardedStore
    from recallfs.query.store import StoreReadOnlyError

    try:
        return GuardedStore(path, create=False)
    except StoreReadOnlyError as exc:
        log.warning("%s; serving it read-only (ingest is refused)", exc)
        return GuardedStore(path, create=False, read_only=True)


def serve(config: MountConfig) -> int:
    """Run the daemon in this process until a signal or an unmount."""
    import pyfuse3
    import trio

    from recallfs.mount.control import ControlServer
    from recallfs.query.fts_freshness import repair_fts
    from recallfs.query.store import StoreError, StoreLockedError

    cfg = config.settings
    _limit_malloc_arenas()  # before any thread starts
    _configure_logging(str(cfg.get("log_level", "info")))
    ready = _Ready(config.ready_fd)
    mountpoint = str(config.mountpoint)
    sock_path = registry.socket_path(config.store)
    try:
        store = _open_store(config.store)
    except StoreLockedError:
        ready.fail(f"cannot mount {config.store}: {_owner_of(config.store)}. One store is served by one "
                   "daemon (DuckDB lets one process open it); to give several agents their own views, mount "
                   "it once with --map-uid UID=AGENT for each")
        return 1
    except StoreError as exc:
        ready.fail(str(exc))
        return 1
    try:
        if not store.read_only:
            repair_fts(store)  # an ingest killed after its commit left rows outside the full-text index
        semantic = _semantic_arm(cfg)
        ops = _make_ops(config, store, semantic)
        sock_path.unlink(missing_ok=True)  # stale: a live daemon would hold the store, and we do
        # allow_other lets the mapped users in; default_permissions (always on) makes the kernel check
        # the mode bits, which are read-only for everyone.
        options = set(MOUNT_OPTIONS) | ({"allow_other"} if config.uid_map else set())
        pyfuse3.init(ops, mountpoint, options)
    except Exception as exc:
        log.exception("mount failed")
        store.close()
        ready.fail(f"cannot mount {mountpoint}: {exc}")
        return 1
    p = config.principal
    agent = p.agent if not config.uid_map else "uid-mapped: " + ", ".join(
        f"{uid}={a}" for uid, a in sorted(config.uid_map.items()))
    state = registry.MountState(
        pid=os.getpid(), mountpoint=mountpoint, store=str(config.store), org=p.org, workspace=p.workspace,
        agent=agent, socket=str(sock_path), log=str(registry.log_path(config.mountpoint)),
        started_at=datetime.now().isoformat(timespec="seconds"),
    )
    registry.write_state(state)
    control = ControlServer(ops, {"pid": state.pid, "mountpoint": mountpoint, "store": state.store,
                                  "principal": p.workspace_path, "agent": agent}, cfg,
                            uid_map=config.uid_map, principal=p)
    code = 0
    try:
        trio.run(_run, ops, control, sock_path, ready, f"{mountpoint} for {_who(config)}")
        log.info("unmounting %s", mountpoint)
    except BaseException:
        log.exception("the daemon stopped on an error")
        code = 1
    finally:
        pyfuse3.close(unmount=True)
        sock_path.unlink(missing_ok=True)
        registry.remove_state(config.mountpoint, pid=os.getpid())
        store.close()
    return code


async def _run(ops: Any, control: Any, sock_path: Path, ready: _Ready, what: str) -> None:
    import pyfuse3
    import trio

    ops.store.loop_thread = threading.get_ident()
    async with trio.open_nursery() as nursery:
        await nursery.start(control.serve, sock_path)
        nursery.start_soon(_watch_signals, nursery.cancel_scope)
        nursery.start_soon(_poll_state, ops)
        await ops.refresh_semantic()
        ready.ok()
        log.info("serving %s", what)
        await pyfuse3.main(min_tasks=4)
        # main() returns when the kernel ends the session (an unmount from outside): stop the rest.
        nursery.cancel_scope.cancel()


async def _watch_signals(scope: Any) -> None:
    import trio

    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async for signum in signals:
            log.info("received %s: unmounting", signal.Signals(signum).name)
            scope.cancel()
            return


async def _poll_state(ops: Any) -> None:
    """Once a second: the semantic arm's state and the health verdict (each invalidates what shows it)."""
    import trio

    while True:
        await trio.sleep(1.0)
        try:
            await ops.refresh_semantic()
            await ops.refresh_health()
        except Exception:
            log.exception("could not refresh the daemon's state")


# -- umount and status ----------------------------------------------------------------------------------
def unmount(mountpoint: Path) -> str:
    """Stop the daemon (SIGTERM, which unmounts), or detach a dead mount. Returns what was done."""
    state = registry.read_state(mountpoint)
    done = []
    if state is not None and registry.pid_alive(state.pid):
        os.kill(state.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while registry.pid_alive(state.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if registry.pid_alive(state.pid):
            raise MountError(f"the daemon (pid {state.pid}) did not stop in {STOP_TIMEOUT_S:.0f} s; "
                             f"see {state.log}")
        done.append(f"stopped the daemon (pid {state.pid})")
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


def mount_status(timeout: float = 3.0) -> list[dict[str, Any]]:
    """Every recorded mount with its health: ok, unresponsive, dead (mount left behind) or stale."""
    from recallfs.mount.control import ControlError, request

    out = []
    for state in registry.read_states():
        alive = registry.pid_alive(state.pid)
        mounted = registry.mount_type(Path(state.mountpoint)) is not None
        info: dict[str, Any] = {"mountpoint": state.mountpoint, "store": state.store, "pid": state.pid,
                                "principal": state.principal, "started_at": state.started_at, "log": state.log}
        if alive and mounted:
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
