"""The recall-quality harness behind `recallfs eval`.

    recallfs eval --dataset locomo                     # every arm side by side, every question
    recallfs eval --dataset locomo --arm lexical       # one arm
    recallfs eval --dataset locomo --limit 20          # the first 20 questions of each conversation
    recallfs eval --dataset locomo --every 10          # every 10th question of each conversation
    recallfs eval --dataset locomo --ablate            # one row per pipeline stage toggled
    recallfs eval --dataset demo                       # the bundled sample's hand-written queries
    recallfs eval --dataset currentness                # questions whose answer changed: current@1, stale above
    recallfs eval --dataset locomo --write-baseline ci # refresh evals/baseline.json (ci, full or demo)

Each question runs through the real `recall()` as principal `<org>/<workspace>` agent `eval`, in its
own conversation's workspace, and is scored on every hit it returns (DEPTH). How hits count for relevance
is in relevance.py, the metrics in metrics.py, the named recall variants in variants.py.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from recallfs.evals import baseline as baseline_mod
from recallfs.evals import metrics
from recallfs.evals.eval_setup import setup
from recallfs.evals.questions import Prepared
from recallfs.evals.scoring import ALL_TABLES, aggregate, by_category, hit_refs, score_question
from recallfs.evals.semantic_probe import load_semantic
from recallfs.evals.variants import ARM_VARIANTS, Variant, describe, unsupported_keywords, uses_semantic
from recallfs.query.query_syntax import RecallOptions
from recallfs.query.recall import SemanticArm, recall
from recallfs.query.settings import Settings
from recallfs.query.store import Store

# Hits asked of recall() per question: more than it can return (fusion keeps `candidates` per table, 3
# tables; a single arm brings as many), so that each table's own ranking is complete, not cut short by
# the other tables' hits. Free: recall() loads and shapes every candidate before it pages.
DEPTH = 1000
PLAIN = "plain"  # the plain reference's three rows (evals/plain_reference.py), asked for as one arm
CI_EVERY = baseline_mod.SECTION_SUBSET["ci"]["every"]  # the LoCoMo CI subset: every 10th question (~200)
RELEVANCE_NOTE = {
    "turn": "relevant units are the question's evidence turns; a turn hit counts for itself, a fact hit for "
            "the turns in its refs (provenance), a summary hit for nothing",
    "session": "relevant units are the sessions holding the evidence turns; a turn hit counts for its "
               "session, a fact hit for the sessions of its refs (its own session when no ref resolves), "
               "a summary hit for its session",
    "source": "relevant units are the query's relevant_source_ids; a hit counts for its own source id and "
              "the ids in its refs",
    "ranking": "hits are mapped to units in rank order and a unit counts once, at its first rank; "
               "recall@k = any relevant unit in the first k units; nDCG@10 with binary gains; a hit that "
               "absorbed other rows (dedup, near-duplicate collapse) counts as itself only",
}



def with_until(options: RecallOptions | None, until: datetime | None) -> RecallOptions | None:
    """A variant's options with the question's haystack end added (RealMem's sessions before its own),
    which is also when it is asked (`now`: the dates it names count from there)."""
    if until is None:
        return options
    return replace(options, until=until, now=until) if options is not None else RecallOptions(until=until, now=until)


def run_variant(
    store: Store, prepared: Prepared, variant: Variant, *, semantic: SemanticArm | None,
    settings: Settings, progress: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Every question through recall() with this variant's keywords; the aggregated figures."""
    base = {"k": DEPTH, "candidates": settings.candidates, "rrf_k": settings.rrf_k, "fusion": settings.fusion}
    kwargs = {**base, **variant}
    options = kwargs.pop("options", None)
    per_question = []
    current_scores: list[dict[str, float]] = []
    degraded: Counter[str] = Counter()
    notes: Counter[str] = Counter()
    t0 = time.perf_counter()
    for q in prepared.questions:
        result = recall(store, q.principal, q.query, semantic=semantic, options=with_until(options, q.until),
                        **kwargs)
        if uses_semantic(variant) and result.degraded:
            degraded[str(result.degraded_reason)] += 1
        for note in result.notes:
            if note.startswith(("lexical arm failed", "semantic arm failed")):
                notes[note] += 1
        per_question.append(score_question(hit_refs(result), q, prepared.levels))
        if "stale" in q.relevant:
            current_scores.append(metrics.currentness([str(h.row["source_id"]) for h in result.hits],
                                                      set(q.relevant["source"]), set(q.relevant["stale"])))
        if progress:
            progress()
    seconds = time.perf_counter() - t0
    n = len(prepared.questions)
    out: dict[str, Any] = {
        "available": True, "questions": n, "seconds": round(seconds, 1),
        "ms_per_query": round(1000 * seconds / n, 1) if n else 0.0,
        "degraded_queries": dict(degraded), **aggregate(per_question, prepared.levels),
    }
    if notes:
        out["arm_failures"] = dict(notes)
    if prepared.dataset == "locomo":
        out["by_category"] = by_category(prepared.questions, per_question)
    if current_scores:
        out["currentness"] = {ALL_TABLES: metrics.mean_of(current_scores, metrics.CURRENTNESS_METRICS)}
    return out



def _progress_bar(total: int, desc: str) -> tuple[Callable[[], None] | None, Callable[[], None]]:
    if not sys.stderr.isatty() or total < 50:
        return None, lambda: None
    from tqdm import tqdm

    bar = tqdm(total=total, unit="q", desc=desc, file=sys.stderr, leave=False)
    return (lambda: bar.update(1)), bar.close


def compare_arms(store: Store, prepared: Prepared, arms: list[str], settings: Settings,
                 semantic: SemanticArm | None, semantic_reason: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in arms:
        if name == PLAIN:
            from recallfs.evals.reference_run import run_reference

            tick, close = _progress_bar(len(prepared.questions), name)
            try:
                out.update(run_reference(store, prepared, semantic, semantic_reason, progress=tick))
            finally:
                close()
            continue
        variant = ARM_VARIANTS[name]
        if uses_semantic(variant) and semantic is None:
            out[name] = {"available": False, "reason": semantic_reason}
            continue
        tick, close = _progress_bar(len(prepared.questions), name)
        try:
            out[name] = run_variant(store, prepared, variant, semantic=semantic, settings=settings, progress=tick)
        finally:
            close()
    return out


def ablate(store: Store, prepared: Prepared, variants: dict[str, Variant], settings: Settings,
           semantic: SemanticArm | None, semantic_reason: str | None) -> dict[str, Any]:
    """One row per named variant: R@5, R@10, MRR and nDCG@10 at each level."""
    rows: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for name, variant in variants.items():
        missing = unsupported_keywords(variant, recall)
        if missing:
            skipped.append({"variant": name, "reason": f"recall() has no {', '.join(missing)} toggle yet"})
            continue
        if semantic is None and variant.get("arm", "fused") == "semantic":
            skipped.append({"variant": name, "reason": semantic_reason})
            continue
        if semantic is None and variant.get("arm", "fused") == "fused":
            # Without the semantic arm a stage row still measures that stage, on the lexical arm.
            variant = {**variant, "arm": "lexical"}
        tick, close = _progress_bar(len(prepared.questions), name)
        try:
            res = run_variant(store, prepared, variant, semantic=semantic, settings=settings, progress=tick)
        finally:
            close()
        row: dict[str, Any] = {"variant": name, "recall_kwargs": describe(variant)}
        for level in prepared.levels:
            row[level] = {m: res[level][ALL_TABLES][m] for m in ("r@5", "r@10", "mrr", "ndcg@10")}
        if "currentness" in res:
            row["currentness"] = res["currentness"][ALL_TABLES]
        row["ms_per_query"] = res["ms_per_query"]
        rows.append(row)
    return {"rows": rows, "skipped": skipped}


def relevance_notes(prepared: Prepared) -> dict[str, str]:
    notes = prepared.relevance or {k: v for k, v in RELEVANCE_NOTE.items() if k in prepared.levels}
    return {**notes, "ranking": RELEVANCE_NOTE["ranking"]}


def evaluate(
    dataset: str, *, data: Path | None = None, store: Path | None = None, every: int | None = None,
    limit: int | None = None, arms: list[str] | None = None, ablation: dict[str, Variant] | None = None,
    settings: Settings | None = None, semantic: SemanticArm | None = None,
    probe_semantic: bool = True, personas: int | None = None,
) -> dict[str, Any]:
    """The whole eval as a JSON-ready report (what `recallfs eval` prints)."""
    from recallfs.query import settings as settings_mod

    cfg = settings if settings is not None else settings_mod.resolve()
    arms = arms or [*ARM_VARIANTS, PLAIN]
    info, opened = setup(dataset, data=data, store=store, every=every, limit=limit, personas=personas)
    try:
        reason: str | None = None
        wants_semantic = ablation is not None or any(a == PLAIN or uses_semantic(ARM_VARIANTS[a]) for a in arms)
        if semantic is None and wants_semantic:
            if probe_semantic:
                semantic, reason = load_semantic(cfg)
            else:
                reason = "the semantic arm was not asked for"
        report: dict[str, Any] = {
            "dataset": dataset,
            "data": [str(p) for p in info.data_files],
            "store": str(info.store_path),
            "store_action": info.store_action,
            "subset": {"every": every, "limit_per_workspace": limit, **({"personas": personas} if personas else {})},
            "depth": DEPTH,
            "questions": len(info.prepared.questions),
            "evidence": info.prepared.evidence,
            "relevance": relevance_notes(info.prepared),
        }
        if ablation is not None:
            report["ablation"] = ablate(opened, info.prepared, ablation, cfg, semantic, reason)
        else:
            report["arms"] = compare_arms(opened, info.prepared, arms, cfg, semantic, reason)
        return report
    finally:
        opened.close()

