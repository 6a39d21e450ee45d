"""BM25 over a DuckDB FTS index, scored in memory.

The index itself is DuckDB's: `PRAGMA create_fts_index` writes `fts_<schema>_<table>.{dict, docs, terms,
stats}`. Its `match_bm25` macro, though, is a correlated subquery evaluated against every row of the
table, which costs 100+ ms per table at 100k rows. Here the same index tables are read once per index
build into a term -> postings map whose per-posting BM25 weights are precomputed, so a query is one
vector addition per query term (a millisecond at 100k rows). The scores are match_bm25's (k1 = 1.2,
b = 0.75, its idf), but for the two Porter stems of a word ending in a vowel and y, which count as one
term here (query/stem_fold.py).

An entry is keyed on the index's build time in `main.fts_state`: an ingest that rebuilds the index makes
the next query load the new postings. The index's tables and that build time are read in one snapshot
(a rebuild committed between two of the reads once mixed two builds: an IndexError, and a recall without
that table's lexical hits), and a build newer than the caller's is IndexMoved, so the caller reads the
index's state again.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np

from recallfs.query.caches import LruCache
from recallfs.query.cursor import Cursor, read_snapshot
from recallfs.query.stem_fold import fold_vocabulary
from recallfs.query.term_table import TermTable

K1, B = 1.2, 0.75  # match_bm25's defaults


ALLOWED_MEMO = 16  # readable-rid sets remembered per index (Postings.allowed_positions)


@dataclass(frozen=True)
class Postings:
    """One FTS index in memory. Doc positions index `rids`; a term's postings are the slice
    `starts[t]:starts[t + 1]` of `docs` and `weights`."""

    vocab: TermTable | dict[str, int]  # term -> row (a dict for a small delta: query/fts_delta.py)
    starts: np.ndarray  # int64, len(vocab) + 1
    docs: np.ndarray  # int32 doc positions, grouped by term
    weights: np.ndarray  # float64 BM25 weight of the term in the doc, with the statistics of every doc
    rids: np.ndarray  # int64, position -> rid, ascending
    # What a reader who may not read every doc scores with (query/bm25_reader.py): its own statistics
    freqs: np.ndarray  # float32 occurrences of the term in the doc, beside `weights`
    lengths: np.ndarray  # float64 tokens per doc, by position
    # id(readable rids) -> (that array, its positions): see allowed_positions
    _allowed: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def nbytes(self) -> int:
        return (self.starts.nbytes + self.docs.nbytes + self.weights.nbytes + self.rids.nbytes
                + self.freqs.nbytes + self.lengths.nbytes)

    def positions_of(self, rids: np.ndarray) -> np.ndarray:
        """Doc positions of these sorted rids (rids the index does not hold are dropped)."""
        pos = np.searchsorted(self.rids, rids)
        pos = np.minimum(pos, len(self.rids) - 1) if len(self.rids) else pos
        return pos[self.rids[pos] == rids] if len(self.rids) else pos[:0]

    def allowed_positions(self, allowed: np.ndarray) -> np.ndarray:
        """positions_of() for a readable-rid set of query/derived.allowed_rids, remembered: that array is
        one shared, read-only object per scope and store generation, so every recall of the same
        caller would otherwise search all its rids again (about 1 ms per recall at 100k). The entry
        holds the array itself, so its id() cannot be reused while the entry lives."""
        hit = self._allowed.get(id(allowed))
        if hit is not None and hit[0] is allowed:
            return hit[1]
        positions = self.positions_of(allowed)
        positions.setflags(write=False)
        if len(self._allowed) >= ALLOWED_MEMO:
            self._allowed.clear()  # a few scopes per index is the common case; start again past that
        self._allowed[id(allowed)] = (allowed, positions)
        return positions

    def score(self, stems: list[str]) -> np.ndarray:
        """BM25 of every doc for these (distinct, stemmed) terms; 0 where no term occurs."""
        scores = np.zeros(len(self.rids), dtype=np.float64)
        for stem in stems:
            t = self.vocab.get(stem)
            if t is None:
                continue
            lo, hi = self.starts[t], self.starts[t + 1]
            scores[self.docs[lo:hi]] += self.weights[lo:hi]  # a term occurs once per doc in its postings
        return scores


    def term_maxima(self, stems: list[str]) -> list[float]:
        """The highest BM25 weight each of these stems reaches in any doc (0 for an unknown stem)."""
        out = []
        for stem in stems:
            t = self.vocab.get(stem)
            lo, hi = (self.starts[t], self.starts[t + 1]) if t is not None else (0, 0)
            out.append(float(self.weights[lo:hi].max()) if hi > lo else 0.0)
        return out

    def scores_of(self, rids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """The entries of a `score()` array for these rids (0 where the index does not hold a rid)."""
        out = np.zeros(len(rids), dtype=np.float64)
        if len(self.rids) == 0 or len(rids) == 0:
            return out
        pos = np.minimum(np.searchsorted(self.rids, rids), len(self.rids) - 1)
        held = self.rids[pos] == rids
        out[held] = scores[pos[held]]
        return out


def load_postings(cur: Cursor, fts: str) -> Postings:
    """Read DuckDB's FTS tables of schema `fts` into memory, with match_bm25's weights."""
    stats = cur.execute(f"SELECT num_docs, avgdl FROM {fts}.stats").fetchone()
    assert stats is not None
    num_docs, avgdl = float(stats[0]), float(stats[1]) or 1.0
    docs = cur.execute(f"SELECT docid, name, len FROM {fts}.docs ORDER BY name").fetchnumpy()
    rids = np.asarray(docs["name"], dtype=np.int64)
    # FTS docids are dense row numbers; map them to our positions (ordered by rid).
    docids = np.asarray(docs["docid"], dtype=np.int64)
    position = np.full(int(docids.max()) + 1 if len(docids) else 0, -1, dtype=np.int64)
    position[docids] = np.arange(len(docids))
    lengths = np.asarray(docs["len"], dtype=np.float64)  # by position
    norm = K1 * ((1 - B) + B * (lengths / avgdl))

    terms = cur.execute(f"SELECT termid, term FROM {fts}.dict ORDER BY term").fetchnumpy()
    termids = np.asarray(terms["termid"], dtype=np.int64)
    words = [str(term) for term in terms["term"].tolist()]
    row_of = np.full(int(termids.max()) + 1 if len(termids) else 0, -1, dtype=np.int64)
    folded = fold_vocabulary(words)  # two Porter stems of one word count as one term (query/stem_fold.py)
    if folded is None:
        row_of[termids] = np.arange(len(termids))
    else:
        words, row_of[termids] = folded

    t_rows, docid, count = _term_frequencies(cur, fts, row_of)
    # a term's documents, counted from its postings: the dict's df, or the union of a folded term's
    per_term = np.bincount(t_rows, minlength=len(words))
    df = per_term.astype(np.float64)
    idf = np.log10(((num_docs - df) + 0.5) / (df + 0.5) + 1)  # DuckDB's log() is base 10
    d_pos = position[docid]
    freq = count.astype(np.float64)
    weights = idf[t_rows] * (freq * (K1 + 1)) / (freq + norm[d_pos])
    starts = np.zeros(len(words) + 1, dtype=np.int64)
    np.cumsum(per_term, out=starts[1:])
    # DuckDB orders strings by their bytes, as the table does; anything else falls back to a dict
    vocab = TermTable(words) if TermTable.ascending(words) else {w: i for i, w in enumerate(words)}
    return Postings(vocab=vocab, starts=starts, docs=d_pos.astype(np.int32), weights=weights, rids=rids,
                    freqs=freq.astype(np.float32), lengths=lengths)


def _term_frequencies(cur: Cursor, fts: str, row_of: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(term row, docid, occurrences) of every (term, document) pair, ordered by row (`row_of[termid]`)
    then docid. Counted here rather than by GROUP BY ... ORDER BY: the table is one row per token (7M for
    600k turns), and the raw read plus one sort of packed keys took 0.9 s against DuckDB's 2.1 s on one
    thread."""
    raw = cur.execute(f"SELECT termid, docid FROM {fts}.terms").fetchnumpy()
    key = (row_of[np.asarray(raw["termid"], dtype=np.int64)] << 32) | np.asarray(raw["docid"], dtype=np.int64)
    del raw
    pairs, count = np.unique(key, return_counts=True)
    return pairs >> 32, pairs & 0xFFFFFFFF, count


def top_k(scores: np.ndarray, rids: np.ndarray, allowed: np.ndarray | None, limit: int) -> list[int]:
    """The best `limit` rids with a positive score, among `allowed` doc positions (None: all), ordered by
    score descending then rid descending, as the SQL arm orders them."""
    if limit <= 0:
        return []
    # Sums of the same weights in another order differ in the last bits; rounding makes equal scores
    # equal, so the rid tie-break (not float noise) orders them.
    scores = np.round(scores, 9)
    if allowed is not None:
        masked = np.zeros_like(scores)
        masked[allowed] = scores[allowed]
        scores = masked
    cand = np.flatnonzero(scores > 0)
    if len(cand) > limit:
        # Keep everything tied with the limit-th score, so the rid tie-break decides, not argpartition.
        kth = np.partition(scores[cand], len(cand) - limit)[len(cand) - limit]
        cand = cand[scores[cand] >= kth]
    order = np.lexsort((-rids[cand], -scores[cand]))[:limit]
    return [int(r) for r in rids[cand[order]]]


def fts_schema(schema: str, table: str) -> str:
    """The schema of a table's FTS index (`create_fts_index` names it)."""
    return f"fts_{schema}_{table}"


class IndexMoved(RuntimeError):
    """The index was rebuilt after the caller read its state: read the state again."""


class PostingsCache:
    """Postings of recently used indexes, keyed on (store path, fts schema, build time)."""

    def __init__(self, size: int = 48) -> None:
        self._cache: LruCache[tuple[str, str, object], Postings] = LruCache(size)
        self._build_lock = threading.Lock()  # one load at a time: a burst of first queries loads once

    def get(self, cur: Cursor, store_path: str, schema: str, table: str, built_at: object) -> Postings:
        fts = fts_schema(schema, table)
        key = (store_path, fts, built_at)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        with self._build_lock:
            hit = self._cache.get(key)
            if hit is None:
                with read_snapshot(cur):
                    row = cur.execute("SELECT built_at FROM main.fts_state WHERE schema_name = ? AND tbl = ?",
                                      [schema, table]).fetchone()
                    hit = load_postings(cur, fts)
                seen = row[0] if row else None
                self._cache.put((store_path, fts, seen), hit)
                if seen != built_at:
                    raise IndexMoved(f"{fts} was rebuilt at {seen}, after the state of {built_at} was read")
        return hit


POSTINGS = PostingsCache()
