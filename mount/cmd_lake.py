"""The lake commands: `migrate` (a single-file store into a DuckLake store and back) and `compact`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from recallfs.mount.cli_common import embedder_for, resolve_settings, start_warmup
from recallfs.mount.cli_errors import EXIT_OK, CliError
from recallfs.query.lake_location import is_lake


def register(sub: Any) -> None:
    p = sub.add_parser("migrate", help="copy a single-file store into a DuckLake store (every version and "
                       "policy, one transaction), or a lake into a new single-file store")
    p.add_argument("--from", dest="source", required=True, help="a store path or a ducklake: URL")
    p.add_argument("--to", dest="target", required=True, help="a ducklake: URL, or the path of a new store")
    p.set_defaults(run=cmd_migrate)

    p = sub.add_parser("compact", help="a lake: move small inlined inserts out of PostgreSQL and merge small "
                       "Parquet files (snapshots are kept)")
    p.add_argument("--store", help="the ducklake: URL (RECALLFS_STORE)")
    p.set_defaults(run=cmd_compact)


def _lake(url: str) -> Any:
    from recallfs.query.lake import Lake
    from recallfs.query.lake_location import LakeLocationError, parse_lake

    try:
        return Lake(parse_lake(url))
    except LakeLocationError as exc:
        raise CliError(str(exc)) from None


def cmd_migrate(args: argparse.Namespace) -> int:
    from recallfs.query.lake_migrate import file_to_lake, lake_to_file
    from recallfs.query.store import Store

    if is_lake(args.source) == is_lake(args.target):
        raise CliError("migrate copies between a single-file store and a lake: one of --from and --to must be a "
                       "ducklake: URL, the other a store path")
    if is_lake(args.target):
        lake = _lake(args.target)
        try:
            with Store(Path(args.source).expanduser(), create=False) as store:
                done = file_to_lake(store, lake)
        finally:
            lake.close()
        print(f"migrated {args.source} into {lake.location.describe()}: {done.memories} memory versions and "
              f"{done.policies} policies in lake snapshot {done.snapshot}")
        return EXIT_OK
    target = Path(args.target).expanduser()
    if target.exists():
        raise CliError(f"{target} exists: migrate writes a new store, choose another path")
    if not target.parent.is_dir():
        raise CliError(f"cannot create the store {target}: no directory {target.parent}")
    cfg = resolve_settings(argparse.Namespace(store=str(target), workspace=None, agent=None))
    start_warmup(cfg)
    lake = _lake(args.source)
    try:
        with Store(target, create=True) as store:
            done = lake_to_file(lake, store, embedder=embedder_for(cfg))
    except BaseException:
        for leftover in (target, target.with_name(target.name + ".wal")):
            leftover.unlink(missing_ok=True)  # all or nothing: no half-made store is left
        raise
    finally:
        lake.close()
    print(f"migrated {lake.location.describe()} (snapshot {done.snapshot}) into {target}: {done.memories} memory "
          f"versions and {done.policies} policies")
    return EXIT_OK


def cmd_compact(args: argparse.Namespace) -> int:
    cfg = resolve_settings(args)
    if not is_lake(cfg.store):
        raise CliError(f"{cfg.store} is a single-file store; compact is for a ducklake: store")
    lake = _lake(cfg.store)
    try:
        lake.compact()
    finally:
        lake.close()
    print(f"compacted {lake.location.describe()}")
    return EXIT_OK
