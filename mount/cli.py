"""`recallfs`: one console script, one subcommand per job.

Exit codes: 0 success, 1 an error the message explains (bad input, missing store) or output that could
not be written (a reader that went away, as in `recallfs status | head -1`: no message, like a tool
stopped by SIGPIPE), 2 bad usage, 130 interrupted (Ctrl-C).

Errors come fast: each command checks its settings, arguments and store before it starts loading the
embedding model, and a process that ends while the model is still loading does not wait for it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from recallfs.mount.registry import RuntimeDirError
from recallfs.query import settings as settings_mod

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class CliError(Exception):
    """An error for the user: printed without a traceback, exit code 1."""


def _store_args(p: argparse.ArgumentParser, *, workspace: bool = True, agent: bool = True) -> None:
    p.add_argument("--store", help="store path (RECALLFS_STORE; default ~/.local/share/recallfs/store.duckdb)")
    if workspace:
        p.add_argument("--workspace", help="ORG/WS to act on (RECALLFS_WORKSPACE)")
    if agent:
        p.add_argument("--agent", help="agent name (RECALLFS_AGENT)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="recallfs",
        description="Agent memory you can ls, cat and grep: a DuckDB memory store with hybrid recall, "
        "mounted as a FUSE filesystem.",
        epilog="Every option can also be set as RECALLFS_<NAME>; see the README's configuration table.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("init", help="create a store")
    _store_args(p, workspace=False, agent=False)

    p = sub.add_parser("ingest", help="load memories from a file (one transaction; idempotent)")
    _store_args(p)
    p.add_argument("--format", default="jsonl", choices=["jsonl", "locomo"], help="importer (default jsonl)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")
    p.add_argument("file", type=Path)

    p = sub.add_parser("recall", help="run the recall pipeline without FUSE")
    _store_args(p)
    p.add_argument("query", help="the query; inline options such as k:20 kind:decision since:7d work here")
    # Every inline option has a flag meaning the same (read by the same code: query_syntax.apply_option);
    # an inline option in the query wins over its flag.
    p.add_argument("-k", help="hits per page (default 10); same as k:")
    p.add_argument("--offset", help="skip this many hits (pagination); same as offset:")
    p.add_argument("--format", default="text", choices=["text", "json", "context"])
    p.add_argument("--arm", default="fused", choices=["lexical", "semantic", "fused"],
                   help="which arms to run (default fused)")
    p.add_argument("--kind", action="append", help="only this kind (repeatable, or comma-separated); same as kind:")
    p.add_argument("--tag", action="append", help="only memories with this tag (repeatable); same as tag:")
    p.add_argument("--session", help="only this session; same as session:")
    p.add_argument("--author", help="only memories written by this agent; same as agent: (--agent is who reads)")
    p.add_argument("--since", help="only memories from this UTC date or duration ago (2026-06-01, 7d); same as since:")
    p.add_argument("--until", help="only memories up to this UTC date (a bare date includes the day); same as until:")
    # a value is required: an optional one would swallow the query that follows (--recent "what changed")
    p.add_argument("--recent", metavar="on|off|HALF_LIFE",
                   help="favour newer memories: on, off (not even for 'latest'), or a half-life such as 7d; "
                   "same as recent:")
    p.add_argument("--budget", help="fit the hits in about this many tokens, chosen by MMR; same as budget:")

    p = sub.add_parser("reindex", help="rebuild the full-text indexes; re-embed memories with the configured model; "
                       "rebuild FAISS indexes")
    _store_args(p, workspace=False, agent=False)
    p.add_argument("--force", action="store_true", help="re-embed every memory, even those already embedded")
    p.add_argument("--no-progress", action="store_true", help="no progress bar even on a terminal")

    p = sub.add_parser("status", help="report the store's and the live mounts' state")
    _store_args(p, agent=False)
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("eval", help="run the recall-quality harness")
    p.add_argument("--dataset", default="locomo", choices=["locomo", "demo"])
    p.add_argument("--data", type=Path, help="dataset file (default ../shared/data/locomo10.json, or the "
                   "bundled demo_memory.jsonl)")
    p.add_argument("--arm", choices=["lexical", "semantic", "fused"], help="one arm (default: all, side by side)")
    p.add_argument("--limit", type=int, help="only the first N questions of each conversation (a fixed subset)")
    p.add_argument("--every", type=int, help="only every Nth question of each conversation (a fixed subset)")
    p.add_argument("--store", help="reuse or build the eval store here (default: a cache under "
                   "~/.cache/recallfs/eval keyed by data and code)")
    p.add_argument("--ablate", action="store_true", help="one row per pipeline stage toggled (evals/variants.py)")
    p.add_argument("--format", default="json", choices=["json", "markdown"], help="report format (default json)")
    p.add_argument("--write-baseline", choices=["ci", "full", "demo"],
                   help="run that baseline's question set and write its figures to evals/baseline.json")

    p = sub.add_parser("mount", help="mount the store as a filesystem (read-only; see index.md inside)",
                       description="Mount the store at MOUNTPOINT for one principal (--workspace, --agent). "
                       "Returns once the mount is ready; the daemon runs in the background and owns the store "
                       "(`recallfs ingest` and `recallfs recall` reach it through its control socket).")
    _store_args(p)
    p.add_argument("mountpoint", type=Path)
    p.add_argument("--map-uid", action="append", default=[], metavar="UID=AGENT",
                   help="serve several agents of --workspace, chosen by the caller's uid (repeatable; UID may "
                   "be a user name); mounts with allow_other, and any other uid gets EACCES")
    p.add_argument("--foreground", action="store_true", help="stay in the foreground (logs to stderr)")
    p.add_argument("--ready-fd", type=int, help=argparse.SUPPRESS)  # the daemon reports readiness here

    p = sub.add_parser("umount", help="unmount (also cleans up a dead mount)",
                       description="Stop the mount's daemon, which unmounts cleanly; a dead mount left by a "
                       "crash (\"Transport endpoint is not connected\") is detached.")
    p.add_argument("mountpoint", type=Path)

    p = sub.add_parser("policy", help="read policies: which memories an agent may read in a workspace")
    psub = p.add_subparsers(dest="policy_command", required=True, metavar="ACTION")
    q = psub.add_parser("set", help="store the policy of --agent in --workspace (replaces the old one)")
    _store_args(q)
    q.add_argument("--authors", action="append", default=[],
                   help="authors it may read, comma-separated; '*' or omitted: all (its own always)")
    q.add_argument("--visibility", action="append", default=[],
                   help="visibilities it may read: workspace, private (default workspace)")
    q.add_argument("--deny-kind", action="append", default=[], help="kinds it may not read")
    q.add_argument("--deny-tag", action="append", default=[], help="tags it may not read")
    for name, text in (("show", "print the policy in force for --agent"), ("rm", "remove it (back to default)"),
                       ("list", "list the stored policies of --workspace")):
        q = psub.add_parser(name, help=text)
        _store_args(q)
    return parser


def resolve_settings(args: argparse.Namespace) -> dict[str, Any]:
    overrides = {
        "store": getattr(args, "store", None),
        "workspace": getattr(args, "workspace", None),
        "agent": getattr(args, "agent", None),
    }
    try:
        return settings_mod.resolve(overrides)
    except ValueError as exc:
        raise CliError(str(exc)) from None


def ranking_settings(cfg: dict[str, Any]) -> dict[str, Any]:
    """recall()'s ranking keywords from the settings (weights, stages, rrf_k, candidates)."""
    try:
        return settings_mod.ranking_kwargs(cfg)
    except ValueError as exc:
        raise CliError(str(exc)) from None


def principal_from(cfg: dict[str, Any], workspace: str | None = None) -> Any:
    from recallfs.scope.principal import Principal, ScopeError, parse_workspace

    try:
        org, ws = parse_workspace(workspace or cfg["workspace"])
        return Principal(org, ws, cfg["agent"])
    except ScopeError as exc:
        raise CliError(str(exc)) from None


def open_store(cfg: dict[str, Any], *, create: bool = False, read_only: bool = False) -> Any:
    from recallfs.query.store import StoreError

    if create:
        store_dir_ready(cfg)
    try:
        return store_or_nothing(cfg, create=create, read_only=read_only)
    except StoreError as exc:
        raise CliError(str(exc)) from None


def store_or_nothing(cfg: dict[str, Any], *, create: bool = False, read_only: bool = False) -> Any:
    """Open the store; a new one that fails half-made (a full disk leaves an empty file, which every
    later open refuses as "not a valid DuckDB database") is removed again. Raises StoreError."""
    from recallfs.query.diskspace import is_disk_full
    from recallfs.query.store import Store, StoreError, StoreLockedError

    path = Path(cfg["store"]).expanduser()
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


def store_dir_ready(cfg: dict[str, Any]) -> None:
    """Only the default store's directory (~/.local/share/recallfs/) is made on demand: a --store or
    RECALLFS_STORE in a directory that does not exist is more likely a typo than a wish."""
    path = Path(cfg["store"]).expanduser()
    if path.parent.is_dir():
        return
    if path == Path(settings_mod.default_store()).expanduser():
        path.parent.mkdir(parents=True, exist_ok=True)
        return
    raise CliError(f"cannot create the store {path}: no directory {path.parent} (only the default store's "
                   "directory is created for you)")


def require_store(cfg: dict[str, Any]) -> None:
    """Fail now, before the model starts loading, when the store is not there."""
    path = Path(cfg["store"]).expanduser()
    if not path.exists():
        raise CliError(f"no store at {path}; create one with `recallfs init --store {path}`")


# -- commands -------------------------------------------------------------------------------------
def cmd_init(args: argparse.Namespace) -> int:
    cfg = resolve_settings(args)
    existed = Path(cfg["store"]).expanduser().exists()
    with open_store(cfg, create=True):
        pass
    print(f"{'store ready' if existed else 'created store'}: {cfg['store']}")
    return EXIT_OK


def cmd_ingest(args: argparse.Namespace) -> int:
    from recallfs.query.ingest import IngestError
    from recallfs.query.ingest_file import IndexRefreshError, ingest_records, load_file
    from recallfs.scope.principal import ScopeError, check_name, parse_workspace

    cfg = resolve_settings(args)
    try:
        if args.format == "locomo" and not (args.workspace or os.environ.get("RECALLFS_WORKSPACE")):
            org, ws = "locomo", "unused"
        else:
            org, ws = parse_workspace(cfg["workspace"])
        agent = check_name("agent", cfg["agent"])
    except ScopeError as exc:
        raise CliError(str(exc)) from None
    store_dir_ready(cfg)
    _start_warmup(cfg)  # loads while the file is read and checked
    try:
        records = load_file(args.file, args.format, org=org, workspace=ws, agent=agent)
    except IngestError as exc:
        raise CliError(f"ingest refused, nothing written: {exc}") from None

    from recallfs.mount import control
    from recallfs.query.store import StoreError

    try:  # waits while another command holds the store; None when a mount daemon holds it
        store = control.open_unless_mounted(cfg["store"], lambda: store_or_nothing(cfg, create=True))
    except (StoreError, control.ControlError) as exc:  # ControlError: a socket there we must not trust
        raise CliError(str(exc)) from None
    if store is None:
        return _ingest_via_daemon(args, cfg, org, ws, agent)
    progress = None
    bar = None
    if sys.stderr.isatty() and not args.no_progress and len(records) > 200:
        from tqdm import tqdm

        bar = tqdm(total=len(records), unit="rec", desc="ingest", file=sys.stderr)

        def progress(done: int, total: int) -> None:
            assert bar is not None
            bar.update(done - bar.n)

    try:
        with store:
            report = ingest_records(store, records, progress=progress)
    except IngestError as exc:
        raise CliError(f"ingest refused, nothing written: {exc}") from None
    except IndexRefreshError as exc:  # the rows are in; the message says what is missing
        raise CliError(str(exc)) from None
    finally:
        if bar is not None:
            bar.close()
    summary = report.as_dict()
    print(
        f"ingested {args.file}: {summary['written']} written ({summary['new_versions']} new versions), "
        f"{summary['unchanged']} unchanged, into {', '.join(summary['workspaces']) or '-'}"  # type: ignore[arg-type]
        + _repaired(summary)
    )
    return EXIT_OK


def _ingest_via_daemon(args: argparse.Namespace, cfg: dict[str, Any], org: str, ws: str, agent: str) -> int:
    """The store is mounted: its daemon runs the same ingest and refreshes the mount's view."""
    from recallfs.mount import control

    payload = {"op": "ingest", "file": str(args.file.resolve()), "format": args.format, "org": org,
               "workspace": ws, "agent": agent}
    try:
        reply = control.request(cfg["store"], payload)
    except (OSError, control.ControlError) as exc:
        raise CliError(str(exc)) from None
    if reply is None:
        raise CliError("the mount daemon holding the store went away; run the command again")
    summary = reply["report"]
    print(
        f"ingested {args.file}: {summary['written']} written ({summary['new_versions']} new versions), "
        f"{summary['unchanged']} unchanged, into {', '.join(summary['workspaces']) or '-'} (through the mount daemon)"
        + _repaired(summary)
    )
    return EXIT_OK


# flag -> inline option it means (query_syntax reads both)
RECALL_FLAGS = (("kind", "kind"), ("tag", "tag"), ("session", "session"), ("author", "agent"), ("since", "since"),
                ("until", "until"), ("k", "k"), ("offset", "offset"), ("recent", "recent"), ("budget", "budget"))


def recall_options(args: argparse.Namespace, now: datetime | None = None) -> Any:
    """RecallOptions from the recall flags, through the same reader as the inline options; times are
    UTC like theirs. A bad value is a CliError naming the flag."""
    from recallfs.query.query_syntax import RecallOptions, apply_option, shown, utc_now

    now = now or utc_now()
    opts = RecallOptions()
    for flag, option in RECALL_FLAGS:
        value = getattr(args, flag, None)
        for one in value if isinstance(value, list) else [value]:
            if one is None:
                continue
            try:
                apply_option(opts, option, str(one), now)
            except ValueError as exc:
                name = "-k" if flag == "k" else f"--{flag}"
                raise CliError(f"{name} {shown(str(one))}: {exc}") from None
    if opts.since and opts.until and opts.since > opts.until:
        raise CliError("--since is after --until, so nothing could match")
    return opts


def cmd_recall(args: argparse.Namespace) -> int:
    from recallfs.query.formats import RENDERERS
    from recallfs.query.recall import recall

    cfg = resolve_settings(args)
    ranking = ranking_settings(cfg)
    principal = principal_from(cfg)
    opts = recall_options(args)
    routed = _recall_via_daemon(args, cfg, principal, opts)
    if routed is not None:
        sys.stdout.write(routed)
        return EXIT_OK
    require_store(cfg)
    # The model loads before the store opens: a reader holds the file, and writers wait while it does.
    semantic = _semantic_arm(cfg) if args.arm != "lexical" else None
    store = open_store(cfg, read_only=True)
    with store:
        result = recall(store, principal, args.query, k=cfg["k"], arm=args.arm, options=opts, semantic=semantic,
                        **ranking)
    sys.stdout.write(RENDERERS[args.format](result))
    return EXIT_OK


def _recall_via_daemon(args: argparse.Namespace, cfg: dict[str, Any], principal: Any, opts: Any) -> str | None:
    """When a mount daemon holds the store (DuckDB then excludes other readers), it runs the recall;
    its semantic arm is already warm. None when no daemon holds the store."""
    from recallfs.mount import control

    payload = {"op": "recall", "query": args.query, "k": opts.k, "offset": opts.offset, "arm": args.arm,
               "format": args.format, "options": control.options_payload(opts), "org": principal.org,
               "workspace": principal.workspace, "agent": principal.agent}
    try:
        reply = control.request(cfg["store"], payload)
    except (OSError, control.ControlError) as exc:
        raise CliError(str(exc)) from None
    return None if reply is None else str(reply["output"])


def _semantic_arm(cfg: dict[str, Any]) -> Any:
    """The semantic arm for a one-shot command: waits up to `warm_timeout_ms` (0: until loaded) for the
    model the warm-up thread is loading; past that, recall answers lexically with `warming`."""
    from recallfs.query.semantic import SemanticSearch

    arm = SemanticSearch.from_settings(cfg)
    if arm.embedder is not None:
        wait_ms = float(cfg["warm_timeout_ms"])
        arm.embedder.wait_ready(wait_ms / 1000.0 if wait_ms > 0 else None)
    return arm


def _start_warmup(cfg: dict[str, Any]) -> None:
    """Begin loading the embedding model once the command's cheap checks passed, so it loads while
    the command reads its input. Never before: an error must not wait for torch."""
    from recallfs.query.embedder import start_warmup

    start_warmup(cfg)


def cmd_reindex(args: argparse.Namespace) -> int:
    from recallfs.query.embedder import embedder_from_settings
    from recallfs.query.ingest_file import embed_bar
    from recallfs.query.vectors import VectorError, ensure_indexes, reindex

    cfg = resolve_settings(args)
    store = open_store(cfg)
    embedder = embedder_from_settings(cfg)
    with store:
        print(_reindex_fts(store), flush=True)  # needs no model: done even when the vectors cannot be redone
        if not embedder.wait_ready():
            raise CliError(f"cannot reindex: {embedder.problem}")
        with embed_bar(not args.no_progress) as progress:
            try:
                report = reindex(store, embedder, force=args.force, progress=progress)
                indexes = ensure_indexes(store)
            except VectorError as exc:
                raise CliError(str(exc)) from None
    print(f"reindexed {cfg['store']}: {report.embedded} memories embedded with {report.model} "
          f"({report.dim}-d); {indexes} FAISS indexes up to date")
    if not cfg["semantic"]:
        print("note: the semantic arm is off (RECALLFS_SEMANTIC=false); recall will not use these vectors")
    return EXIT_OK


def _reindex_fts(store: Any) -> str:
    """Rebuild every full-text index; say how many, and which were behind (left so by a stopped ingest)."""
    from recallfs.query.fts_freshness import rebuild_all_fts

    rebuilt, stale = rebuild_all_fts(store)
    were = "that was" if len(stale) == 1 else "that were"
    behind = f"; repaired {len(stale)} {were} behind: " + ", ".join(s.describe() for s in stale) if stale else ""
    return f"rebuilt {rebuilt} full-text indexes{behind}"


def _repaired(summary: dict[str, Any]) -> str:
    """The ingest message's tail when it also rebuilt full-text indexes an earlier ingest left behind."""
    repaired = summary.get("fts_repaired") or []
    return f"; repaired the full-text index of {', '.join(repaired)}" if repaired else ""


def cmd_status(args: argparse.Namespace) -> int:
    from recallfs.mount.control import ControlError, open_unless_mounted, request
    from recallfs.mount.daemon import mount_status

    cfg = resolve_settings(args)
    info: dict[str, Any] = {"store": cfg["store"], "exists": Path(cfg["store"]).expanduser().exists()}
    problem = None
    if info["exists"]:
        try:  # a mounted store is held by its daemon: ask it
            reply = request(cfg["store"], {"op": "counts"}, timeout=30)
        except (OSError, ControlError) as exc:
            reply, problem = None, f"the daemon holding {cfg['store']} did not answer: {exc}"
        if reply is not None:
            info["workspaces"], info["held_by"] = reply["workspaces"], "a mount daemon"
        elif problem is None:
            store = open_unless_mounted(cfg["store"], lambda: open_store(cfg, read_only=True))
            if store is not None:
                with store:
                    info["workspaces"] = {
                        f"{o}/{w}": store.table_counts(store.partition(o, w)) for o, w in store.workspaces()
                    }
    elif args.store or os.environ.get("RECALLFS_STORE"):  # the default store need not exist to list mounts
        path = Path(cfg["store"]).expanduser()
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
        print(f"  {ws}: " + ", ".join(f"{n} {t}" for t, n in counts.items()))
    print("mounts:" if info["mounts"] else "mounts: none")
    for m in info["mounts"]:
        line = f"  {m['mountpoint']}: {m['health']}; store {m['store']}, {m['principal']}, pid {m['pid']}"
        detail = m.get("detail") or {}
        if detail:
            line += (f", up {m.get('uptime_s')} s, {detail.get('requests', 0)} requests, "
                     f"{detail.get('unexpected_errors', 0)} errors, recall "
                     + (f"degraded: {detail.get('degraded_reason')}" if detail.get("degraded") else "hybrid"))
        print(line)


def cmd_eval(args: argparse.Namespace) -> int:
    from recallfs.evals.harness import run_cli

    return run_cli(args)


def cmd_mount(args: argparse.Namespace) -> int:
    from recallfs.mount.daemon import MountConfig, MountError, mount
    from recallfs.mount.registry import canonical
    from recallfs.mount.views import parse_uid_map

    cfg = resolve_settings(args)
    ranking_settings(cfg)  # a bad ranking setting stops the mount here, not at its first recall
    try:
        uid_map = parse_uid_map(args.map_uid)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    config = MountConfig(
        mountpoint=canonical(args.mountpoint), store=canonical(cfg["store"]), principal=principal_from(cfg),
        settings=cfg, foreground=args.foreground, ready_fd=args.ready_fd, uid_map=uid_map or None,
    )
    try:
        return mount(config)
    except MountError as exc:
        raise CliError(str(exc)) from None


def cmd_umount(args: argparse.Namespace) -> int:
    from recallfs.mount.daemon import MountError, unmount
    from recallfs.mount.registry import canonical

    try:
        print(unmount(canonical(args.mountpoint)))
    except MountError as exc:
        raise CliError(str(exc)) from None
    return EXIT_OK


def cmd_policy(args: argparse.Namespace) -> int:
    from recallfs.query.policies import get_policy, list_policies, remove_policy, set_policy
    from recallfs.scope.policy import PolicySpec, build_policy

    cfg = resolve_settings(args)
    principal = principal_from(cfg)
    action = args.policy_command
    with open_store(cfg, create=action == "set", read_only=action in ("show", "list")) as store:
        if action == "set":
            try:
                policy = build_policy(PolicySpec(args.authors, args.visibility, args.deny_kind, args.deny_tag))
            except ValueError as exc:
                raise CliError(str(exc)) from None
            set_policy(store, principal, policy)
            print(f"policy for {principal}: {policy.describe()}")
        elif action == "show":
            policy, stored = get_policy(store, principal)
            print(f"policy for {principal}: {policy.describe()}{'' if stored else ' (default)'}")
        elif action == "rm":
            removed = remove_policy(store, principal)
            print(f"policy for {principal}: {'removed' if removed else 'none stored'}; the default applies")
        else:
            for agent, policy in list_policies(store, principal.org, principal.workspace):
                print(f"{agent}: {policy.describe()}")
    return EXIT_OK


COMMANDS = {
    "init": cmd_init, "ingest": cmd_ingest, "recall": cmd_recall, "status": cmd_status, "eval": cmd_eval,
    "reindex": cmd_reindex,
    "mount": cmd_mount, "umount": cmd_umount, "policy": cmd_policy,
}


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = _run(argv)
    except SystemExit as exc:  # argparse: --help (0), bad usage (2)
        code = exc.code if isinstance(exc.code, int) else EXIT_USAGE
    except BrokenPipeError:
        code = EXIT_ERROR
    if not _flush_stdout():
        code = EXIT_ERROR
    _leave_if_model_loading(code)
    return code


def _run(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if sys.stdout is None and args.command != "mount":  # `recallfs status >&-`: say so before doing anything
        _say(args.command, "standard output is closed; send it somewhere (> FILE, or > /dev/null)")
        return EXIT_ERROR
    try:
        return COMMANDS[args.command](args)
    except (CliError, RuntimeDirError) as exc:
        _say(args.command, str(exc))
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _say(command: str, message: str) -> None:
    try:
        print(f"recallfs {command}: {message}", file=sys.stderr)
    except (OSError, AttributeError):  # stderr closed or gone too: the exit code speaks alone
        pass


def _flush_stdout() -> bool:
    """Flush now, so that a reader that went away (`recallfs status | head -1`) ends the command
    quietly with exit 1, as SIGPIPE stops other tools, instead of a traceback or noise at exit."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
        return True
    except BrokenPipeError:
        pass
    # Python flushes stdout once more at exit; give that flush somewhere harmless to go.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return False


def _leave_if_model_loading(code: int) -> None:
    """A model still loading holds the interpreter's exit while torch finishes importing on its
    thread (up to a second or more). Nothing will use it now: leave at once. Stores are closed by
    then (every command opens them in `with`), and the only threads are daemon threads."""
    embedder = sys.modules.get("recallfs.query.embedder")
    if embedder is None or not embedder.any_loading():
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except OSError:
            pass
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
