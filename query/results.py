"""What recall returns: the page of Hits and the RecallResult around them, with their JSON shape
(results.json and `--format json`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from recallfs.query.entity_card import EntityCard

__all__ = ["Hit", "RecallResult"]


@dataclass(slots=True)
class Hit:
    rank: int
    rid: int
    id: str
    table: str
    score: float
    arms: list[str]
    ranks: dict[str, int]
    row: dict[str, Any]
    # other memories folded into this hit by dedup or near-duplicate collapse: {id, table, source_id}
    also: list[dict[str, Any]] = field(default_factory=list)
    # the versions this one replaced, as <id>/v<n> (query/lineage.py), those the reader may read
    replaces: list[str] = field(default_factory=list)
    relevance: float = 0.0  # the arms' calibrated evidence before shaping (what the relevance floor reads)
    cosine: float | None = None  # the query's cosine to it, when the semantic arm scored it
    shares_words: bool = False  # it holds a word of the query

    def as_json(self) -> dict[str, Any]:
        r = self.row
        out: dict[str, Any] = {
            "rank": self.rank,
            "id": self.id,
            "table": self.table,
            "score": round(self.score, 6),
            "arms": self.arms,
            "content": r["content"],
            "session": r["session"],
            "source_id": r["source_id"],
            "created_at": r["created_at"].isoformat() if r["created_at"] else None,
            "kind": r["kind"],
            "version": r["version"],
            "agent": r["agent"],
            "tags": list(r["tags"] or []),
            "provenance": {"source": r["source"], "refs": list(r["refs"] or []), "ranks": self.ranks},
        }
        if self.also:
            out["provenance"]["also"] = self.also
        if self.replaces:
            out["replaces"] = self.replaces
        for key in ("speaker", "seq", "entity", "title", "caption", "stale", "near_miss"):
            if r.get(key) is not None:
                out[key] = r[key]
        return out


@dataclass(slots=True)
class RecallResult:
    query: str
    search_text: str
    workspace: str
    agent: str
    arm: str
    hits: list[Hit]
    degraded: bool
    degraded_reason: str | None
    total_candidates: int
    offset: int
    k: int
    timings_ms: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # The entity the query names exactly: shown before the hits (it is not a hit and takes no rank).
    entity: EntityCard | None = None
    stages: dict[str, str] = field(default_factory=dict)  # what each shaping stage did
    # degraded because the semantic arm is not running: the lexical arm alone answered (degraded can also
    # be a replica whose lake is unreachable, which still answers with both arms)
    lexical_only: bool = False

    @property
    def has_more(self) -> bool:
        return self.offset + len(self.hits) < self.total_candidates

    def as_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "search_text": self.search_text,
            "workspace": self.workspace,
            "agent": self.agent,
            "arm": self.arm,
            "hits": [h.as_json() for h in self.hits],
            "degraded": self.degraded,
            "degraded_reason": self.degraded_reason,
            "total_candidates": self.total_candidates,
            "pagination": {
                "offset": self.offset,
                "k": self.k,
                "returned": len(self.hits),
                "has_more": self.has_more,
                "next_offset": self.offset + len(self.hits) if self.has_more else None,
            },
            "timings_ms": {k: round(v, 2) for k, v in self.timings_ms.items()},
            "notes": self.notes,
            "entity": self.entity.as_json() if self.entity else None,
            "stages": self.stages,
        }
