"""The synthetic stores of evals/bench_scale.py: up to a million memories in one workspace.

What is in one: sessions of 40 turns between three speakers (60% of rows), facts about 2,000 entities,
each in one of the entity's four slots (a slot's newest fact is its current one) and one in ten
rewriting an earlier fact as its new version (33%), a summary per session (5%), and
tagged facts; dated over two years. Texts are built from a pool of distinct base sentences
(evals/bench_recall.base_sentences) with row-specific words, so the lexical arm sees distinct rows.

Vectors: embedding a million rows takes the model hours on two cores, so each row's vector is its base
sentence's real MiniLM embedding (computed once per pool and cached as .npy beside the stores) plus
Gaussian noise of norm ~0.45 (cosine ~0.9 to the base), seeded by the row: distinct vectors with the
cluster structure of real ones. The recall path that searches them is the real one.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from recallfs.evals.bench_recall import _EXTRA, AGENT, ORG, WS, base_sentences, pool_vectors, write_pool_vectors
from recallfs.query.embedder import Embedder
from recallfs.query.fts_freshness import rebuild_all_fts
from recallfs.query.ingest_file import ingest_records
from recallfs.query.records import MemoryRecord
from recallfs.query.store import Store
from recallfs.query.vectors import ensure_indexes

POOL = 20_000
SESSION_TURNS = 40
ENTITIES = 2_000
SLOTS = ("status", "owner", "deadline", "location")
NOISE = 0.45  # norm of each row's noise around its base vector
BATCH = 100_000  # records written per ingest call (one FTS build per call)


def scale_records(size: int, pool: list[str], seed: int = 5) -> Iterator[tuple[MemoryRecord, int]]:
    """(record, index of its base sentence) for `size` memories, in time order."""
    rng = random.Random(seed)
    start = datetime(2024, 1, 1)
    step = timedelta(days=730) / max(size, 1)
    speakers = ("maya", "lee", "sam")
    for i in range(size):
        b = rng.randrange(len(pool))
        words = " ".join(rng.sample(_EXTRA, 2))
        when = start + step * i
        r = rng.random()
        session = f"s{i // (SESSION_TURNS * 100 // 60)}"
        if r < 0.60:
            rec = MemoryRecord(table="turns", source_id=f"t{i}", content=f"{pool[b]} ({words} {i})",
                               created_at=when, org=ORG, workspace=WS, agent=AGENT, session=session,
                               seq=i % 1000, speaker=speakers[i % 3], kind="turn")
        elif r < 0.93:
            entity = f"project-{rng.randrange(ENTITIES)}"
            # one fact in ten rewrites an earlier one: a new version of the same memory
            source = f"f{rng.randrange(i)}" if i > 100 and rng.random() < 0.1 else f"f{i}"
            rec = MemoryRecord(table="facts", source_id=source, content=f"{entity}: {pool[b]} #{i}",
                               created_at=when, org=ORG, workspace=WS, agent=AGENT, kind="fact",
                               entity=entity, slot=f"{entity}.{rng.choice(SLOTS)}",
                               tags=[rng.choice(_EXTRA), words.split()[0]])
        else:
            rest = " ".join(pool[rng.randrange(len(pool))] + "." for _ in range(3))
            rec = MemoryRecord(table="summaries", source_id=f"S{i}", content=f"{pool[b]}. {rest} ({words})",
                               created_at=when, org=ORG, workspace=WS, agent=AGENT, kind="summary",
                               session=session, title=f"Session {session}")
        yield rec, b


def row_vectors(base: np.ndarray, rids: np.ndarray) -> np.ndarray:
    """Each row's vector: its base vector plus noise seeded by its rid, unit length."""
    dim = base.shape[1]
    out = np.empty_like(base)
    for i, rid in enumerate(rids.tolist()):  # per row, so that a row's vector does not depend on its batch
        out[i] = np.random.Generator(np.random.PCG64(rid)).standard_normal(dim, dtype=np.float32)
    out *= NOISE / np.sqrt(dim)
    out += base
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def build(path: Path, size: int, embedder: Embedder) -> None:
    """Write `size` memories in batches, then every row's vector, then the vector indexes."""
    rng = random.Random(7)
    pool = base_sentences(POOL, rng)
    pool_vecs = pool_vectors(pool, embedder, path.parent)
    t0 = time.perf_counter()
    bases: dict[tuple[str, str], int] = {}
    with Store(path) as store:
        batch: list[MemoryRecord] = []
        for rec, b in scale_records(size, pool):
            batch.append(rec)
            bases[(rec.table, rec.source_id)] = b
            if len(batch) == BATCH:  # the full-text index is built once, at the end
                ingest_records(store, batch, embedder=None, refresh=False)
                batch = []
                _note(f"  {path.name}: {len(bases):,} sources written, {time.perf_counter() - t0:.0f} s")
        if batch:
            ingest_records(store, batch, embedder=None, refresh=False)
        _note(f"  {path.name}: rows written in {time.perf_counter() - t0:.0f} s")
        rebuild_all_fts(store)
        _note(f"  {path.name}: full-text index built, {time.perf_counter() - t0:.0f} s")
        write_pool_vectors(store, bases, pool_vecs, embedder, spread=row_vectors)
        _note(f"  {path.name}: vectors written, {time.perf_counter() - t0:.0f} s")
        ensure_indexes(store)
        _note(f"  {path.name}: built in {time.perf_counter() - t0:.0f} s")


def _note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
