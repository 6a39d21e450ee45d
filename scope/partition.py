"""Org and workspace are a storage partition: each lives in its own DuckDB schema.

A query names exactly one partition schema, so a wrong policy clause still cannot reach
another workspace's rows (defense in depth on top of the row predicate).
"""

from __future__ import annotations

import hashlib


def partition_schema(org: str, workspace: str) -> str:
    """A stable SQL identifier for a partition. Hashed so any legal name maps to a safe identifier."""
    digest = hashlib.sha1(f"{org}/{workspace}".encode()).hexdigest()[:16]
    return f"p_{digest}"
