"""BM25 with the statistics of the rows one reader may read.

An index's precomputed weights (query/bm25_memory.py) use the statistics of every row it holds: the
number of rows, their mean length and each term's document frequency. A reader whose policy hides some
rows would then score its own rows by words it cannot see: a term that hidden rows use often weighs
less, and the score a recall reports moves when a hidden row is written. That tells the reader that
hidden rows exist and which words they hold (developer-notes/scope.md). So a reader who may not read
every row of an index scores with the statistics of its readable rows alone, over the index and its
delta together: the scores a store holding only those rows would give, rebuilt.

A reader who may read every row keeps the precomputed weights (the common case; nothing to recompute).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from recallfs.query.bm25_memory import K1, B, Postings
from recallfs.query.caches import LruCache


@dataclass(frozen=True)
class ReaderCorpus:
    """The docs of an index and its delta (the sides) one reader may read: which, how many, and their
    mean length."""

    masks: tuple[np.ndarray, ...]  # per side: bool by doc position (a byte per doc: kept per reader)
    count: int  # readable docs on all sides
    mean_length: float


# (ids of the sides, id of the readable rids) -> (weak references to them, their ReaderCorpus). Postings
# and readable-rid arrays are shared, read-only objects per store generation (query/derived.allowed_rids
# gives one per scope), so one reader's recalls build its masks once. Weak references, so that an old
# generation's postings live no longer than their own caches keep them (a store written between
# recalls makes new ones each time), and a reused id is told apart: its reference is dead.
_CORPORA: LruCache[tuple[int, ...], tuple[tuple[weakref.ref[object], ...], ReaderCorpus]] = LruCache(32)


def _alive(refs: tuple[weakref.ref[object], ...], objects: Sequence[object]) -> bool:
    return all(ref() is obj for ref, obj in zip(refs, objects, strict=True))


def readable_corpus(sides: Sequence[Postings], allowed: np.ndarray) -> ReaderCorpus:
    """The ReaderCorpus of `allowed` (sorted readable rids) over these postings."""
    objects = (*sides, allowed)
    key = tuple(id(o) for o in objects)
    hit = _CORPORA.get(key)
    if hit is not None and _alive(hit[0], objects):
        return hit[1]
    positions = [p.allowed_positions(allowed) for p in sides]
    count = sum(len(pos) for pos in positions)
    mean = sum(float(p.lengths[pos].sum()) for p, pos in zip(sides, positions, strict=True)) / count if count else 1.0
    masks = []
    for p, pos in zip(sides, positions, strict=True):
        mask = np.zeros(len(p.rids), dtype=bool)
        mask[pos] = True
        mask.setflags(write=False)
        masks.append(mask)
    found = ReaderCorpus(tuple(masks), count, mean or 1.0)
    _CORPORA.put(key, (tuple(weakref.ref(o) for o in objects), found))
    return found


@dataclass(frozen=True)
class ReaderBm25:
    """One query's BM25 for one reader: a score per doc of each side (0 where it may not read), each
    stem's highest weight in a readable doc, and whether every stem occurs in one."""

    scores: list[np.ndarray]
    maxima: list[float]
    knows_every_stem: bool


Weighted = tuple[tuple[tuple[np.ndarray, np.ndarray], ...], float]  # per side (docs, weights); their max

# (id(corpus), stem) -> (a weak reference to that corpus, the stem's readable postings weighted for it).
# An agent's queries differ but their words recur (as query/bm25_query._STEMS notes), and a reader's
# weights of a term are fixed per corpus: a term seen before costs one addition per side, as with the
# shared weights. Bounded by bytes; the reference is weak so that no entry keeps a corpus (its masks)
# alive after _CORPORA let it go.
_WEIGHTED: LruCache[tuple[int, str], tuple[weakref.ref[ReaderCorpus], Weighted]] = LruCache(
    64 << 20, weigh=lambda v: sum(d.nbytes + w.nbytes for d, w in v[1][0]) + 64)


def reader_bm25(sides: Sequence[Postings], corpus: ReaderCorpus, stems: list[str]) -> ReaderBm25:
    """BM25 (match_bm25's formula and idf) of `stems` over the readable docs of these postings (an
    index and its delta), with the count, mean length and document frequencies of those docs alone."""
    scores = [np.zeros(len(p.rids), dtype=np.float64) for p in sides]
    maxima: list[float] = []
    for stem in stems:
        per_side, best = _weighted(sides, corpus, stem)
        for (docs, weights), out in zip(per_side, scores, strict=True):
            out[docs] += weights  # a term occurs once per doc in its postings
        maxima.append(best)
    return ReaderBm25(scores, maxima, bool(stems) and all(m > 0 for m in maxima))


def _weighted(sides: Sequence[Postings], corpus: ReaderCorpus, stem: str) -> Weighted:
    """The stem's postings in the readable docs of each side, with their BM25 weights for this corpus."""
    key = (id(corpus), stem)
    hit = _WEIGHTED.get(key)
    if hit is not None and hit[0]() is corpus:
        return hit[1]
    found = [_postings_of(p, mask, stem) for p, mask in zip(sides, corpus.masks, strict=True)]
    df = sum(len(docs) for docs, _ in found)
    idf = np.log10(((corpus.count - df) + 0.5) / (df + 0.5) + 1)  # DuckDB's log() is base 10
    per_side, best = [], 0.0
    for (docs, freqs), p in zip(found, sides, strict=True):
        norm = K1 * ((1 - B) + B * (p.lengths[docs] / corpus.mean_length))
        weights = idf * (freqs * (K1 + 1)) / (freqs + norm)
        docs.setflags(write=False)
        weights.setflags(write=False)
        per_side.append((docs, weights))
        best = max(best, float(weights.max()) if len(weights) else 0.0)
    weighted: Weighted = (tuple(per_side), best)
    _WEIGHTED.put(key, (weakref.ref(corpus), weighted))
    return weighted


def _postings_of(postings: Postings, mask: np.ndarray, stem: str) -> tuple[np.ndarray, np.ndarray]:
    """(doc positions, occurrences) of the stem's postings in the docs the reader may read."""
    t = postings.vocab.get(stem)
    if t is None:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float64)
    lo, hi = int(postings.starts[t]), int(postings.starts[t + 1])
    docs = postings.docs[lo:hi]
    keep = mask[docs]
    return docs[keep], postings.freqs[lo:hi][keep].astype(np.float64)  # float32 * 2.2 would round
