"""The store commands: `init`, `ingest`, `reindex`, `policy`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from recallfs.mount.cli_common import (
    backend_of,
    embedder_for,
    open_store,
    principal_from,
    resolve_settings,
    start_warmup,
    store_args,
    store_dir_ready,
    store_path,
)
from recallfs.mount.cli_errors import EXIT_OK, CliError
from recallfs.mount.cli_output import note, stderr_is_tty
from recallfs.mount.staged_input import staged_input
from recallfs.query.lake_location import is_lake
from recallfs.query.settings import Settings, chosen


def register(sub: Any) -> None:
    p = sub.add_parser("init", help="create a store")
    store_args(p, workspace=False, agent=False)
    p.set_defaults(run=cmd_init)

    p = sub.add_parser("ingest", help="load memories from a file (one transaction; idempotent)")
    store_args(p)
    p.add_argument("--format", default="jsonl", choices=["jsonl", "locomo"], help="importer (default jsonl)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")
    p.add_argument("file", type=Path, help="the file; - (or a pipe) reads standard input")
    p.set_defaults(run=cmd_ingest)

    p = sub.add_parser("reindex", help="rebuild the full-text indexes; re-embed memories with the configured model; "
                       "rebuild FAISS indexes")
    store_args(p, workspace=False, agent=False)
    p.add_argument("--force", action="store_true", help="re-embed every memory, even those already embedded")
    p.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")
    p.set_defaults(run=cmd_reindex)

    p = sub.add_parser("policy", help="policies: which memories an agent may read in a workspace, and whether it "
                       "may write through inbox/")
    psub = p.add_subparsers(dest="policy_command", required=True, metavar="ACTION")
    q = psub.add_parser("set", help="store the policy of --agent in --workspace (replaces the old one)")
    store_args(q)
    q.add_argument("--authors", action="append", default=[],
                   help="authors it may read, comma-separated; '*' or omitted: all (its own always)")
    q.add_argument("--visibility", action="append", default=[],
                   help="visibilities it may read: workspace, private (default workspace)")
    q.add_argument("--deny-kind", action="append", default=[], help="kinds it may not read")
    q.add_argument("--deny-tag", action="append", default=[], help="tags it may not read")
    q.add_argument("--deny-writes", action="store_true",
                   help="it may not remember by writing to the mount's inbox/ (its writes get EACCES)")
    for name, text in (("show", "print the policy in force for --agent"), ("rm", "remove it (back to default)"),
                       ("list", "list the stored policies of --workspace")):
        q = psub.add_parser(name, help=text)
        store_args(q)
    p.set_defaults(run=cmd_policy)


def cmd_init(args: argparse.Namespace) -> int:
    cfg = resolve_settings(args)
    existed = store_path(cfg).exists()
    with open_store(cfg, create=True) as store:
        if is_lake(cfg.store):
            return _init_lake(cfg, store)
    print(f"{'store ready' if existed else 'created store'}: {cfg.store}")
    return EXIT_OK


def _init_lake(cfg: Settings, store: Any) -> int:
    """Make the lake's tables if it has none, and this host's replica of it; the lake must answer."""
    backend = backend_of(cfg, store)
    try:
        if backend.unreachable:
            raise CliError(backend.unreachable)
        print(f"lake ready: {backend.location.describe()} at snapshot {backend.snapshot}; this host's replica: "
              f"{store.path}")
    finally:
        backend.close()
    return EXIT_OK


def _ingest_principal(args: argparse.Namespace, cfg: Settings) -> tuple[str, str, str]:
    from recallfs.scope.principal import check_name, parse_workspace

    if args.format == "locomo" and not chosen("workspace", args.workspace):
        org, ws = "locomo", "unused"  # each conversation names its own workspace
    else:
        org, ws = parse_workspace(cfg.workspace)
    return org, ws, check_name("agent", cfg.agent)


def cmd_ingest(args: argparse.Namespace) -> int:
    with staged_input(args.file) as path:
        return _ingest(argparse.Namespace(**{**vars(args), "file": path}))


def _ingest(args: argparse.Namespace) -> int:
    from recallfs.mount import control_client as control
    from recallfs.query.ingest_file import load_file

    cfg = resolve_settings(args)
    org, ws, agent = _ingest_principal(args, cfg)
    store_dir_ready(cfg)
    start_warmup(cfg)  # loads while the file is read and checked
    records = load_file(args.file, args.format, org=org, workspace=ws, agent=agent)
    # waits while another command holds the store; None when a mount daemon holds it
    store = control.open_unless_mounted(store_path(cfg), lambda: open_store(cfg, create=True))
    if store is None:
        return _ingest_via_daemon(args, cfg, org, ws, agent)
    with store:
        summary = _ingest_here(args, cfg, store, records)
    print(_ingested(args.file, summary))
    return EXIT_OK


def _ingest_here(args: argparse.Namespace, cfg: Settings, store: Any, records: list[Any]) -> dict[str, Any]:
    bar = None
    progress = None
    if stderr_is_tty() and not args.no_progress and len(records) > 200:
        from tqdm import tqdm

        bar = tqdm(total=len(records), unit="rec", desc="ingest", file=sys.stderr)

        def progress(done: int, total: int) -> None:
            bar.update(done - bar.n)

    backend = backend_of(cfg, store)
    try:
        return backend.ingest(store, records, progress=progress, embedder=embedder_for(cfg)).as_dict()
    finally:
        backend.close()
        if bar is not None:
            bar.close()


def _ingest_via_daemon(args: argparse.Namespace, cfg: Settings, org: str, ws: str, agent: str) -> int:
    """The store is mounted: its daemon runs the same ingest and refreshes the mount's view."""
    from recallfs.mount import control_client as control

    payload = {"op": "ingest", "file": str(args.file.resolve()), "format": args.format, "org": org,
               "workspace": ws, "agent": agent}
    try:
        reply = control.request(store_path(cfg), payload)
    except control.DaemonBrokeOff as exc:
        # The batch is one transaction, so it is all in or not at all, and the same ingest again finishes
        # the job either way (stored rows are unchanged; missing vectors are embedded).
        raise CliError(f"{exc}; whether {args.file} was ingested is unknown: run the same ingest again once "
                       "the store is mounted again or unmounted (ingest is idempotent)") from None
    if reply is None:
        raise CliError("the mount daemon holding the store went away; run the command again")
    print(_ingested(args.file, reply["report"], " (through the mount daemon)"))
    return EXIT_OK


def _ingested(path: Path, summary: dict[str, Any], how: str = "") -> str:
    repaired = summary.get("fts_repaired") or []
    tail = f"; repaired the full-text index of {', '.join(repaired)}" if repaired else ""
    left = summary.get("embedded", 0) - summary["written"]  # rows an earlier ingest stopped before embedding
    if left > 0:
        tail += f"; embedded {left:,} rows an earlier ingest left without vectors"
    if summary.get("embedding_later"):  # through a mount: the rest is embedded in parts after this returns
        tail += (f"; the mount embeds {summary['embedding_later']:,} of them in the background, in parts (the "
                 "lexical arm finds them meanwhile; `recallfs status` shows the progress)")
    if summary.get("dated_ahead"):
        tail += (f"; {summary['dated_ahead']:,} dated after this machine's clock (the latest "
                 f"{summary['dated_ahead_latest'].replace('T', ' ')}): the newest version of a memory or slot is "
                 "its current one, so each stays current until a newer-dated record arrives")
    historical = summary.get("historical", 0)
    older = f", {historical} older than their memory's current version: history only" if historical else ""
    return (f"ingested {path}: {summary['written']} written ({summary['new_versions']} new versions{older}), "
            f"{summary['unchanged']} unchanged, into {', '.join(summary['workspaces']) or '-'}{how}{tail}")


def cmd_reindex(args: argparse.Namespace) -> int:
    from recallfs.query.ingest_file import embed_bar
    from recallfs.query.shared_embedders import embedder_from_settings
    from recallfs.query.vector_write import reindex
    from recallfs.query.vectors import ensure_indexes

    cfg = resolve_settings(args)
    store = open_store(cfg)
    embedder = embedder_from_settings(cfg)
    with store:
        print(_reindex_fts(store), flush=True)  # needs no model: done even when the vectors cannot be redone
        if not embedder.wait_ready():
            raise CliError(f"cannot reindex: {embedder.problem}")
        with embed_bar(not args.no_progress) as progress:
            report = reindex(store, embedder, force=args.force, progress=progress)
            indexes = ensure_indexes(store)
    print(f"reindexed {cfg.store}: {report.embedded} memories embedded with {report.model} "
          f"({report.dim}-d); {indexes} FAISS indexes up to date")
    if not cfg.semantic:
        print("note: the semantic arm is off (RECALLFS_SEMANTIC=false); recall will not use these vectors")
    return EXIT_OK


def _reindex_fts(store: Any) -> str:
    """Rebuild every full-text index; say how many, and which were behind (left so by a stopped ingest)."""
    from recallfs.query.fts_freshness import rebuild_all_fts

    rebuilt, stale = rebuild_all_fts(store)
    were = "that was" if len(stale) == 1 else "that were"
    behind = f"; repaired {len(stale)} {were} behind: " + ", ".join(s.describe() for s in stale) if stale else ""
    return f"rebuilt {rebuilt} full-text indexes{behind}"


def cmd_policy(args: argparse.Namespace) -> int:
    from recallfs.query.policies import get_policy, list_policies, remove_policy, set_policy
    from recallfs.scope.policy import PolicySpec, build_policy

    cfg = resolve_settings(args)
    principal = principal_from(cfg)
    action = args.policy_command
    policy = None
    if action == "set":
        try:
            policy = build_policy(PolicySpec(args.authors, args.visibility, args.deny_kind, args.deny_tag,
                                             args.deny_writes))
        except ValueError as exc:
            raise CliError(str(exc)) from None
    if is_lake(cfg.store) and action in ("set", "rm"):
        return _lake_policy(cfg, principal, policy)
    if is_lake(cfg.store):  # show, list: from the lake, so a mount holding this host's replica is no matter
        return _lake_policies(cfg, principal, action)
    with open_store(cfg, create=action == "set", read_only=action in ("show", "list")) as store:
        if policy is not None:
            set_policy(store, principal, policy)
            print(f"policy for {principal}: {policy.describe()}")
            if store.partition(principal.org, principal.workspace) is None:  # a typo shows here, not later
                note(f"note: {principal.workspace_path} holds no memory yet; the policy applies to what is "
                     "written there")
        elif action == "show":
            policy, stored = get_policy(store, principal)
            print(f"policy for {principal}: {policy.describe()}{'' if stored else ' (default)'}")
        elif action == "rm":
            removed = remove_policy(store, principal)
            print(f"policy for {principal}: {'removed' if removed else 'none stored'}; the default applies")
        else:
            for agent, listed in list_policies(store, principal.org, principal.workspace):
                print(f"{agent}: {listed.describe()}")
    return EXIT_OK


def _lake_policies(cfg: Settings, principal: Any, action: str) -> int:
    """`policy show` / `policy list` of a lake: the last change committed for each agent."""
    from recallfs.query.backend import LakeBackend
    from recallfs.query.lake_location import parse_lake
    from recallfs.query.lake_replica import policy_of
    from recallfs.scope.policy import DEFAULT as DEFAULT_POLICY

    backend = LakeBackend(parse_lake(cfg.store))
    try:
        changes = {agent: row for agent, row in backend.lake.policies(principal.org, principal.workspace).items()
                   if not row["removed"]}
    finally:
        backend.close()
    if action == "show":
        row = changes.get(principal.agent)
        shown = policy_of(row).describe() if row is not None else f"{DEFAULT_POLICY.describe()} (default)"
        print(f"policy for {principal}: {shown}")
    else:
        for agent in sorted(changes):
            print(f"{agent}: {policy_of(changes[agent]).describe()}")
    return EXIT_OK


def _lake_policy(cfg: Settings, principal: Any, policy: Any) -> int:
    """A lake's policies are committed to the lake; every host's replica applies them in commit order."""
    from recallfs.query.backend import LakeBackend
    from recallfs.query.lake_location import parse_lake

    backend = LakeBackend(parse_lake(cfg.store))
    try:
        backend.commit_policy(principal, policy)
    finally:
        backend.close()
    what = policy.describe() if policy is not None else "removed; the default applies"
    print(f"policy for {principal}: {what} (committed to the lake: each host's mount applies it at its next poll, "
          "twice a second, then drops what the kernel cached: a few seconds on a large, busy mount)")
    return EXIT_OK
