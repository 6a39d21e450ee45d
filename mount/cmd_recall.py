"""`recallfs recall`: the recall pipeline without FUSE (through the mount's daemon when one holds the store)."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from typing import Any

from recallfs.mount.cli_common import (
    backend_of,
    open_store,
    principal_from,
    require_store,
    resolve_settings,
    store_args,
    store_path,
)
from recallfs.mount.cli_errors import EXIT_OK, CliError, say
from recallfs.query.lake_location import is_lake
from recallfs.query.settings import Settings

# One line on stderr when a call loads the model itself (seconds, every call): a mount's daemon keeps it
# loaded, and the lexical arm needs none.
FAST_PATH_HINT = ("no mount holds {store}, so this call loads the embedding model itself (seconds); for fast "
                  "recall mount the store (`recallfs mount --store {store} DIR`) or pass --arm lexical")

# flag -> inline option it means (query_syntax reads both)
RECALL_FLAGS = (("now", "now"), ("kind", "kind"), ("tag", "tag"), ("session", "session"), ("author", "agent"),
                ("since", "since"), ("until", "until"), ("k", "k"), ("offset", "offset"), ("recent", "recent"),
                ("budget", "budget"))


def register(sub: Any) -> None:
    p = sub.add_parser("recall", help="run the recall pipeline without FUSE")
    store_args(p)
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
    p.add_argument("--now", help="when the question is asked (a UTC date, or a duration ago): --since, --until "
                                 "durations and dates in the question (\"last week\") count from it; same as now:")
    # a value is required: an optional one would swallow the query that follows (--recent "what changed")
    p.add_argument("--recent", metavar="on|off|HALF_LIFE",
                   help="favour newer memories: on, off (not even for 'latest'), or a half-life such as 7d; "
                   "same as recent:")
    p.add_argument("--budget", help="fit the hits in about this many tokens, chosen by MMR; same as budget:")
    p.set_defaults(run=cmd_recall)


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
                apply_option(opts, option, str(one), opts.now or now)
            except ValueError as exc:
                name = "-k" if flag == "k" else f"--{flag}"
                raise CliError(f"{name} {shown(str(one))}: {exc}") from None
    if opts.since and opts.until and opts.since > opts.until:
        raise CliError("--since is after --until, so nothing could match")
    return opts


def cmd_recall(args: argparse.Namespace) -> int:
    from recallfs.mount import control_client as control
    from recallfs.query.formats import RENDERERS
    from recallfs.query.recall import recall

    cfg = resolve_settings(args)
    ranking = cfg.ranking()
    principal = principal_from(cfg)
    opts = recall_options(args)
    routed = _recall_via_daemon(args, cfg, principal, opts)
    if routed is not None:
        sys.stdout.write(routed)
        return EXIT_OK
    require_store(cfg)
    # The model loads before the store opens: a reader holds the file, and writers wait while it does.
    # The lexical arm never imports torch.
    semantic = _semantic_arm(cfg) if args.arm != "lexical" else None
    # An ingest or reindex holding the store is waited for, as `recallfs ingest` waits for a recall;
    # a daemon that mounted the store meanwhile answers instead.
    store = _open_waiting(cfg, control)
    if store is not None and is_lake(cfg.store):  # this host's replica replays what the lake holds first
        backend_of(cfg, store, embedder=getattr(semantic, "embedder", None)).close()
    if store is None:
        routed = _recall_via_daemon(args, cfg, principal, opts)
        if routed is None:
            raise CliError("the mount daemon holding the store went away; run the command again")
        sys.stdout.write(routed)
        return EXIT_OK
    with store:
        result = recall(store, principal, args.query, k=cfg.k, arm=args.arm, options=opts, semantic=semantic,
                        **ranking.recall_kwargs())
    sys.stdout.write(RENDERERS[args.format](result))
    return EXIT_OK


def _open_waiting(cfg: Settings, control: Any) -> Any:
    """The store, read-only, once no other command writes it (None: a daemon holds it now)."""
    from recallfs.query.store import StoreLockedError

    try:
        # a lake's replica is opened for writing: it replays what other hosts committed
        return control.open_unless_mounted(store_path(cfg), lambda: open_store(cfg, read_only=not is_lake(cfg.store)))
    except StoreLockedError:
        raise CliError(f"the store {store_path(cfg)} is still held by another process after "
                       f"{control.LOCK_WAIT_S:.0f} s (an ingest or reindex writing it); recall when it ends, or "
                       "mount the store: a mount answers recall while it ingests") from None


def _recall_via_daemon(args: argparse.Namespace, cfg: Settings, principal: Any, opts: Any) -> str | None:
    """When a mount daemon holds the store (DuckDB then excludes other readers), it runs the recall;
    its semantic arm is already warm. None when no daemon holds the store."""
    from recallfs.mount import control_client
    from recallfs.mount.control_options import options_payload
    from recallfs.mount.request_settings import chosen_settings

    # The settings this caller chose travel with the request: the daemon applies them to this recall
    # (or says in the notes why not), so a setting means the same mounted or not.
    payload = {"op": "recall", "query": args.query, "k": opts.k, "offset": opts.offset, "arm": args.arm,
               "format": args.format, "options": options_payload(opts), "org": principal.org,
               "workspace": principal.workspace, "agent": principal.agent, "settings": chosen_settings(cfg)}
    reply = control_client.request(store_path(cfg), payload)
    return None if reply is None else str(reply["output"])


def _semantic_arm(cfg: Settings) -> Any:
    """The semantic arm for a one-shot command: waits up to `warm_timeout_ms` (0: until ready, at most
    the load timeout) for its query path: the saved query graph (query/query_graph.py, ~0.3 s) where a
    process with the model saved one, else the model itself, which takes seconds in every call, so then
    it says once how to get the fast path; past the wait, recall answers lexically with `warming`."""
    from recallfs.query.model_files import is_model_dir
    from recallfs.query.semantic import SemanticSearch

    arm = SemanticSearch.from_settings(cfg)
    embedder = arm.embedder
    if embedder is not None:
        wait_ms = float(cfg.warm_timeout_ms)
        timeout_s = wait_ms / 1000.0 if wait_ms > 0 else None
        if not embedder.graph_serves(timeout_s):
            if embedder.state in ("idle", "loading") and is_model_dir(embedder.model_path):
                say("recall", FAST_PATH_HINT.format(store=store_path(cfg)))
            embedder.wait_queries(timeout_s)
    return arm
