"""Compatibility forms in what the arms index (full-width Ｌａｔｉｎ and digits, ligatures such as ﬁ,
superscripts, the ellipsis) made their plain characters (NFKC). DuckDB's FTS folds case and accents
only (strip_accents: canonical decomposition), so a memory holding ＫＵＢＥＲＮＥＴＥＳ was indexed as
that and no query found it, while a query's terms are folded with compatibility decomposition
(ranking/text.fold: NFKD). The content itself, what a reader sees, keeps its characters."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from recallfs.query.cursor import Cursor


def searchable(text: str) -> str:
    """`text` in the form the index should read."""
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


_NOT_A_WORD = re.compile(r"[\W_]+")  # what the index's tokenizer drops (lexical.FTS_IGNORE, near enough)


def _words_change(old: str, new: str) -> bool:
    """Whether folding changed a letter or digit: an ellipsis or a no-break space (the usual forms in
    chat) folds to punctuation or a space, which the index never held, so its terms stay the same."""
    return _NOT_A_WORD.sub("", old) != _NOT_A_WORD.sub("", new)


def refold_search_text(conn: Cursor, schema: str, tables: Sequence[str]) -> None:
    """A partition written before search texts were folded: fold the rows that hold such a form, and
    when a row's words changed (full-width letters, a ligature), mark that table's full-text index as
    covering nothing, so that the next open for writing builds it again (query/fts_freshness.py; until
    then a reader scores every row from the delta)."""
    for table in tables:
        rows = conn.execute(f"SELECT rid, search_text FROM {schema}.{table} "
                            "WHERE NOT regexp_matches(search_text, '^[\\x00-\\x7f]*$')").fetchall()
        changed = [(searchable(text), rid, text) for rid, text in rows if searchable(text) != text]
        if not changed:
            continue
        conn.executemany(f"UPDATE {schema}.{table} SET search_text = ? WHERE rid = ?",
                         [(new, rid) for new, rid, _ in changed])
        if any(_words_change(old, new) for new, _, old in changed):
            conn.execute("UPDATE main.fts_state SET built_max_rid = 0 WHERE schema_name = ? AND tbl = ?",
                         [schema, table])
