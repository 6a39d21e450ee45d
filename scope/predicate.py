"""The authorization predicate every store query carries.

Two layers:
- the partition: rows must belong to the principal's org and workspace (the query also names only the
  partition's own schema, so this holds even if a clause below is wrong);
- the read policy: the principal's row in `main.policies` if it has one, else the default (every
  author's `workspace` memories and its own private ones). It is written in SQL against the policy
  table, so every caller of this predicate enforces the stored policy: none can forget to load it.

Values are always bound parameters.
"""

from __future__ import annotations

from recallfs.scope.principal import Principal

POLICY_TABLE = "main.policies"


def partition_predicate(principal: Principal, alias: str = "") -> tuple[str, list[object]]:
    """(sql, params): rows of a memory table in the principal's partition."""
    prefix = f"{alias}." if alias else ""
    sql = f"({prefix}org = ? AND {prefix}workspace = ?)"
    return sql, [principal.org, principal.workspace]


def policy_predicate(principal: Principal, alias: str = "m") -> tuple[str, list[object]]:
    """(sql, params): rows the principal's read policy allows. Column `agent` is the author."""
    m = alias
    own = f"{m}.agent = ?"
    stored = f"(SELECT p FROM {POLICY_TABLE} p WHERE p.org = ? AND p.workspace = ? AND p.agent = ?)"
    key = [principal.org, principal.workspace, principal.agent]
    sql = f"""(
        CASE WHEN {stored} IS NULL
        THEN ({own} OR {m}.visibility = 'workspace')
        ELSE (
            ({own} OR list_contains({stored}.authors, '*') OR list_contains({stored}.authors, {m}.agent))
            AND ({own} OR list_contains({stored}.visibilities, {m}.visibility))
            AND NOT list_contains({stored}.deny_kinds, {m}.kind)
            AND NOT list_has_any({stored}.deny_tags, {m}.tags))
        END)"""
    # Parameter order follows the placeholders above, left to right.
    params: list[object] = [
        *key, principal.agent,  # CASE WHEN stored IS NULL THEN (own ...)
        principal.agent, *key, *key,  # own, authors '*', authors contains
        principal.agent, *key,  # own, visibilities
        *key,  # deny_kinds
        *key,  # deny_tags
    ]
    return sql, params


def authorization_predicate(principal: Principal, alias: str = "m") -> tuple[str, list[object]]:
    """Partition and policy together: what the gate uses."""
    part_sql, part_params = partition_predicate(principal, alias)
    pol_sql, pol_params = policy_predicate(principal, alias)
    return f"({part_sql} AND {pol_sql})", [*part_params, *pol_params]
