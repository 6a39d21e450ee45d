"""The approximate path of a table's vector search: the caller's readable windows, then either the
exact product over all of them (a narrow scope) or the inverted lists probed with the scope in mind
(query/ivf_lists.py). Which one ran is reported: `results.json` stages, `vector_search`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from recallfs.query.ivf_lists import EXACT_MAX, PROBE_PER_HIT, PROBE_WINDOWS, IvfLists

SHORTLIST = 3  # x k windows rescored exactly from their float32 vectors (the codes' error is ~0.02)


@dataclass(slots=True)
class Readable:
    """The windows a caller may read, in the forms the searches need; one per (table, allowed rids)."""

    mask: np.ndarray  # bool per window position
    count: int
    _positions: np.ndarray | None = None
    _per_list: dict[int, np.ndarray] = field(default_factory=dict)  # id(lists) -> readable windows per list

    def positions(self) -> np.ndarray:
        if self._positions is None:
            self._positions = np.flatnonzero(self.mask)
        return self._positions

    def per_list(self, lists: IvfLists) -> np.ndarray:
        found = self._per_list.get(id(lists))
        if found is None or len(found) != lists.nlist:
            found = self._per_list[id(lists)] = lists.readable_per_list(self.mask)
        return found


def top_k(positions: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(positions, scores) of the k best, best first, ties by position (the flat scan's order)."""
    if len(scores) > k:
        cut = np.argpartition(-scores, k - 1)[:k]
        positions, scores = positions[cut], scores[cut]
    order = np.lexsort((positions, -scores))
    return positions[order], scores[order]


def approximate_top(
    lists: IvfLists, readable: Readable, q: np.ndarray, k: int, gather: Callable[[np.ndarray], np.ndarray],
    selector: Callable[[], object],
) -> tuple[np.ndarray, np.ndarray, str] | None:
    """(positions, inner products, path) of the best k readable windows, or None when the lists cannot
    find k of them (the caller then scans exactly). `gather(positions)` gives the stored vectors,
    `selector()` a FAISS selector of the readable windows."""
    if readable.count <= max(EXACT_MAX, k):
        positions = readable.positions()
        return (*top_k(positions, gather(positions) @ q, k), f"exact over {readable.count} readable")
    if lists.codes is None:
        return None
    probed = lists.lists_for(q, readable.per_list(lists), max(PROBE_WINDOWS, PROBE_PER_HIT * k))
    shortlist = lists.codes.search(q, probed, max(SHORTLIST * k, k + 128), selector())
    if len(shortlist) < k:
        return None
    return (*top_k(shortlist, gather(shortlist) @ q, k), f"ivf: {len(probed)} of {lists.nlist} lists")
