"""What the daemon opens, builds and warms before it serves (mount/daemon.py): the store, the semantic
arm, the views, the indexes and postings loaded ahead of the first recall, and the line that tells the
waiting `recallfs mount` it is ready."""

from __future__ import annotations

import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any

from recallfs.mount.mount_config import MountConfig
from recallfs.query.settings import Settings
from recallfs.scope.principal import Principal

log = logging.getLogger("recallfs.mount")


def make_ops(config: MountConfig, store: Any, semantic: Any) -> Any:
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
                        view_index=index, limiter=limiter, runs_held=cfg.recall_runs_held)

    if not config.uid_map:
        return view(config.principal)
    principals = {uid: replace(config.principal, agent=agent) for uid, agent in config.uid_map.items()}
    return build_views(store, principals, view)


class Ready:
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


def semantic_arm(settings: Settings) -> Any:
    """The semantic arm, loading its model in the background; None when unavailable (recall degrades)."""
    if not settings.semantic:
        return None
    try:
        from recallfs.query.semantic import SemanticSearch

        return SemanticSearch.from_settings(settings)
    except Exception:
        log.exception("the semantic arm could not be set up; recall runs lexically")
        return None


def warm(store: Any, schema: str | None, semantic: Any) -> None:
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


def attach_backend(backend: Any, store: Any) -> None:
    """A lake's replica replays what the lake holds before the mount serves (without embedding: the
    follow loop embeds once the model is up). An unreachable lake leaves the replica serving as it is."""
    if not store.read_only:
        backend.attach(store, embedder=None)


def owner_of(store: Path) -> str:
    from recallfs.mount.control_client import ControlError, request

    try:
        reply = request(store, {"op": "ping"}, timeout=5)
    except (OSError, ControlError):
        reply = None
    if reply is None:
        return "another process holds it (an ingest or a recall?); try again when it is done"
    return f"it is already mounted at {reply.get('mountpoint')} (pid {reply.get('pid')})"


def open_store(path: Path, threads: int) -> Any:
    """The daemon's store, read-write; read-only when its file system or file allows no more (browsing
    and recall work, ingest is refused, and health says why). `threads`: RECALLFS_SERVE_THREADS."""
    from recallfs.mount.concurrency import GuardedStore
    from recallfs.query.store import StoreReadOnlyError

    try:
        return GuardedStore(path, create=False, threads=threads)
    except StoreReadOnlyError as exc:
        log.warning("%s; serving it read-only (ingest is refused)", exc)
        return GuardedStore(path, create=False, read_only=True, threads=threads)
