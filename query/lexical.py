"""The lexical arm: DuckDB FTS (BM25) per table, scored in memory (query/bm25_query.py) from the index's
tables (query/bm25_memory.py), and from a delta of the rows the index has not seen yet (query/fts_delta.py:
the FTS index does not update on insert, and a large one is rebuilt only when the delta grows), among
the rows the caller may read. A substring pass covers a table with no index yet, and a query BM25
cannot match at all.

Returns row ids only (with their calibrated scores, for fusion: ranking/calibration.py). Query text
never reaches SQL as syntax: it is reduced to plain terms, which are bound as parameters.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import numpy as np

from recallfs.query.bm25_memory import POSTINGS, IndexMoved, fts_schema
from recallfs.query.bm25_query import Clause, index_state, indexed_bm25
from recallfs.query.caches import LruCache
from recallfs.query.cursor import Cursor
from recallfs.query.derived import allowed_rids, by_table_generation, table_state
from recallfs.query.fts_delta import delta_postings
from recallfs.query.migrations import MEMORY_TABLES
from recallfs.query.stopwords import STOPWORDS
from recallfs.query.store import Store
from recallfs.ranking.calibration import lexical_score, term_fraction
from recallfs.ranking.text import fold, unspaced

__all__ = ["build_fts", "fts_schema", "index_state", "query_terms", "score_indexed", "search", "search_calibrated",
           "warm"]

MAX_TERMS = 32  # a 10 kB query is cut to its first distinct terms; BM25 cost grows with each term
# Letters and digits in any script are kept, so non-ASCII text is indexed rather than dropped.
FTS_IGNORE = r"(\.|[^\p{L}\p{N}])+"
_SPLIT = re.compile(r"[^\w]+|_+", re.UNICODE)


def query_terms(text: str) -> list[str]:
    """Distinct searchable terms, in order: folded as the FTS index folds (ranking/text.fold), split on
    non-word characters, stop words out."""
    seen: dict[str, None] = {}
    for token in _SPLIT.split(fold(text)):
        if token and token not in STOPWORDS and token not in seen:
            seen[token] = None
            if len(seen) >= MAX_TERMS:
                break
    return list(seen)


def drop_fts_objects(cur: Cursor, fts: str) -> None:
    """Drop an FTS index's tables and macros one by one, leaving its schema empty.

    `create_fts_index(..., overwrite=1)` drops the old index with `DROP SCHEMA ... CASCADE`. DuckDB
    1.5.5 cannot replay that from the WAL once the schema was checkpointed: after rebuild, CHECKPOINT,
    rebuild and a crash, opening the store failed with "Cannot drop entry ... because there are
    entries that depend on it", for good (tests/test_fts_crash.py). An empty schema replays."""
    where = "database_name = current_database() AND schema_name = ?"
    for (name,) in cur.execute(f"SELECT table_name FROM duckdb_tables() WHERE {where}", [fts]).fetchall():
        cur.execute(f'DROP TABLE "{fts}"."{name}"')
    macros = cur.execute(f"SELECT DISTINCT function_name FROM duckdb_functions() WHERE {where} "
                         "AND function_type = 'macro'", [fts]).fetchall()
    for (name,) in macros:
        cur.execute(f'DROP MACRO "{fts}"."{name}"')


def build_fts(cur: Cursor, schema: str, table: str) -> int:
    """(Re)build one table's index inside the caller's transaction. Returns the rid watermark."""
    row = cur.execute(f"SELECT coalesce(max(rid), 0), count(*) FROM {schema}.{table}").fetchone()
    assert row is not None
    watermark, count = int(row[0]), int(row[1])
    if count:
        drop_fts_objects(cur, fts_schema(schema, table))
        cur.execute(
            f"PRAGMA create_fts_index('{schema}.{table}', 'rid', 'search_text', stemmer='porter', "
            f"stopwords='main.fts_stopwords', ignore='{FTS_IGNORE}', strip_accents=1, lower=1, overwrite=1)"
        )
    cur.execute(
        "INSERT OR REPLACE INTO main.fts_state VALUES (?, ?, ?, ?)", [schema, table, watermark, datetime.now()]
    )
    return watermark


def search(
    store: Store,
    schema: str,
    table: str,
    terms: list[str],
    *,
    where: str,
    params: list[object],
    limit: int,
    corpus: Clause | None,
) -> list[int]:
    """Ranked rids for `terms` among the rows that satisfy `where` (an authorization/filter clause
    over alias `m`). BM25 over indexed rows, then unindexed rows by how many terms they contain.
    `corpus`: the clause of every row the caller may read, whose statistics BM25 scores with (None:
    every row; query/bm25_reader.py)."""
    return list(search_calibrated(store, schema, table, terms, where=where, params=params, limit=limit,
                                  corpus=corpus))


def search_calibrated(
    store: Store,
    schema: str,
    table: str,
    terms: list[str],
    *,
    where: str,
    params: list[object],
    limit: int,
    corpus: Clause | None,
) -> dict[int, float]:
    """search(), with each rid's calibrated lexical score (ranking/calibration.py), best first.

    Indexed rows and the delta score BM25 over the query's ceiling; rows found by substring (no index
    yet, or nothing BM25 could match) score the share of the query's terms they contain."""
    if not terms:
        return {}
    state, bm25 = indexed_bm25(store, schema, table, terms, corpus)
    ranked: dict[int, float] = {}
    floor = 0
    if bm25 is not None:
        if bm25.any():
            top = bm25.top(allowed_rids(store, schema, table, where, params), limit)
            ranked = {rid: lexical_score(raw, bm25.ceiling) for rid, raw in top}
        if ranked or bm25.knows_every_stem:
            floor = state.max_rid
    # Rows above the watermark are BM25-scored from the delta (query/fts_delta.py) when there is an
    # index. With none yet, or when BM25 finds nothing and some query word is not a term of the index
    # (a word split differently, e.g. in scripts written without spaces), rows are scanned: all of
    # them in the second case (see _search_fresh for how a word is looked for). (A scan of every row
    # takes ~0.5 s at 300k facts: it is not run when every word is a known term that the caller's rows
    # just do not hold.)
    fresh = _search_fresh(store, schema, table, terms, floor, where, params, limit) if state.max_rid > floor else []
    if not fresh:
        return ranked
    # Interleave so fresh rows are visible at once without pushing out the best indexed ones.
    merged: list[tuple[int, float]] = []
    indexed = list(ranked.items())
    fresh_scored = [(rid, term_fraction(matched, len(terms))) for rid, matched in fresh]
    for pair in zip(indexed, fresh_scored, strict=False):
        merged.extend(pair)
    longer = indexed if len(indexed) > len(fresh_scored) else fresh_scored
    merged.extend(longer[min(len(indexed), len(fresh_scored)):])
    return dict(merged[:limit])


def score_indexed(
    store: Store, schema: str, table: str, terms: list[str], rids: list[int], *, corpus: Clause | None
) -> dict[int, float]:
    """Calibrated lexical scores of these (already authorized) rows, from the index only: a row the
    other arm found, scored for fusion. Rows outside the index, or matching no term, are left out.
    `corpus`: as in search()."""
    if not terms or not rids:
        return {}
    _, bm25 = indexed_bm25(store, schema, table, terms, corpus)
    if bm25 is None:
        return {}
    wanted = np.array(sorted(set(rids)), dtype=np.int64)
    raw = bm25.of(wanted)
    return {int(rid): lexical_score(float(b), bm25.ceiling) for rid, b in zip(wanted, raw, strict=True) if b > 0}


# The substring pass's matches before scope, per store generation, table, terms and floor: fused recall
# asks the lexical arm twice for a table (its hits, then calibrated evidence for the floor), and another
# caller's same query needs only its own scope applied. Bounded by bytes: a short prefix can match most rows.
_FRESH: LruCache[tuple[Any, ...], tuple[np.ndarray, np.ndarray]] = LruCache(
    32 << 20, weigh=lambda v: int(v[0].nbytes + v[1].nbytes), generation=by_table_generation)


def _search_fresh(
    store: Store,
    schema: str,
    table: str,
    terms: list[str],
    floor: int,
    where: str,
    params: list[object],
    limit: int,
) -> list[tuple[int, int]]:
    """(rid, number of terms it contains), most first, among the rows above `floor` that satisfy `where`.

    A word of a script written without spaces (ranking/text.unspaced) is looked for anywhere in the
    text: there words run together. Any other word only where a word starts ("postgres" in
    "postgresql", "json" in "jsonl"): inside another word it is a different word ("tab" in "database",
    "unit" in "junit", "ice" in "noticed"), and it would score as a full match.

    The scan reads rids and counts only; `where` is applied through the cached set of rows it admits
    (query/derived.allowed_rids, as BM25 is), because evaluating the scope clause per row cost more than
    the scan itself (28 of 30 ms per 30k facts)."""
    def compute() -> tuple[np.ndarray, np.ndarray]:
        sql, args = _fresh_sql(schema, table, terms)
        res = store.cursor().execute(sql, [*args, floor, list(terms)]).fetchnumpy()
        rids, matched = np.asarray(res["rid"], dtype=np.int64), np.asarray(res["matched"], dtype=np.int64)
        rids.setflags(write=False)
        matched.setflags(write=False)
        return rids, matched

    key = (str(store.path), *table_state(store, schema, table), schema, table, tuple(terms), floor)
    rids, matched = _FRESH.get_or_compute(key, compute)
    keep = np.isin(rids, allowed_rids(store, schema, table, where, params))
    rids, matched = rids[keep], matched[keep]
    best = np.lexsort((-rids, -matched))[:limit]  # most terms first, then the newest row
    return [(int(rids[i]), int(matched[i])) for i in best]


def _fresh_sql(schema: str, table: str, terms: list[str]) -> tuple[str, list[object]]:
    """The scan, with its per-term arguments (then: the floor, the terms as a list).

    strip_accents(lower(...)) mirrors ranking/text.fold. The text is folded once per row, in the inner
    select, and a row goes on only when it holds some term anywhere (one lambda over the bound terms
    reads the folded text once); the per-term tests run on those rows alone. `contains` rather than
    LIKE: a LIKE with an ESCAPE clause took 3.5x as long per row, and terms are plain words."""
    hits: list[str] = []
    args: list[object] = []
    for t in terms:
        if unspaced(t):
            hits.append("CASE WHEN contains(f, ?) THEN 1 ELSE 0 END")
            args.append(t)
        else:  # a word-start pattern (RE2) for the spaced scripts
            hits.append("CASE WHEN contains(f, ?) AND regexp_matches(f, ?) THEN 1 ELSE 0 END")
            args += [t, r"(?:^|[^\pL\pN])" + re.escape(t)]
    sql = f"""SELECT rid, matched FROM (
                SELECT rid, ({" + ".join(hits)}) AS matched FROM (
                    SELECT m.rid, strip_accents(lower(m.search_text)) AS f FROM {schema}.{table} m WHERE m.rid > ?)
                WHERE len(list_filter(?::VARCHAR[], x -> contains(f, x))) > 0)
            WHERE matched > 0"""
    return sql, args


def warm(store: Store, schema: str) -> None:
    """Load a partition's postings (and deltas) ahead of its first recall: at 1M memories reading the
    index tables takes seconds, which the first query would otherwise wait for."""
    for table in MEMORY_TABLES:
        state = index_state(store, schema, table)
        if state.watermark > 0:
            fts = fts_schema(schema, table)
            try:
                POSTINGS.get(store.cursor(), str(store.path), schema, table, state.built_at)
            except IndexMoved:
                continue  # rebuilt meanwhile: loaded anyway, under the new build
            if state.max_rid > state.watermark:
                delta_postings(store, schema, table, fts, state.watermark)
