"""BM25 for the rows a table's FTS index has not seen yet, so that a small ingest need not rebuild it.

DuckDB's FTS index does not update on insert, and rebuilding it reads the whole table: at 600k turns
that is ~15 s, after every ingest however small. So a large table's index is rebuilt only when the rows
above its watermark grow past a share of it (`needs_rebuild`); until then those rows are the delta:
tokenized by the index's own macro and stemmer (`{fts}.tokenize`, `stem(_, 'porter')`, its stopwords:
the same terms as the index would hold, checked in tests/test_fts_delta.py), folded as the index's
terms are (query/stem_fold.py), and held in memory as postings (query/bm25_memory.Postings) per store
generation.

Their BM25 weights use the statistics of the index and the delta together: N and the average length
over both, and each term's document frequency in both. The indexed rows keep the weights of their
build, whose statistics differ from these by at most the delta's share, so scores on both sides are on
one scale and merge by value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from recallfs.query.bm25_memory import K1, B, Postings
from recallfs.query.caches import LruCache
from recallfs.query.cursor import Cursor
from recallfs.query.derived import by_table_generation, table_state
from recallfs.query.stem_fold import FOLD_SQL, variants
from recallfs.query.store import Store

# A table of this many rows or fewer is rebuilt by every ingest (about 0.1 s). It was 50,000 (about 2 s),
# which an agent paid on every file it wrote to inbox/: 0.66 s of a 2.1 s write into 30k facts.
ALWAYS_REBUILD = 5_000
DELTA_SHARE = 0.05  # else, once the rows behind the index pass this share of the rows in it
DELTA_MAX = 50_000  # or this many


def needs_rebuild(indexed: int, behind: int) -> bool:
    """Whether a table whose index holds `indexed` rows and misses `behind` should be rebuilt now."""
    if behind <= 0:
        return False
    if indexed == 0 or indexed + behind <= ALWAYS_REBUILD:
        return True
    return behind > min(DELTA_MAX, DELTA_SHARE * indexed)


def load_delta(cur: Cursor, schema: str, table: str, fts: str, watermark: int) -> Postings:
    """Postings of the rows above `watermark`, weighted with the index's statistics and theirs."""
    stats = cur.execute(f"SELECT num_docs, avgdl FROM {fts}.stats").fetchone()
    assert stats is not None
    indexed, avgdl = float(stats[0]), float(stats[1]) or 1.0
    tf = cur.execute(
        f"""WITH toks AS (SELECT rid, unnest({fts}.tokenize(search_text)) AS tok FROM {schema}.{table}
                          WHERE rid > ?)
            SELECT {FOLD_SQL.format("stem(tok, 'porter')")} AS term, rid, count(*) AS tf FROM toks
            WHERE tok <> '' AND tok NOT IN (SELECT sw FROM {fts}.stopwords)
            GROUP BY ALL ORDER BY term, rid""", [watermark]).fetchnumpy()
    terms = np.asarray(tf["term"], dtype=object)
    doc_rids = np.asarray(tf["rid"], dtype=np.int64)
    freq = np.asarray(tf["tf"], dtype=np.float64)
    rids, d_pos = np.unique(doc_rids, return_inverse=True)
    lengths = np.bincount(d_pos, weights=freq, minlength=len(rids))
    vocab_terms, t_rows = np.unique(terms, return_inverse=True) if len(terms) else (terms, np.zeros(0, np.int64))
    fresh_df = np.bincount(t_rows, minlength=len(vocab_terms)).astype(np.float64)
    indexed_df = _indexed_df(cur, fts, [str(t) for t in vocab_terms])
    docs = indexed + len(rids)
    mean = (avgdl * indexed + float(lengths.sum())) / docs if docs else 1.0
    df = indexed_df + fresh_df
    idf = np.log10(((docs - df) + 0.5) / (df + 0.5) + 1)  # as match_bm25 (DuckDB's log() is base 10)
    norm = K1 * ((1 - B) + B * (lengths / (mean or 1.0)))
    weights = idf[t_rows] * (freq * (K1 + 1)) / (freq + norm[d_pos])
    starts = np.zeros(len(vocab_terms) + 1, dtype=np.int64)
    np.cumsum(np.bincount(t_rows, minlength=len(vocab_terms)), out=starts[1:])
    vocab = {str(t): i for i, t in enumerate(vocab_terms.tolist())}
    return Postings(vocab=vocab, starts=starts, docs=d_pos.astype(np.int32), weights=weights, rids=rids,
                    freqs=freq.astype(np.float32), lengths=lengths.astype(np.float64))


def _indexed_df(cur: Cursor, fts: str, terms: list[str]) -> np.ndarray:
    """Each (folded) term's document frequency in the index (0 for a term it does not hold): for a term
    the index holds in both Porter forms, the documents holding either, as bm25_memory counts them."""
    if not terms:
        return np.zeros(0, dtype=np.float64)
    forms = {t: variants(t) for t in terms}
    rows = {str(term): (int(termid), float(df)) for term, termid, df in cur.execute(
        f"SELECT term, termid, df FROM {fts}.dict WHERE term = ANY(?)",
        [[f for fs in forms.values() for f in fs]]).fetchall()}
    out = np.zeros(len(terms), dtype=np.float64)
    for i, t in enumerate(terms):
        held = [rows[f] for f in forms[t] if f in rows]
        if len(held) == 1:
            out[i] = held[0][1]
        elif held:
            found = cur.execute(f"SELECT count(DISTINCT docid) FROM {fts}.terms WHERE termid = ANY(?)",
                                [[termid for termid, _ in held]]).fetchone()
            out[i] = float(found[0]) if found else 0.0
    return out


_DELTAS: LruCache[tuple[Any, ...], Postings] = LruCache(48, generation=by_table_generation)


def delta_postings(store: Store, schema: str, table: str, fts: str, watermark: int) -> Postings:
    """load_delta(), once per generation of the table (derived.table_state)."""
    key = (str(store.path), *table_state(store, schema, table), schema, table, watermark)
    found: Postings = _DELTAS.get_or_compute(key, lambda: load_delta(store.cursor(), schema, table, fts, watermark))
    return found
