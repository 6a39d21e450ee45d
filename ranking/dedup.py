"""Identity dedup: one hit per memory, however many arms, tables or versions reached it.

Two candidates are the same memory when they share a row id, or the same memory id in the same
table (two versions of one memory can both arrive when a caller fuses lists built at different
times). The kept hit has the best provenance and takes every other copy's arms and ranks.
"""

from __future__ import annotations

from recallfs.ranking.candidates import Candidate, absorb, ordered
from recallfs.ranking.provenance import provenance_key


def identity(cand: Candidate) -> tuple[str, str]:
    return (cand.table, cand.id) if cand.id else ("rid", str(cand.rid))


def dedup_identity(cands: list[Candidate]) -> list[Candidate]:
    """One candidate per row id, then per (table, id); pure: only a keeper that absorbs another is new."""
    owned: set[int] = set()  # id() of the keepers copied here, which absorb() may change
    by_rid: dict[int, Candidate] = {}
    for cand in sorted(cands, key=provenance_key):
        kept = by_rid.get(cand.rid)
        if kept is None:
            by_rid[cand.rid] = cand
        else:
            by_rid[cand.rid] = _absorbed(kept, cand, owned)
    groups: dict[tuple[str, str], Candidate] = {}
    for cand in sorted(by_rid.values(), key=provenance_key):
        kept = groups.get(identity(cand))
        if kept is None:
            groups[identity(cand)] = cand
        else:
            groups[identity(cand)] = _absorbed(kept, cand, owned)
    return ordered(list(groups.values()))


def _absorbed(kept: Candidate, other: Candidate, owned: set[int]) -> Candidate:
    """`kept` with `other` folded in: a copy the first time, so the caller's candidate stays as it was."""
    if id(kept) not in owned:
        kept = kept.copy()
        owned.add(id(kept))
    absorb(kept, other)
    return kept
