"""Policies stored in `main.policies`: set, show, list, remove (`recallfs policy ...`)."""

from __future__ import annotations

from datetime import datetime

from recallfs.query.currentness import rebuild_heads
from recallfs.query.cursor import Cursor
from recallfs.query.store import Store
from recallfs.scope.policy import ALL_AUTHORS, DEFAULT, Policy
from recallfs.scope.principal import Principal


def set_policy(store: Store, principal: Principal, policy: Policy) -> None:
    with store.transaction() as cur:
        cur.execute(
            "INSERT OR REPLACE INTO main.policies (org, workspace, agent, authors, visibilities, deny_kinds, "
            "deny_tags, updated_at, writes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [principal.org, principal.workspace, principal.agent,
             [ALL_AUTHORS] if policy.authors is None else list(policy.authors), list(policy.visibilities),
             list(policy.deny_kinds), list(policy.deny_tags), datetime.now(), policy.writes],
        )
        _slots_again(store, cur, principal)


def remove_policy(store: Store, principal: Principal) -> bool:
    with store.transaction() as cur:
        row = cur.execute(
            "DELETE FROM main.policies WHERE org = ? AND workspace = ? AND agent = ? RETURNING agent",
            [principal.org, principal.workspace, principal.agent],
        ).fetchall()
        _slots_again(store, cur, principal)
    return bool(row)


def _slots_again(store: Store, cur: Cursor, principal: Principal) -> None:
    """Which fact holds a slot depends on what its author may read (query/slot_succession.py), so a
    changed policy recomputes the workspace's fact heads, in the same transaction."""
    schema = store.partition(principal.org, principal.workspace)
    if schema is not None:
        rebuild_heads(cur, schema, {"facts": ("*",)})


def stored_policy_key(cur: Cursor, principal: Principal) -> str:
    """The principal's stored policy row as text ("[]" when none), for the keys of what a reader's view
    caches: the gate's clauses read the policy inside their SQL, so their text stays the same when it
    changes (a lake replays `recallfs policy set` while mounted)."""
    return repr(cur.execute("SELECT * FROM main.policies WHERE org = ? AND workspace = ? AND agent = ?",
                            [principal.org, principal.workspace, principal.agent]).fetchall())


def get_policy(store: Store, principal: Principal) -> tuple[Policy, bool]:
    """(policy, stored?): the default policy when none is stored."""
    # a store opened read-only before its migration to version 3 has no `writes` column: true
    writes = "coalesce(writes, true)" if _has_writes(store) else "true"
    row = store.cursor().execute(
        f"SELECT authors, visibilities, deny_kinds, deny_tags, {writes} FROM main.policies "
        "WHERE org = ? AND workspace = ? AND agent = ?",
        [principal.org, principal.workspace, principal.agent],
    ).fetchone()
    if row is None:
        return DEFAULT, False
    authors, vis, kinds, tags, writes = row
    return Policy(
        authors=None if ALL_AUTHORS in authors else tuple(authors), visibilities=tuple(vis),
        deny_kinds=tuple(kinds), deny_tags=tuple(tags), writes=bool(writes),
    ), True


def _has_writes(store: Store) -> bool:
    row = store.cursor().execute(
        "SELECT count(*) FROM duckdb_columns() WHERE schema_name = 'main' AND table_name = 'policies' "
        "AND column_name = 'writes'").fetchone()
    return bool(row and row[0])


def list_policies(store: Store, org: str, workspace: str) -> list[tuple[str, Policy]]:
    agents = store.cursor().execute(
        "SELECT agent FROM main.policies WHERE org = ? AND workspace = ? ORDER BY agent", [org, workspace]
    ).fetchall()
    return [(str(a), get_policy(store, Principal(org, workspace, str(a)))[0]) for (a,) in agents]
