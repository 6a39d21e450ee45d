"""A full-text index's vocabulary as one sorted byte string: term -> row, by binary search.

Why not a dict: at a million memories the turns' index holds ~600k distinct terms (every row's own
number is one), and a `{str: int}` of them took ~65 MB and 0.5 s to build at start-up. Here the terms
are their UTF-8 bytes end to end with an offset each (~13 bytes a term), and a lookup is ~20 byte-string
comparisons; a query looks up a handful of stems.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import pairwise

import numpy as np


class TermTable:
    """Rows 0..n-1 of terms given in ascending order (byte order of their UTF-8, which is code point order)."""

    def __init__(self, sorted_terms: Sequence[str]) -> None:
        encoded = [t.encode("utf-8", "surrogatepass") for t in sorted_terms]
        self._blob = b"".join(encoded)
        self._ends = np.cumsum([len(e) for e in encoded], dtype=np.int64) if encoded else np.zeros(0, np.int64)

    @staticmethod
    def ascending(terms: Sequence[str]) -> bool:
        """Whether `terms` are strictly ascending, as the table needs them."""
        return all(a < b for a, b in pairwise(terms))

    def __len__(self) -> int:
        return len(self._ends)

    def _term(self, row: int) -> bytes:
        start = int(self._ends[row - 1]) if row else 0
        return self._blob[start: int(self._ends[row])]

    def get(self, term: str) -> int | None:
        """The term's row, or None."""
        key = term.encode("utf-8", "surrogatepass")
        lo, hi = 0, len(self._ends)
        while lo < hi:
            mid = (lo + hi) // 2
            if self._term(mid) < key:
                lo = mid + 1
            else:
                hi = mid
        return lo if lo < len(self._ends) and self._term(lo) == key else None

    def __contains__(self, term: object) -> bool:
        return isinstance(term, str) and self.get(term) is not None

    def items(self) -> Iterator[tuple[str, int]]:
        for row in range(len(self._ends)):
            yield self._term(row).decode("utf-8", "surrogatepass"), row

    @property
    def nbytes(self) -> int:
        return len(self._blob) + self._ends.nbytes
