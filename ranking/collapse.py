"""Near-duplicate collapse: candidates that say the same thing in the same words are one hit.

Groups form greedily in score order: each candidate joins the first group whose seed (its best
scored member) it resembles. Each group is shown as its copy with the best provenance (a fact over
a summary over a turn), carrying the group's best score and every member's arms and ranks.

Two candidates are near-duplicates when their embeddings are at least `threshold` similar AND they
have the same content words (function words, case, punctuation, word order and simple inflection
aside). The second test is what makes it safe: sentence embeddings barely see a number, a negation or
a path ("the tests must pass" / "the tests need not pass" score 0.98 with MiniLM; "limit 100/min" /
"limit 200/min" likewise), and such pairs are conflicts the reader must see, not copies to hide.

Fails soft: candidates without a usable embedding are compared by their folded text only, so exact
copies still collapse and nothing is lost when the vectors are missing.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from recallfs.ranking.candidates import Candidate, absorb, ordered
from recallfs.ranking.provenance import provenance_key
from recallfs.ranking.similarity import Vector, common_dim, unit_rows, usable
from recallfs.ranking.stage_config import DEFAULT_THRESHOLD
from recallfs.ranking.text import content_words, fold


def collapse_near_duplicates(
    cands: list[Candidate],
    vectors: Mapping[int, Vector] | None,
    *,
    threshold: float = DEFAULT_THRESHOLD,
) -> tuple[list[Candidate], str | None]:
    """Returns (candidates, note or None). The note says when some comparisons fell back to text."""
    if len(cands) < 2:
        return [c.copy() for c in cands], None
    work = ordered([c.copy() for c in cands])
    dim = common_dim(vectors)
    vecs = [usable(vectors, c.rid, dim) for c in work]
    present = [i for i, v in enumerate(vecs) if v is not None]
    sims: np.ndarray | None = None
    slot: dict[int, int] = {}
    if present:
        unit = unit_rows([vecs[i] for i in present])  # type: ignore[misc]
        sims = unit @ unit.T
        slot = {i: j for j, i in enumerate(present)}
    texts = [fold(c.content) for c in work]
    claims = [content_words(c.content) for c in work]

    members: list[list[int]] = []  # groups, each a list of indexes into `work`, seed first
    by_text: dict[str, int] = {}  # folded text -> group
    seed_slots = np.zeros(len(work), dtype=np.int64)  # vector rows of the seeds that have one
    seed_groups: list[int] = []
    for i in range(len(work)):
        homes = []
        if texts[i] and texts[i] in by_text:
            homes.append(by_text[texts[i]])
        if sims is not None and i in slot and seed_groups:
            close = np.flatnonzero(sims[slot[i], seed_slots[: len(seed_groups)]] >= threshold)
            same = [g for g in (seed_groups[int(j)] for j in close) if claims[members[g][0]] == claims[i]]
            if same:
                homes.append(same[0])
        if homes:
            members[min(homes)].append(i)  # the earliest (best scored) group it resembles
            continue
        members.append([i])
        group = len(members) - 1
        if texts[i]:
            by_text[texts[i]] = group
        if i in slot:
            seed_slots[len(seed_groups)] = slot[i]
            seed_groups.append(group)

    out: list[Candidate] = []
    for group in members:
        best = sorted((work[i] for i in group), key=provenance_key)
        keeper = best[0]
        for other in best[1:]:
            absorb(keeper, other)
        out.append(keeper)
    missing = len(work) - len(present)
    note = None
    if missing:
        note = (
            f"near-duplicate collapse compared {missing} of {len(work)} candidates by exact text only "
            "(no stored embedding)"
        )
    return ordered(out), note
