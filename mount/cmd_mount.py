"""The mount commands: `mount`, `umount`, and `status` (the store's and the live mounts' state)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from recallfs.mount.cli_common import open_store, principal_from, resolve_settings, store_args, store_path
from recallfs.mount.cli_errors import EXIT_OK, CliError
from recallfs.query.lake_location import is_lake, mask_secrets
from recallfs.query.settings import chosen


def register(sub: Any) -> None:
    p = sub.add_parser("status", help="report the store's and the live mounts' state")
    store_args(p, agent=False)
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_status)

    p = sub.add_parser("mount", help="mount the store as a filesystem (read-only; see index.md inside)",
                       description="Mount the store at MOUNTPOINT for one principal (--workspace, --agent). "
                       "Returns once the mount is ready; the daemon runs in the background and owns the store "
                       "(`recallfs ingest` and `recallfs recall` reach it through its control socket).")
    store_args(p)
    p.add_argument("mountpoint", type=Path)
    p.add_argument("--map-uid", action="append", default=[], metavar="UID=AGENT",
                   help="serve several agents of --workspace, chosen by the caller's uid (repeatable; UID may "
                   "be a user name); mounts with allow_other, and any other uid gets EACCES")
    p.add_argument("--foreground", action="store_true", help="stay in the foreground (logs to stderr)")
    p.add_argument("--ready-fd", type=int, help=argparse.SUPPRESS)  # the daemon reports readiness here
    p.set_defaults(run=cmd_mount)

    p = sub.add_parser("umount", help="unmount (also cleans up a dead mount)",
                       description="Stop the mount's daemon, which unmounts cleanly; a dead mount left by a "
                       "crash (\"Transport endpoint is not connected\") is detached.")
    p.add_argument("mountpoint", type=Path)
    p.set_defaults(run=cmd_umount)


def cmd_mount(args: argparse.Namespace) -> int:
    from recallfs.mount.lifecycle import mount
    from recallfs.mount.mount_config import MountConfig
    from recallfs.mount.registry import canonical, canonical_store
    from recallfs.mount.views import parse_uid_map

    cfg = resolve_settings(args)
    cfg.ranking()  # a bad ranking setting stops the mount here, not at its first recall
    try:
        uid_map = parse_uid_map(args.map_uid)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if is_lake(cfg.store) and not store_path(cfg).exists():
        with open_store(cfg, create=True):  # this host's replica; the daemon replays the lake into it
            pass
    config = MountConfig(
        mountpoint=canonical(args.mountpoint), store=canonical_store(store_path(cfg)), principal=principal_from(cfg),
        settings=cfg, foreground=args.foreground, ready_fd=args.ready_fd, uid_map=uid_map or None,
    )
    return mount(config)


def cmd_umount(args: argparse.Namespace) -> int:
    from recallfs.mount.lifecycle import unmount
    from recallfs.mount.registry import canonical

    print(unmount(canonical(args.mountpoint)))
    return EXIT_OK


def cmd_status(args: argparse.Namespace) -> int:
    from recallfs.mount.control_client import ControlError, open_unless_mounted, request
    from recallfs.mount.lifecycle import mount_status

    cfg = resolve_settings(args)
    # absolute, as each mount's `store` is, so that a script can match them (`--store rel.duckdb`)
    shown = mask_secrets(str(cfg.store)) if is_lake(cfg.store) else os.path.abspath(store_path(cfg))
    info: dict[str, Any] = {"store": shown, "exists": store_path(cfg).exists()}
    problem = None
    if info["exists"]:
        try:  # a mounted store is held by its daemon: ask it
            reply = request(store_path(cfg), {"op": "counts"}, timeout=30)
        except ControlError as exc:
            reply, problem = None, str(exc)
        if reply is not None:
            info["workspaces"], info["held_by"] = reply["workspaces"], "a mount daemon"
        elif problem is None:
            store = open_unless_mounted(store_path(cfg), lambda: open_store(cfg, read_only=True))
            if store is not None:
                with store:
                    info["workspaces"] = {
                        f"{o}/{w}": store.table_counts(store.partition(o, w)) for o, w in store.workspaces()
                    }
    elif is_lake(cfg.store):  # the lake may well exist: this host has not joined it yet
        problem = (f"this host has no copy of the lake yet ({store_path(cfg)}); `recallfs init` with this "
                   "--store (or RECALLFS_STORE) makes one and checks that the lake answers, and `recallfs mount` "
                   "or `recallfs ingest` make one too")
    elif chosen("store", args.store):  # the default store need not exist to list mounts
        path = store_path(cfg)
        problem = f"no store at {path}; create one with `recallfs init --store {path}`"
    info["mounts"] = mount_status()  # listed all the same: they say which daemon is in trouble
    _print_status(info, as_json=args.json)
    if problem:
        raise CliError(problem)
    return EXIT_OK


def _print_status(info: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(info, indent=2, default=str))
        return
    print(f"store: {info['store']}{'' if info['exists'] else ' (missing)'}")
    for ws, counts in info.get("workspaces", {}).items():
        print(f"  {ws}: " + ", ".join(_counted(n, t) for t, n in counts.items()))
    # the mounts this user started (its runtime directory): another user's daemon may still hold the store
    print("mounts:" if info["mounts"] else f"mounts: none started by uid {os.getuid()}")
    for m in info["mounts"]:
        line = f"  {m['mountpoint']}: {m['health']}; store {m['store']}, {m['principal']}, pid {m['pid']}"
        detail = m.get("detail") or {}
        if detail:
            line += (f", up {m.get('uptime_s')} s, {detail.get('requests', 0)} requests, "
                     f"{detail.get('unexpected_errors', 0)} errors, recall "
                     + (f"degraded: {detail.get('degraded_reason')}" if detail.get("degraded") else "hybrid")
                     + (f" (query embedding {detail['query_embedding']})" if detail.get("query_embedding") else ""))
        print(line)


def _counted(n: int, table: str) -> str:
    """`1 fact`, `2 facts`, `1 summary`: the table's name in the singular for one."""
    return f"{n:,} {table}" if n != 1 else f"1 {_SINGULAR.get(table, table)}"


_SINGULAR = {"facts": "fact", "summaries": "summary", "turns": "turn"}
