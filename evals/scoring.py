"""One question's hits scored at each unit level and table, and the mean over a run (metrics.py has
the metrics; relevance.py how a hit maps to units)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from recallfs.evals import metrics
from recallfs.evals.questions import Question, UnitFn
from recallfs.evals.relevance import HitRef
from recallfs.query.migrations import MEMORY_TABLES
from recallfs.query.results import RecallResult

ALL_TABLES = "all_tables"


def hit_refs(result: RecallResult) -> list[HitRef]:
    return [
        HitRef(table=h.table, source_id=str(h.row["source_id"]), session=h.row.get("session"),
               refs=tuple(str(r) for r in (h.row.get("refs") or [])))
        for h in result.hits
    ]


def scopes_for(level: str) -> tuple[str, ...]:
    """The per-table breakdowns that can score at a level (a summary is never a turn)."""
    tables = tuple(t for t in MEMORY_TABLES if not (level == "turn" and t == "summaries"))
    return (ALL_TABLES, *tables)


def score_question(hits: list[HitRef], question: Question, levels: dict[str, UnitFn]) -> dict[str, dict[str, Any]]:
    """level -> scope (all_tables or one table) -> metric -> value, for one question."""
    out: dict[str, dict[str, Any]] = {}
    for level, unit_fn in levels.items():
        relevant = set(question.relevant[level])
        per_hit = [(hit.table, unit_fn(hit, question)) for hit in hits]
        out[level] = {}
        for scope in scopes_for(level):
            ranking = metrics.unit_ranking(u for table, u in per_hit if scope in (ALL_TABLES, table))
            out[level][scope] = metrics.score(ranking, relevant)
    return out


def aggregate(per_question: list[dict[str, dict[str, Any]]], levels: Iterable[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for level in levels:
        out[level] = {}
        for scope in scopes_for(level):
            out[level][scope] = metrics.mean([q[level][scope] for q in per_question])
        if level == "turn":
            out[level]["summaries"] = None  # a summary never counts at turn level
    return out


def by_category(questions: list[Question], per_question: list[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    groups: dict[str, list[dict[str, dict[str, Any]]]] = {}
    for q, s in zip(questions, per_question, strict=True):
        if q.category is not None:
            groups.setdefault(q.category, []).append(s)
    return {
        cat: {"questions": len(rows),
              "turn_r@10": metrics.mean([r["turn"][ALL_TABLES] for r in rows])["r@10"],
              "session_r@5": metrics.mean([r["session"][ALL_TABLES] for r in rows])["r@5"]}
        for cat, rows in sorted(groups.items())
    }

