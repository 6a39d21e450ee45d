"""Scoring the plain reference (evals/plain_reference.py) the way the harness scores an arm: the same
questions, haystacks, unit mapping and metrics, reported as arms `plain_bm25`, `plain_cosine` and
`plain_rrf` beside recallfs's."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from recallfs.evals.harness import DEPTH, with_until
from recallfs.evals.plain_reference import REFERENCE_ARMS, PlainReference
from recallfs.evals.questions import Prepared
from recallfs.evals.scoring import aggregate, by_category, score_question
from recallfs.query.store import Store


def run_reference(store: Store, prepared: Prepared, semantic: Any | None, semantic_reason: str | None,
                  progress: Callable[[], None] | None = None) -> dict[str, Any]:
    reference = PlainReference(store, semantic, DEPTH)
    per_arm: dict[str, list[dict[str, dict[str, Any]]]] = {arm: [] for arm in reference.arms()}
    t0 = time.perf_counter()
    for q in prepared.questions:
        for arm, hits in reference.rankings(q.principal, q.query, with_until(None, q.until)).items():
            per_arm[arm].append(score_question(hits, q, prepared.levels))
        if progress:
            progress()
    seconds = time.perf_counter() - t0
    n = len(prepared.questions)
    out: dict[str, Any] = {}
    for arm in REFERENCE_ARMS:
        if arm not in per_arm:
            out[arm] = {"available": False, "reason": semantic_reason}
            continue
        rows = per_arm[arm]
        out[arm] = {"available": True, "questions": n, "seconds": round(seconds, 1),
                    "ms_per_query": round(1000 * seconds / n, 1) if n else 0.0, **aggregate(rows, prepared.levels)}
        if prepared.dataset == "locomo":
            out[arm]["by_category"] = by_category(prepared.questions, rows)
    return out
