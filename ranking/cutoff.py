"""The min_score cut-off: hits scoring below it are dropped (0 keeps everything)."""

from __future__ import annotations

from recallfs.ranking.candidates import Candidate, ordered


def cut_below(cands: list[Candidate], min_score: float) -> list[Candidate]:
    # Ordered like every other stage's output, so a stage's result never depends on its input order.
    return ordered([c for c in cands if c.score >= min_score])
