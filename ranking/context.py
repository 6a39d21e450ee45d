"""Context: a turn is read with the turns beside it.

A chat turn is short, and what it means often sits in the turns around it: "Yes, every Sunday since
May" answers a question the turn before asked. Each turn among recall's candidates gets a context
cosine: the query against the mean of its own stored vector and those of its session's nearest
readable turns before and after it (query/context.py), a chunk of the conversation embedded without
running the model again. The stage adds `weight` x (context cosine - OFFSET), when positive, to the
turn's calibrated score.

Measured on LoCoMo before it was built (replaying each question's final hits), against chunks of four
turns embedded by the model itself: the mean of the stored vectors did as well (turn R@10 +0.010 to
+0.014, session R@5 +0.006 to +0.008) at no cost to ingest; developer-notes/ranking.md, "Context".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from recallfs.ranking.candidates import Candidate, ordered
from recallfs.ranking.similarity import Vector

# Below this cosine a chunk of conversation is no evidence: MiniLM puts unrelated chat near 0.1-0.2.
OFFSET = 0.2


def context_cosine(query: Vector, vectors: Sequence[Vector]) -> float | None:
    """Cosine of `query` with the mean of `vectors` (a turn's and its neighbours'); None without any."""
    usable = [np.asarray(v, dtype=np.float32).ravel() for v in vectors if v is not None]
    if not usable:
        return None
    mean = np.sum(usable, axis=0)
    q = np.asarray(query, dtype=np.float32).ravel()
    norm = float(np.linalg.norm(mean)) * float(np.linalg.norm(q))
    return float(mean @ q) / norm if norm > 0 and np.isfinite(norm) else None


def group_cosines(
    query: Vector, groups: Mapping[int, Sequence[int]], vectors: Mapping[int, Vector]
) -> dict[int, float]:
    """`context_cosine` for many turns at once: rid -> the cosine of `query` with the mean of the vectors
    of its group (the turn and its neighbours), for each rid that has a vector of its own. A few array
    operations for all of them: gathering each group's rows by index into a matrix with one zero row
    for the gaps (np.add.at and a loop of small numpy calls each cost milliseconds per recall)."""
    rids = sorted({r for group in groups.values() for r in group if r in vectors})
    owners = [rid for rid in groups if rid in vectors]
    if not owners:
        return {}
    at = {r: i for i, r in enumerate(rids)}
    held = np.asarray([vectors[r] for r in rids], dtype=np.float32).reshape(len(rids), -1)
    matrix = np.vstack([held, np.zeros((1, held.shape[1]), dtype=np.float32)])  # the last row: a gap
    width = max(len(groups[rid]) for rid in owners)
    gap = [-1] * width  # -1 is no rid: it lands on the zero row like a neighbour without a vector
    index = np.array([at.get(r, len(rids)) for rid in owners for r in [*groups[rid], *gap][:width]],
                     dtype=np.int64).reshape(len(owners), width)
    sums = matrix[index].sum(axis=1)
    q = np.asarray(query, dtype=np.float32).ravel()
    norms = np.linalg.norm(sums, axis=1) * float(np.linalg.norm(q))
    usable = (norms > 0) & np.isfinite(norms)
    cosines = (sums @ q) / np.where(usable, norms, 1.0)
    return {rid: cos for rid, cos, ok in zip(owners, cosines.tolist(), usable.tolist(), strict=True) if ok}


def favour_context(cands: list[Candidate], cosines: Mapping[int, float], weight: float,
                   offset: float = OFFSET) -> list[Candidate]:
    """Each candidate with a context cosine above `offset` gains `weight` x the excess. Pure: changed
    candidates are copies."""
    if weight < 0:
        raise ValueError("the context weight must not be negative")
    out: list[Candidate] = []
    for cand in cands:
        gain = weight * (cosines.get(cand.rid, offset) - offset)
        if gain > 0:
            cand = cand.copy()
            cand.score += gain
        out.append(cand)
    return ordered(out)
