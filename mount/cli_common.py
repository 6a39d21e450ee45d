"""What several commands share: the store flags, the settings, the principal, opening the store."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from recallfs.mount.cli_errors import CliError
from recallfs.query import settings as settings_mod
from recallfs.query.lake_location import is_lake
from recallfs.query.settings import Settings


def store_args(p: argparse.ArgumentParser, *, workspace: bool = True, agent: bool = True) -> None:
    p.add_argument("--store", help="store path (RECALLFS_STORE; default ~/.local/share/recallfs/store.duckdb)")
    if workspace:
        p.add_argument("--workspace", help="ORG/WS to act on (RECALLFS_WORKSPACE)")
    if agent:
        p.add_argument("--agent", help="agent name (RECALLFS_AGENT)")


def resolve_settings(args: argparse.Namespace) -> Settings:
    """The settings, once: defaults, RECALLFS_* variables, then the flags."""
    overrides = {name: getattr(args, name, None) for name in ("store", "workspace", "agent")}
    return settings_mod.resolve(overrides)


def principal_from(cfg: Settings) -> Any:
    from recallfs.scope.principal import Principal, parse_workspace

    org, ws = parse_workspace(cfg.workspace)
    return Principal(org, ws, cfg.agent)


def store_path(cfg: Settings) -> Path:
    """The file the store is read from: the store itself, or this host's replica of a lake."""
    from recallfs.query.lake_location import LakeLocationError, parse_lake, replica_path

    if not is_lake(cfg.store):
        return Path(cfg.store).expanduser()
    try:
        return replica_path(parse_lake(cfg.store), cfg.replica_dir)
    except LakeLocationError as exc:
        raise CliError(str(exc)) from None


def backend_of(cfg: Settings, store: Any, *, embedder: Any = None) -> Any:
    """The store's backend (query/backend.py). A lake's replica first replays what the lake holds; an
    unreachable lake leaves it serving what it has, and recall says so."""
    from recallfs.query.backend import backend_for

    backend = backend_for(cfg.store)
    if not store.read_only:
        backend.attach(store, embedder=embedder)
    return backend


def open_store(cfg: Settings, *, create: bool = False, read_only: bool = False) -> Any:
    """Open the store (raises StoreError); a new one that fails half-made (a full disk leaves an empty file,
    which every later open refuses as "not a valid DuckDB database") is removed again."""
    from recallfs.query.diskspace import is_disk_full
    from recallfs.query.store import Store, StoreError, StoreLockedError

    path = store_path(cfg)
    if is_lake(cfg.store) and not read_only:
        create = True  # this host's replica, made on first use
    if create:
        store_dir_ready(cfg)
    existed = path.exists()
    try:
        return Store(path, create=create, read_only=read_only)
    except StoreLockedError:
        raise
    except StoreError as exc:
        if existed or not path.exists():
            raise
        for leftover in (path, path.with_name(path.name + ".wal")):
            leftover.unlink(missing_ok=True)
        if is_disk_full(exc):
            raise StoreError(f"the disk holding {path} is full: the store could not be created, nothing was "
                             "written; free some space and run the command again") from None
        raise


def store_dir_ready(cfg: Settings) -> None:
    """Only the default store's directory (~/.local/share/recallfs/) is made on demand: a --store or
    RECALLFS_STORE in a directory that does not exist is more likely a typo than a wish."""
    path = store_path(cfg)
    if path.parent.is_dir():
        return
    if path == Path(settings_mod.default_store()).expanduser() or is_lake(cfg.store):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # XDG_DATA_HOME names a file, or a place the caller may not write
            raise CliError(f"cannot create the store's directory {path.parent}: {exc.strerror}") from None
        return
    raise CliError(f"cannot create the store {path}: no directory {path.parent} (only the default store's "
                   "directory is created for you)")


def require_store(cfg: Settings) -> None:
    """Fail now, before the model starts loading, when the store is not there."""
    path = store_path(cfg)
    if not path.exists() and not is_lake(cfg.store):  # a replica is made on first use
        raise CliError(f"no store at {path}; create one with `recallfs init --store {path}`")


def start_warmup(cfg: Settings) -> None:
    """Begin loading the embedding model once the command's cheap checks passed, so it loads while
    the command reads its input. Never before: an error must not wait for torch."""
    from recallfs.query.shared_embedders import start_warmup as begin

    begin(cfg)


def embedder_for(cfg: Settings) -> Any:
    """The embedder these settings ask ingest to use (None when the semantic arm is off)."""
    from recallfs.query.shared_embedders import embedder_from_settings

    return embedder_from_settings(cfg) if cfg.semantic else None
