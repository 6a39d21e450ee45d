"""Token budget with MMR diversity: choose the hits that fit in N tokens, preferring relevant hits
that say something the already chosen ones do not. Opt in with `budget:N`.

Maximal marginal relevance: pick, among the hits that still fit, the one maximising
    lambda * relevance - (1 - lambda) * (highest similarity to a hit already chosen)
with relevance the score scaled to the best score. Similarity is the embedding cosine when both
hits have one, else word overlap (fails soft). The chosen hits leave in score order: MMR decides
which hits make the budget, the tie-break stage decides their order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from recallfs.ranking.candidates import Candidate, ordered
from recallfs.ranking.similarity import Vector, common_dim, jaccard, unit_rows, usable
from recallfs.ranking.stage_config import DEFAULT_LAMBDA
from recallfs.ranking.text import estimate_tokens, words


def budget_select(
    cands: list[Candidate],
    budget_tokens: int,
    vectors: Mapping[int, Vector] | None,
    *,
    diversity: bool = True,
    mmr_lambda: float = DEFAULT_LAMBDA,
    tokens: Callable[[str], int] = estimate_tokens,
) -> tuple[list[Candidate], str]:
    """Returns (chosen candidates, a note saying what the budget kept)."""
    pool = ordered([c.copy() for c in cands])
    if not pool:
        return [], f"budget {budget_tokens} tokens: nothing to choose from"
    cost = [tokens(c.content) for c in pool]
    top = max(c.score for c in pool)
    rel = [c.score / top if top > 0 else 0.0 for c in pool]
    dim = common_dim(vectors)
    vecs = [usable(vectors, c.rid, dim) for c in pool]
    has = [v is not None for v in vecs]
    sims: np.ndarray | None = None
    if diversity and any(has):
        zero = np.zeros(dim or 1, dtype=np.float32)
        sims = unit_rows([v if v is not None else zero for v in vecs])
        sims = sims @ sims.T

    bags = [frozenset(words(c.content)) for c in pool]

    def similarity(i: int, j: int) -> float:
        if sims is not None and has[i] and has[j]:
            return float(sims[i, j])
        return jaccard(bags[i], bags[j])

    chosen: list[int] = []
    max_sim = [0.0] * len(pool)
    left = set(range(len(pool)))
    used = 0
    while left:
        fitting = [i for i in left if cost[i] <= budget_tokens - used]
        if not fitting:
            break
        if diversity and chosen:
            pick = max(fitting, key=lambda i: (mmr_lambda * rel[i] - (1 - mmr_lambda) * max_sim[i], -i))
        else:
            pick = min(fitting)  # pool is in score order
        chosen.append(pick)
        left.discard(pick)
        used += cost[pick]
        if diversity:
            for i in left:
                max_sim[i] = max(max_sim[i], similarity(i, pick))
    kept = [pool[i] for i in chosen]
    note = f"budget {budget_tokens} tokens: kept {len(kept)} of {len(pool)} hits, about {used} tokens"
    if diversity:
        note += " (MMR diversity)"
    return ordered(kept), note
