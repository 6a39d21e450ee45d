"""The reranker: cosine of the query against each candidate's stored embedding, blended with the
fused score. Off by default.

It works in chunks against a time budget; when the budget runs out it returns the input order
unchanged (a half-reranked list would mix two scales). A candidate without an embedding gets the
mean cosine of the others, so a missing vector neither helps nor sinks it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

import numpy as np

from recallfs.ranking.candidates import Candidate, ordered
from recallfs.ranking.similarity import Vector, common_dim, cosine_to, usable

CHUNK = 64


def rerank(
    cands: list[Candidate],
    query_vector: Vector | None,
    vectors: Mapping[int, Vector] | None,
    *,
    mix: float = 0.5,
    budget_ms: float = 50.0,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[list[Candidate], str | None]:
    """New score = (1 - mix) * score + mix * max(cosine, 0). Returns (candidates, note or None)."""
    if not cands:
        return cands, None
    if query_vector is None:
        return cands, "rerank skipped: no query embedding (the semantic arm did not run)"
    dim = int(np.asarray(query_vector).size)
    if not vectors or common_dim(vectors) != dim:
        return cands, "rerank skipped: no stored embeddings for these candidates"
    start = clock()
    cosines: dict[int, float] = {}
    for begin in range(0, len(cands), CHUNK):
        if (clock() - start) * 1000 > budget_ms:
            return cands, f"rerank ran out of its {budget_ms:g} ms budget; the fused order was kept"
        chunk = cands[begin: begin + CHUNK]
        present = [(c.rid, v) for c in chunk if (v := usable(vectors, c.rid, dim)) is not None]
        if present:
            sims = cosine_to(np.asarray(query_vector), [v for _, v in present])
            cosines.update((rid, float(s)) for (rid, _), s in zip(present, sims, strict=True))
    if not cosines:
        return cands, "rerank skipped: no stored embeddings for these candidates"
    fallback = sum(cosines.values()) / len(cosines)
    out = [c.copy() for c in cands]
    for cand in out:
        cos = max(cosines.get(cand.rid, fallback), 0.0)
        cand.score = (1.0 - mix) * cand.score + mix * cos
    return ordered(out), None
