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

from recallfs.ranking.candidates import Candidate, absorb, ordered
from recallfs.ranking.close_pairs import lower_pairs, usable_rows
from recallfs.ranking.provenance import provenance_key
from recallfs.ranking.similarity import Vector, unit
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
        if len(members) == 1:  # most groups: the candidate as it came
            out.append(work[members[0]])
            continue
        best = sorted((work[i] for i in members), key=provenance_key)
        keeper = best[0].copy()  # only a keeper that absorbs is new
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
    index, matrix = usable_rows([c.rid for c in work], vectors)
    if not index:
        return earlier, 0
    rows, cols = lower_pairs(unit(matrix), threshold)
    if len(index) == len(work):  # every candidate has a vector: positions are candidate indexes
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            earlier[r].append(c)
    else:
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            earlier[index[r]].append(index[c])
    return earlier, len(index)


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
        home = self._home(i)
        if home is not None:
            self.members[home].append(i)
            return
        self.members.append([i])
        group = len(self.members) - 1
        if self.texts[i]:
            self.by_text[self.texts[i]] = group
        self.seed_of[i] = group

    def _home(self, i: int) -> int | None:
        """The earliest group whose seed has i's folded text, or is close by embedding and claims the
        same. Close seeds come in seed order, so the first that claims the same is the earliest, and
        none at or after the text's group can be earlier: content words are computed only up to there."""
        text = self.texts[i]
        best = self.by_text.get(text) if text else None
        mine: frozenset[str] | None = None
        for j in self.earlier[i]:
            group = self.seed_of.get(j)
            if group is None:
                continue
            if best is not None and group >= best:
                break
            if mine is None:
                mine = self.claims(i)
            if self.claims(j) == mine:
                return group
        return best
