"""The candidate a ranking stage sees: an authorized row id with its scores and provenance."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(slots=True)
class Candidate:
    rid: int
    table: str
    score: float = 0.0
    arms: set[str] = field(default_factory=set)
    # (arm, table) -> 1-based rank in that list: kept so results.json can say where a hit came from
    ranks: dict[str, int] = field(default_factory=dict)
    created_at: datetime | None = None
    id: str = ""

    def sort_key(self) -> tuple[float, float, str, int]:
        """Deterministic order: score descending, then newest, then id, then row id."""
        ts = self.created_at.timestamp() if self.created_at else 0.0
        return (-self.score, -ts, self.id, self.rid)


def ordered(cands: list[Candidate]) -> list[Candidate]:
    return sorted(cands, key=Candidate.sort_key)
