"""The daemon: it opens the store (and owns it from then on), mounts, records itself in a state file,
and serves FUSE requests and the control socket on one trio loop until a signal or an unmount.

`recallfs mount` (mount/lifecycle.py) starts it as `python -m recallfs.mount.daemon --ready-fd N CONFIG`,
CONFIG being the MountConfig as JSON (the settings the command resolved), or runs `serve` in its own
process with --foreground.

- SIGTERM, SIGINT and SIGHUP stop it in order: stop serving, unmount, close the store, remove the state
  file and the socket. `recallfs umount` sends SIGTERM; for a dead mount it detaches it (fusermount3 -uz).
- The daemon never looks at its own mount point once mounted (that would deadlock against itself).

Exit codes: 0 mounted / clean unmount; 1 an error explained on stderr or in the daemon's log.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

from recallfs.mount import process_setup, registry
from recallfs.mount.daemon_start import Ready, attach_backend, make_ops, open_store, owner_of, semantic_arm, warm
from recallfs.mount.inbox_process import InboxProcess
from recallfs.mount.mount_config import MountConfig
from recallfs.query import collector

log = logging.getLogger("recallfs.mount")
MOUNT_OPTIONS = ("default_permissions", "ro", "fsname=recallfs", "subtype=recallfs")


def serve(config: MountConfig) -> int:
    """Run the daemon in this process until a signal or an unmount."""
    import pyfuse3
    import trio

    from recallfs.query.backend import backend_for
    from recallfs.query.fts_freshness import repair_fts
    from recallfs.query.store import StoreError, StoreLockedError

    cfg = config.settings
    process_setup.limit_malloc_arenas()  # before any thread starts
    process_setup.configure_logging(cfg.log_level)
    ready = Ready(config.ready_fd)
    mountpoint = str(config.mountpoint)
    sock_path = registry.socket_path(config.store)
    try:
        store = open_store(config.store, cfg.serve_threads)
    except StoreLockedError:
        ready.fail(f"cannot mount {config.store}: {owner_of(config.store)}. One store is served by one "
                   "daemon (DuckDB lets one process open it); to give several agents their own views, mount "
                   "it once with --map-uid UID=AGENT for each")
        return 1
    except StoreError as exc:
        ready.fail(str(exc))
        return 1
    backend = backend_for(cfg.store)
    try:
        if not store.read_only:
            repair_fts(store)  # an ingest killed after its commit left rows outside the full-text index
        attach_backend(backend, store)
        semantic = semantic_arm(cfg)
        schema = store.schema_for(config.principal)
        warm(store, schema, semantic)  # beside the model's load: hybrid-ready without a slow first recall
        ops = make_ops(config, store, semantic)
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
    control = _record(config, ops, sock_path, backend)
    collector.tune_gc()
    code = 0
    try:
        inbox = InboxProcess(config.store, config.mountpoint, cfg.inbox_max_bytes,
                             allow_other=bool(config.uid_map), log_path=registry.log_path(config.mountpoint))
        trio.run(_run, ops, control, sock_path, ready, f"{mountpoint} for {config.who()}", inbox, backend)
        log.info("unmounting %s", mountpoint)
    except BaseException:
        log.exception("the daemon stopped on an error")
        code = 1
    finally:
        pyfuse3.close(unmount=True)
        sock_path.unlink(missing_ok=True)
        registry.remove_state(config.mountpoint, pid=os.getpid())
        backend.close()
        store.close()
    return code


def _record(config: MountConfig, ops: Any, sock_path: Path, backend: Any) -> Any:
    """Record this mount in its state file (for `recallfs status`), and make its control server."""
    from recallfs.mount.control import ControlServer

    p, mountpoint = config.principal, str(config.mountpoint)
    agent = p.agent if not config.uid_map else "uid-mapped: " + ", ".join(
        f"{uid}={a}" for uid, a in sorted(config.uid_map.items()))
    state = registry.MountState(
        pid=os.getpid(), mountpoint=mountpoint, store=str(config.store), org=p.org, workspace=p.workspace,
        agent=agent, socket=str(sock_path), log=str(registry.log_path(config.mountpoint)),
        started_at=datetime.now().isoformat(timespec="seconds"),
    )
    registry.write_state(state)
    return ControlServer(ops, {"pid": state.pid, "mountpoint": mountpoint, "store": state.store,
                               "principal": p.workspace_path, "agent": agent}, config.settings,
                         uid_map=config.uid_map, principal=p, backend=backend)


async def _run(ops: Any, control: Any, sock_path: Path, ready: Ready, what: str, inbox: Any, backend: Any) -> None:
    import trio

    from recallfs.mount.lake_follow import follow_lake
    from recallfs.mount.vector_backlog import VectorBacklog, keep_embedding

    ops.store.loop_thread = threading.get_ident()
    stop = trio.Event()
    backlog = VectorBacklog()
    ops.report("vectors", backlog.state)
    control.backlog = backlog  # a large write leaves the rest of its rows to it
    async with trio.open_nursery() as nursery:
        await nursery.start(control.serve, sock_path)
        nursery.start_soon(_watch_signals, stop)
        nursery.start_soon(_poll_state, ops)
        if backend.kind == "ducklake":  # embeds its backlog first
            nursery.start_soon(follow_lake, ops, backend, control.embedder(), backlog)
        await ops.refresh_semantic()
        nursery.start_soon(_serve_fuse, stop)
        if inbox is not None:  # mounted over inbox/ while this loop serves the lookup it makes
            ops.report("inbox", inbox.state)
            problem = await inbox.start()
            if problem:
                log.error("inbox/ stays read-only: %s", problem)
            nursery.start_soon(inbox.keep)
        ready.ok()
        log.info("serving %s", what)
        if backend.kind != "ducklake":  # rows an ingest stopped before embedding, and a large write's rest
            nursery.start_soon(keep_embedding, ops, control.embedder(), backlog)
        await stop.wait()
        if inbox is not None:  # unmounted first, while this loop still serves (it is under the mount)
            inbox.unwatch()
            await trio.to_thread.run_sync(inbox.stop)
        nursery.cancel_scope.cancel()


async def _serve_fuse(stop: Any) -> None:
    import pyfuse3

    await pyfuse3.main(min_tasks=4)
    stop.set()  # main() returns when the kernel ends the session (an unmount from outside)


async def _watch_signals(stop: Any) -> None:
    import trio

    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async for signum in signals:
            log.info("received %s: unmounting", signal.Signals(signum).name)
            stop.set()
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


def main(argv: list[str] | None = None) -> int:
    """`python -m recallfs.mount.daemon --ready-fd N CONFIG`: what `recallfs mount` starts."""
    import argparse

    parser = argparse.ArgumentParser(prog="recallfs-daemon")
    parser.add_argument("--ready-fd", type=int)
    parser.add_argument("config", help="the MountConfig as JSON")
    args = parser.parse_args(argv)
    return serve(MountConfig.from_json(args.config, args.ready_fd))


if __name__ == "__main__":
    sys.exit(main())
