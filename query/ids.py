"""The memory-id rule: what a memory's `id` (and `supersedes`, `superseded_by`) may be.

One rule for every place that checks an id: ingest validation (query/records.py), the mount's path
grammar and file names (mount/paths.py, mount/names.py), and the demo generator. Pure.
"""

from __future__ import annotations

import re

# Not starting with '.': an id names the directory history/<id>/, and the mount resolves no hidden name
# (".." would not even be a name).
MEMORY_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}")
MEMORY_ID_RULE = "1-64 letters, digits, '.', '_' or '-', not starting with '.'"  # for error messages


def is_memory_id(text: str) -> bool:
    """The whole of `text` is an id (fullmatch: a trailing newline is not allowed, as `$` would)."""
    return MEMORY_ID.fullmatch(text) is not None
