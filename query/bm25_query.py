"""One query's BM25 over one table: what its FTS index covers (`index_state`), the query's stems as
the index cuts them, and the scores of the indexed rows and of the delta (query/fts_delta.py) on one
scale, with the statistics every reader shares (query/bm25_memory.py) or, for a reader who may not read
every row, its own (query/bm25_reader.py). query/lexical.py ranks from these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from recallfs.query.bm25_memory import POSTINGS, IndexMoved, Postings, fts_schema, top_k
from recallfs.query.bm25_reader import readable_corpus, reader_bm25
from recallfs.query.caches import LruCache
from recallfs.query.cursor import Cursor
from recallfs.query.derived import allowed_rids, by_table_generation, store_state, table_state
from recallfs.query.fts_delta import delta_postings
from recallfs.query.stem_fold import fold
from recallfs.query.store import Store
from recallfs.ranking.calibration import lexical_ceiling

Clause = tuple[str, list[object]]  # (sql over alias `m`, its parameters)


@dataclass(frozen=True)
class IndexState:
    """What the FTS index of one table covers, for one store generation."""

    watermark: int  # rows with rid <= watermark are in the index
    built_at: object  # identifies one build of the index
    max_rid: int  # the table's newest row


_STATE: LruCache[tuple[Any, ...], Any] = LruCache(512, generation=by_table_generation)
MOVES = 3  # reads of the index's state when rebuilds keep landing between it and the index's tables


def index_state(store: Store, schema: str, table: str, *, fresh: bool = False) -> IndexState:
    """`fresh`: read it now, not from the cache (whose key moves on only after the commit returned)."""
    def compute() -> IndexState:
        cur = store.cursor()
        row = cur.execute(
            "SELECT built_max_rid, built_at FROM main.fts_state WHERE schema_name = ? AND tbl = ?", [schema, table]
        ).fetchone()
        top = cur.execute(f"SELECT coalesce(max(rid), 0) FROM {schema}.{table}").fetchone()
        return IndexState(int(row[0]) if row else 0, row[1] if row else None, int(top[0]) if top else 0)

    key = (str(store.path), *table_state(store, schema, table), schema, table)  # its fts_state row and rows
    if fresh:
        _STATE.put(key, compute())
    state: IndexState = _STATE.get_or_compute(key, compute)
    return state


def indexed_bm25(store: Store, schema: str, table: str, terms: list[str],
                 corpus: Clause | None) -> tuple[IndexState, Bm25Scores | None]:
    """The index's state and, when it holds rows, table_bm25 over it; both again when a rebuild landed
    between reading the state and reading the index (IndexMoved)."""
    state = index_state(store, schema, table)
    for attempt in range(MOVES):
        if state.watermark <= 0:
            return state, None
        try:
            return state, table_bm25(store, schema, table, terms, state, corpus)
        except IndexMoved:
            if attempt == MOVES - 1:
                raise
            state = index_state(store, schema, table, fresh=True)
    raise AssertionError("unreachable")


# term -> its stems as the index holds them. Per term rather than per query: an agent's queries differ
# but their words recur, and a query whose words were all seen needs no statement at all.
_STEMS: LruCache[str, tuple[str, ...]] = LruCache(65_536)


def index_stems(cur: Cursor, fts: str, terms: list[str]) -> list[str]:
    """The distinct stems of these query terms (query_terms) as the index holds them: DuckDB's own
    tokenizer and Porter stemmer, so query and documents are cut the same way, folded as the postings
    are (query/stem_fold.py). Every index is built with the same options. A term is tokenized on its
    own: the tokenizer splits on spaces, so the stems of a query are the union of its terms' stems."""
    missing = [t for t in dict.fromkeys(terms) if _STEMS.get(t) is None]
    if missing:
        rows = cur.execute(
            f"SELECT t, list(DISTINCT stem(tok, 'porter')) FROM "
            f"(SELECT t, unnest({fts}.tokenize(t)) AS tok FROM unnest(?::VARCHAR[]) AS u(t)) GROUP BY t",
            [missing]).fetchall()
        found = {str(r[0]): tuple(dict.fromkeys(fold(str(x)) for x in r[1] if x)) for r in rows}
        for term in missing:
            _STEMS.put(term, found.get(term, ()))
    return sorted({stem for t in terms for stem in (_STEMS.get(t) or ())})


class Bm25Scores:
    """One query's BM25 over a table: the indexed rows (`main`) and the delta, if any, on one scale."""

    def __init__(self, main: Postings, scores: np.ndarray, delta: Postings | None, delta_scores: np.ndarray | None,
                 ceiling: float, stems: list[str], *, knows_every_stem: bool | None = None) -> None:
        self.main, self.scores = main, scores
        self.delta, self.delta_scores = delta, delta_scores
        self.ceiling = ceiling
        # Every stem of the query is a term of the index or the delta: what BM25 does not find among the
        # caller's rows, no row holds as a word (a substring pass could only find it inside other words).
        # A reader of some rows only says so of its own rows (query/bm25_reader.py).
        self.knows_every_stem = bool(stems) and all(
            st in main.vocab or (delta is not None and st in delta.vocab) for st in stems
        ) if knows_every_stem is None else knows_every_stem

    def any(self) -> bool:
        return bool(self.scores.any()) or (self.delta_scores is not None and bool(self.delta_scores.any()))

    def top(self, allowed: np.ndarray, limit: int) -> list[tuple[int, float]]:
        """(rid, BM25) of the best `limit` rows among `allowed` (sorted rids) on both sides, by score
        descending then rid descending (bm25_memory.top_k's order)."""
        pairs = self._top(self.main, self.scores, allowed, limit)
        if self.delta is not None and self.delta_scores is not None:
            pairs += self._top(self.delta, self.delta_scores, allowed, limit)
            pairs.sort(key=lambda p: (-round(p[1], 9), -p[0]))
        return pairs[:limit]

    @staticmethod
    def _top(postings: Postings, scores: np.ndarray, allowed: np.ndarray, limit: int) -> list[tuple[int, float]]:
        if not scores.any():
            return []
        top = top_k(scores, postings.rids, postings.allowed_positions(allowed), limit)
        raw = postings.scores_of(np.array(top, dtype=np.int64), scores)
        return list(zip(top, raw.tolist(), strict=True))

    def of(self, rids: np.ndarray) -> np.ndarray:
        """BM25 of these sorted rids, from whichever side holds each (0: neither)."""
        out = self.main.scores_of(rids, self.scores)
        if self.delta is not None and self.delta_scores is not None:
            out = np.maximum(out, self.delta.scores_of(rids, self.delta_scores))
        return out


# The last few queries' BM25 arrays: fused recall scores the semantic arm's rows right after the
# lexical search of the same table, and would otherwise score every row of the index twice.
_BM25: LruCache[tuple[Any, ...], Any] = LruCache(6)


def table_bm25(store: Store, schema: str, table: str, terms: list[str], state: IndexState,
               corpus: Clause | None) -> Bm25Scores:
    """BM25 of every row of the table's index and of its delta (the rows above its watermark), with the
    query's ceiling over both: with the statistics of every row, or of the rows of `corpus` when the
    caller may not read them all (query/bm25_reader.py)."""
    cur = store.cursor()
    fts = fts_schema(schema, table)
    postings = POSTINGS.get(cur, str(store.path), schema, table, state.built_at)
    delta = delta_postings(store, schema, table, fts, state.watermark) if state.max_rid > state.watermark else None
    sides = [postings] if delta is None else [postings, delta]
    readable = allowed_rids(store, schema, table, *corpus) if corpus is not None else None
    if readable is not None and all(len(p.allowed_positions(readable)) == len(p.rids) for p in sides):
        readable = None  # the caller reads every row: the shared scores serve it
    key: tuple[object, ...] = (str(store.path), schema, table, state.built_at, state.max_rid, tuple(terms))

    def compute() -> Bm25Scores:
        stems = index_stems(cur, fts, terms)
        if readable is not None:
            return _reader_scores(sides, readable, stems)
        maxima = postings.term_maxima(stems)
        delta_scores = None
        if delta is not None:
            delta_scores = delta.score(stems)
            maxima = [max(a, b) for a, b in zip(maxima, delta.term_maxima(stems), strict=True)]
        return Bm25Scores(postings, postings.score(stems), delta, delta_scores, lexical_ceiling(maxima, len(stems)),
                          stems)

    if readable is not None and corpus is not None:
        # the generation too: the rows a clause admits change with a policy, not only with an ingest
        key = (*key, *store_state(store), corpus[0], repr(corpus[1]))
    found: Bm25Scores = _BM25.get_or_compute(key, compute)
    return found


def _reader_scores(sides: list[Postings], readable: np.ndarray, stems: list[str]) -> Bm25Scores:
    """Bm25Scores with the statistics of the `readable` rows alone."""
    scored = reader_bm25(sides, readable_corpus(sides, readable), stems)
    delta = sides[1] if len(sides) > 1 else None
    return Bm25Scores(sides[0], scored.scores[0], delta, scored.scores[1] if delta is not None else None,
                      lexical_ceiling(scored.maxima, len(stems)), stems, knows_every_stem=scored.knows_every_stem)
