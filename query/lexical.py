"""The lexical arm: DuckDB FTS (BM25) per table, plus a substring pass over rows the index has not
seen yet (the FTS index does not update on insert; it is rebuilt after ingest).

Returns row ids only. Query text never reaches SQL as syntax: it is reduced to plain terms, which
are bound as parameters.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime

import duckdb

from recallfs.query.stopwords import STOPWORDS

MAX_TERMS = 32  # a 10 kB query is cut to its first distinct terms; BM25 cost grows with each term
# Letters and digits in any script are kept, so non-ASCII text is indexed rather than dropped.
FTS_IGNORE = r"(\.|[^\p{L}\p{N}])+"
_SPLIT = re.compile(r"[^\w]+|_+", re.UNICODE)


def fold(text: str) -> str:
    """Lower-case and strip accents, as the FTS index does (strip_accents=1, lower=1)."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def query_terms(text: str) -> list[str]:
    """Distinct searchable terms, in order: folded, split on non-word characters, stop words out."""
    seen: dict[str, None] = {}
    for token in _SPLIT.split(fold(text)):
        if token and token not in STOPWORDS and token not in seen:
            seen[token] = None
            if len(seen) >= MAX_TERMS:
                break
    return list(seen)


def fts_schema(schema: str, table: str) -> str:
    return f"fts_{schema}_{table}"


def build_fts(cur: duckdb.DuckDBPyConnection, schema: str, table: str) -> int:
    """(Re)build one table's index inside the caller's transaction. Returns the rid watermark."""
    row = cur.execute(f"SELECT coalesce(max(rid), 0), count(*) FROM {schema}.{table}").fetchone()
    assert row is not None
    watermark, count = int(row[0]), int(row[1])
    if count:
        cur.execute(
            f"PRAGMA create_fts_index('{schema}.{table}', 'rid', 'search_text', stemmer='porter', "
            f"stopwords='main.fts_stopwords', ignore='{FTS_IGNORE}', strip_accents=1, lower=1, overwrite=1)"
        )
    cur.execute(
        "INSERT OR REPLACE INTO main.fts_state VALUES (?, ?, ?, ?)", [schema, table, watermark, datetime.now()]
    )
    return watermark


def fts_watermark(cur: duckdb.DuckDBPyConnection, schema: str, table: str) -> int:
    row = cur.execute(
        "SELECT built_max_rid FROM main.fts_state WHERE schema_name = ? AND tbl = ?", [schema, table]
    ).fetchone()
    return int(row[0]) if row else 0


def search(
    cur: duckdb.DuckDBPyConnection,
    schema: str,
    table: str,
    terms: list[str],
    *,
    where: str,
    params: list[object],
    limit: int,
) -> list[int]:
    """Ranked rids for `terms` among the rows that satisfy `where` (an authorization/filter clause
    over alias `m`). BM25 over indexed rows, then unindexed rows by how many terms they contain."""
    if not terms:
        return []
    watermark = fts_watermark(cur, schema, table)
    ranked: list[int] = []
    if watermark > 0:
        rows = cur.execute(
            f"""SELECT rid FROM (
                    SELECT m.rid, {fts_schema(schema, table)}.match_bm25(m.rid, ?) AS score
                    FROM {schema}.{table} m WHERE m.rid <= ? AND {where})
                WHERE score IS NOT NULL ORDER BY score DESC, rid DESC LIMIT ?""",
            [" ".join(terms), watermark, *params, limit],
        ).fetchall()
        ranked = [int(r[0]) for r in rows]
    # Rows above the watermark are not in the index yet. When the index finds nothing at all
    # (a word split differently, e.g. in scripts written without spaces), scan everything by substring.
    floor = watermark if ranked else 0
    fresh = _search_fresh(cur, schema, table, terms, floor, where, params, limit)
    if fresh:
        # Interleave so fresh rows are visible at once without pushing out the best indexed ones.
        merged: list[int] = []
        for pair in zip(ranked, fresh, strict=False):
            merged.extend(pair)
        longer = ranked if len(ranked) > len(fresh) else fresh
        merged.extend(longer[min(len(ranked), len(fresh)):])
        ranked = merged[:limit]
    return ranked


def _search_fresh(
    cur: duckdb.DuckDBPyConnection,
    schema: str,
    table: str,
    terms: list[str],
    floor: int,
    where: str,
    params: list[object],
    limit: int,
) -> list[int]:
    # strip_accents(lower(...)) mirrors fold(); each term is a bound LIKE pattern, escaped.
    patterns = ["%" + t.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%" for t in terms]
    hits = " + ".join(
        "CASE WHEN strip_accents(lower(m.search_text)) LIKE ? ESCAPE '\\' THEN 1 ELSE 0 END" for _ in patterns
    )
    rows = cur.execute(
        f"""SELECT rid FROM (
                SELECT m.rid, ({hits}) AS matched FROM {schema}.{table} m WHERE m.rid > ? AND {where})
            WHERE matched > 0 ORDER BY matched DESC, rid DESC LIMIT ?""",
        [*patterns, floor, *params, limit],
    ).fetchall()
    return [int(r[0]) for r in rows]
