"""Hand-made candidates for the ranking stage tables."""

from __future__ import annotations

from datetime import datetime, timedelta

from recallfs.ranking.candidates import Candidate

DAY0 = datetime(2026, 1, 1, 12, 0)


def cand(rid: int, score: float = 0.5, table: str = "turns", *, day: float | None = 0, id: str = "",
         content: str = "", arms: tuple[str, ...] = ("lexical",), kind: str = "", tags: tuple[str, ...] = ()
         ) -> Candidate:
    return Candidate(
        rid=rid, table=table, score=score, arms=set(arms), ranks={f"{a}:{table}": rid for a in arms},
        created_at=None if day is None else DAY0 + timedelta(days=day), id=id or f"m{rid}",
        content=content or f"memory number {rid}", kind=kind or table[:-1], tags=tags,
    )


def rids(cands: list[Candidate]) -> list[int]:
    return [c.rid for c in cands]
