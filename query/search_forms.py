"""Compatibility forms in what the arms index (full-width Ｌａｔｉｎ and digits, ligatures such as ﬁ,
superscripts, the ellipsis) made their plain characters (NFKC). DuckDB's FTS folds case and accents
only (strip_accents: canonical decomposition), so a memory holding ＫＵＢＥＲＮＥＴＥＳ was indexed as
that and no query found it, while a query's terms are folded with compatibility decomposition
(ranking/text.fold: NFKD). The content itself, what a reader sees, keeps its characters."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from recallfs.query.cursor import Cursor


def searchable(text: str) -> str:
    """`text` in the form the index should read."""
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def refold_search_text(conn: Cursor, schema: str, tables: Sequence[str]) -> None:
    """A partition written before search texts were folded: fold the rows that hold such a form, and
    mark those tables' full-text indexes as covering nothing, so that the next open for writing builds
    them again (query/fts_freshness.py; until then a reader scores every row from the delta)."""
    for table in tables:
        rows = conn.execute(f"SELECT rid, search_text FROM {schema}.{table} "
                            "WHERE NOT regexp_matches(search_text, '^[\\x00-\\x7f]*$')").fetchall()
        changed = [(searchable(text), rid) for rid, text in rows if searchable(text) != text]
        if not changed:
            continue
        conn.executemany(f"UPDATE {schema}.{table} SET search_text = ? WHERE rid = ?", changed)
        conn.execute("UPDATE main.fts_state SET built_max_rid = 0 WHERE schema_name = ? AND tbl = ?",
                     [schema, table])
