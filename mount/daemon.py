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

import json
import logging
import os
import signal
import sys
import threading
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from recallfs.mount import process_setup, registry
from recallfs.mount.inbox_process import InboxProcess
from recallfs.query import collector
from recallfs.query.settings import Settings
from recallfs.scope.principal import Principal

log = logging.getLogger("recallfs.mount")
MOUNT_OPTIONS = ("default_permissions", "ro", "fsname=recallfs", "subtype=recallfs")


class MountError(RuntimeError):
    """A mount or unmount that cannot be done; the message says why and what to do."""


@dataclass(slots=True)
class MountConfig:
    mountpoint: Path
    store: Path
    principal: Principal
    settings: Settings
    foreground: bool = False
    ready_fd: int | None = None
    uid_map: dict[int, str] | None = None  # --map-uid: one view per agent, chosen by the caller's uid

    def who(self) -> str:
        if not self.uid_map:
            return str(self.principal)
        agents = ", ".join(f"uid {uid} as {agent}" for uid, agent in sorted(self.uid_map.items()))
        return f"{self.principal.workspace_path} ({agents}; other uids: EACCES)"

    def to_json(self) -> str:
        """What the daemon process needs to serve exactly this mount (`from_json`)."""
        p = self.principal
        return json.dumps({"mountpoint": str(self.mountpoint), "store": str(self.store),
                           "principal": [p.org, p.workspace, p.agent], "settings": asdict(self.settings),
                           "uid_map": {str(uid): agent for uid, agent in (self.uid_map or {}).items()}})

    @classmethod
    def from_json(cls, text: str, ready_fd: int | None) -> MountConfig:
        raw = json.loads(text)
        return cls(Path(raw["mountpoint"]), Path(raw["store"]), Principal(*raw["principal"]),
                   Settings(**raw["settings"]), foreground=True, ready_fd=ready_fd,
                   uid_map={int(uid): agent for uid, agent in raw["uid_map"].items()} or None)


def _make_ops(config: MountConfig, store: Any, semantic: Any) -> Any:
    """The Operations object: one view for one principal, or a router over one view per mapped agent."""
    from dataclasses import replace

    from recallfs.mount.browse import Browser
    from recallfs.mount.operations import MountOps
    from recallfs.mount.views import build_views

    cfg = config.settings
    # k, and the ranking settings (weights, stages, rrf_k, candidates) every recall/ directory uses
    ranking = cfg.ranking()

    def view(principal: Principal, index: int = 0, limiter: Any = None) -> MountOps:
        browser = Browser(store, principal, max_rows=cfg.max_rows, mountpoint=str(config.mountpoint),
                          k=cfg.k, ranking=ranking, semantic=semantic)
        return MountOps(store, browser, recall_ttl=float(cfg.recall_ttl_s), semantic=semantic,
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


def _semantic_arm(settings: Settings) -> Any:
    """The semantic arm, loading its model in the background; None when unavailable (recall degrades)."""
    if not settings.semantic:
        return None
    try:
        from recallfs.query.semantic import SemanticSearch

        return SemanticSearch.from_settings(settings)
    except Exception:
        log.exception("the semantic arm could not be set up; recall runs lexically")
        return None


def _warm(store: Any, schema: str | None, semantic: Any) -> None:
    """Load, ahead of the first recall, the partition's vector indexes and its BM25 postings on background
    threads beside the model's load (the semantic arm says `warming` until both are in); then export the
    fast query graph (query/query_encoder.py: ~2 s of CPU), which beside them delayed hybrid-ready at 1M
    memories by ~1.3 s. Recalls before it embed their query through the stock model."""
    from recallfs.query.lexical import warm

    def postings() -> None:
        try:
            if schema is not None:
                warm(store, schema)
        except Exception:
            log.exception("could not load the full-text postings ahead of the first recall")

    if semantic is None:
        threading.Thread(target=postings, name="recallfs-lexical-warm", daemon=True).start()
        return
    semantic.warm_indexes(store, schema, then=postings)
    if semantic.embedder is not None:
        def query_graph() -> None:
            semantic.wait_indexes()
            semantic.embedder.serve_queries()  # a long-lived process: trace the query graph once loaded

        threading.Thread(target=query_graph, name="recallfs-query-graph", daemon=True).start()


def _owner_of(store: Path) -> str:
    from recallfs.mount.control_client import ControlError, request

    try:
        reply = request(store, {"op": "ping"}, timeout=5)
    except (OSError, ControlError):
        reply = None
    if reply is None:
        return "another process holds it (an ingest or a recall?); try again when it is done"
    return f"it is already mounted at {reply.get('mountpoint')} (pid {reply.get('pid')})"


def _open_store(path: Path, threads: int) -> Any:
    """The daemon's store, read-write; read-only when its file system or file allows no more (browsing
    and recall work, ingest is refused, and health says why). `threads`: RECALLFS_SERVE_THREADS."""
    from recallfs.mount.concurrency import GuardedStore
    from recallfs.query.store import StoreReadOnlyError

    try:
        return GuardedStore(path, create=False, threads=threads)
    except StoreReadOnlyError as exc:
        log.warning("%s; serving it read-only (ingest is refused)", exc)
        return GuardedStore(path, create=False, read_only=True, threads=threads)


def serve(config: MountConfig) -> int:
    """Run the daemon in this process until a signal or an unmount."""
    import pyfuse3
    import trio

    from recallfs.query.fts_freshness import repair_fts
    from recallfs.query.store import StoreError, StoreLockedError

    cfg = config.settings
    process_setup.limit_malloc_arenas()  # before any thread starts
    process_setup.configure_logging(cfg.log_level)
    ready = _Ready(config.ready_fd)
    mountpoint = str(config.mountpoint)
    sock_path = registry.socket_path(config.store)
    try:
        store = _open_store(config.store, cfg.serve_threads)
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
        schema = store.schema_for(config.principal)
        _warm(store, schema, semantic)  # beside the model's load: hybrid-ready without a slow first recall
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
    control = _record(config, ops, sock_path)
    collector.tune_gc()
    code = 0
    try:
        inbox = InboxProcess(config.store, config.mountpoint, cfg.inbox_max_bytes,
                             allow_other=bool(config.uid_map), log_path=registry.log_path(config.mountpoint))
        trio.run(_run, ops, control, sock_path, ready, f"{mountpoint} for {config.who()}", inbox)
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


def _record(config: MountConfig, ops: Any, sock_path: Path) -> Any:
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
                         uid_map=config.uid_map, principal=p)


async def _run(ops: Any, control: Any, sock_path: Path, ready: _Ready, what: str, inbox: Any) -> None:
    import trio

    ops.store.loop_thread = threading.get_ident()
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        await nursery.start(control.serve, sock_path)
        nursery.start_soon(_watch_signals, stop)
        nursery.start_soon(_poll_state, ops)
        await ops.refresh_semantic()
        nursery.start_soon(_serve_fuse, stop)
        if inbox is not None:  # mounted over inbox/ while this loop serves the lookup it makes
            problem = await inbox.start()
            if problem:
                log.error("inbox/ stays read-only: %s", problem)
        ready.ok()
        log.info("serving %s", what)
        await stop.wait()
        if inbox is not None:  # unmounted first, while this loop still serves (it is under the mount)
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
