"""The authorization predicate every store query carries.

Today it is the partition check (org and workspace must match the principal); the read-policy
issue extends it with authors, visibilities and denied kinds/tags. Values are always bound.
"""

from __future__ import annotations

from recallfs.scope.principal import Principal


def partition_predicate(principal: Principal, alias: str = "") -> tuple[str, list[object]]:
    """Return (sql, params) restricting rows of a memory table to the principal's partition."""
    prefix = f"{alias}." if alias else ""
    sql = f"({prefix}org = ? AND {prefix}workspace = ?)"
    return sql, [principal.org, principal.workspace]
