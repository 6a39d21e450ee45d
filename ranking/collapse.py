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
from recallfs.ranking.similarity import Vector, common_dim, unit_rows
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
        return list(cands), None
    work = ordered(list(cands))
    earlier, with_vectors = _close_pairs(work, vectors, threshold)
    groups = _Groups(work, earlier)
    for i in range(len(work)):
        groups.place(i)
    out: list[Candidate] = []
    for members in groups.members:
        best = sorted((work[i] for i in members), key=provenance_key)
        keeper = best[0].copy() if len(best) > 1 else best[0]  # only a keeper that absorbs is new
        for other in best[1:]:
            absorb(keeper, other)
        out.append(keeper)
    missing = len(work) - with_vectors
    note = None
    if missing:
        note = (
            f"near-duplicate collapse compared {missing} of {len(work)} candidates by exact text only "
            "(no stored embedding)"
        )
    return ordered(out), note


def _close_pairs(
    work: list[Candidate], vectors: Mapping[int, Vector] | None, threshold: float
) -> tuple[list[list[int]], int]:
    """(for each candidate, the earlier candidates at or above the cosine threshold, in order; how many
    candidates have a usable vector). The cosine matrix is thresholded once: near-duplicates are rare,
    so the per-candidate lists are short and the greedy pass below never touches the matrix again."""
    earlier: list[list[int]] = [[] for _ in work]
    index, usable_vectors = _usable_rows(work, vectors)
    if not index:
        return earlier, 0
    unit = unit_rows(usable_vectors)
    # The lower triangle of one product (the same values the pairwise test always read); row-major
    # order lists each row's earlier columns ascending, which is the order seeds were made in.
    rows, cols = np.nonzero(np.tril(unit @ unit.T >= threshold, -1))
    for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
        earlier[index[r]].append(index[c])
    return earlier, len(index)


def _usable_rows(work: list[Candidate], vectors: Mapping[int, Vector] | None) -> tuple[list[int], list[Vector]]:
    """(indexes of the candidates with a usable vector, those vectors): similarity.usable's test (the
    common dimension, every value finite), made on one stacked matrix rather than vector by vector."""
    dim = common_dim(vectors)
    if not vectors or dim is None:
        return [], []
    index, rows = [], []
    for i, c in enumerate(work):
        vec = vectors.get(c.rid)
        if vec is not None:
            arr = np.asarray(vec, dtype=np.float32).ravel()
            if arr.shape[0] == dim:
                index.append(i)
                rows.append(arr)
    if not rows:
        return [], []
    finite = [bool(ok) for ok in np.asarray(np.isfinite(np.stack(rows)).all(axis=1)).tolist()]
    return [i for i, ok in zip(index, finite, strict=True) if ok], [r for r, ok in zip(rows, finite, strict=True) if ok]


class _Groups:
    """Groups of indexes into the candidates (in score order), each seed first."""

    def __init__(self, work: list[Candidate], earlier: list[list[int]]) -> None:
        self.work = work
        self.texts = [fold(c.content) for c in work]
        # Content words are the costly feature, and only a pair above the cosine threshold asks for
        # them: computed on first use, most candidates never need theirs.
        self._claims: dict[int, frozenset[str]] = {}
        self.earlier = earlier
        self.members: list[list[int]] = []
        self.by_text: dict[str, int] = {}  # folded text -> group
        self.seed_of: dict[int, int] = {}  # candidate index of a seed -> its group

    def claims(self, i: int) -> frozenset[str]:
        """Candidate i's content words (ranking/text.content_words), computed once, when first asked."""
        found = self._claims.get(i)
        if found is None:
            found = self._claims[i] = content_words(self.work[i].content)
        return found

    def place(self, i: int) -> None:
        """Candidate i joins the earliest (best scored) group it resembles, or seeds a new one."""
        homes = self._homes(i)
        if homes:
            self.members[min(homes)].append(i)
            return
        self.members.append([i])
        group = len(self.members) - 1
        if self.texts[i]:
            self.by_text[self.texts[i]] = group
        self.seed_of[i] = group

    def _homes(self, i: int) -> list[int]:
        """The groups whose seed has i's folded text, or is close by embedding and claims the same."""
        homes = []
        if self.texts[i] and self.texts[i] in self.by_text:
            homes.append(self.by_text[self.texts[i]])
        close = (self.seed_of[j] for j in self.earlier[i] if j in self.seed_of)
        # The earliest close seed that claims the same wins: later ones need no content words.
        same = next((g for g in close if self.claims(self.members[g][0]) == self.claims(i)), None)
        if same is not None:
            homes.append(same)
        return homes
