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

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from recallfs.evals import baseline as baseline_mod
from recallfs.evals import datasets, metrics, relevance
from recallfs.evals.devsets import DEVSETS
from recallfs.evals.relevance import HitRef
from recallfs.evals.semantic_probe import load_semantic
from recallfs.evals.store_cache import default_store_path, ensure_store, prune_cache
from recallfs.evals.variants import ARM_VARIANTS, Variant, ablations, describe, unsupported_keywords, uses_semantic
from recallfs.query.lake_location import is_lake, mask_secrets
from recallfs.query.migrations import MEMORY_TABLES
from recallfs.query.query_syntax import RecallOptions
from recallfs.query.recall import SemanticArm, recall
from recallfs.query.results import RecallResult
from recallfs.query.settings import Settings
from recallfs.query.store import Store, StoreError
from recallfs.scope.principal import Principal

# Hits asked of recall() per question: more than it can return (fusion keeps `candidates` per table, 3
# tables; a single arm brings as many), so that each table's own ranking is complete, not cut short by
# the other tables' hits. Free: recall() loads and shapes every candidate before it pages.
DEPTH = 1000
EVAL_AGENT = "eval"
ALL_TABLES = "all_tables"
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


class EvalError(RuntimeError):
    """An eval that cannot run; the message is for the user."""


@dataclass(frozen=True, slots=True)
class Question:
    qid: str
    principal: Principal
    query: str
    relevant: dict[str, frozenset[str]]  # level -> relevant units
    category: str | None = None
    until: datetime | None = None  # the question's haystack ends here (RealMem: before its own session)


UnitFn = Callable[[HitRef, Question], list[str]]


@dataclass(slots=True)
class Prepared:
    """A data set resolved against its store: questions, how hits map to units, what was dropped."""

    dataset: str
    questions: list[Question]
    levels: dict[str, UnitFn]
    evidence: dict[str, Any]
    relevance: dict[str, str] | None = None  # level -> how hits count (default: RELEVANCE_NOTE)


# -- preparing questions --------------------------------------------------------------------------
def _turn_sessions(store: Store, org: str, workspace: str) -> dict[str, str]:
    schema = store.partition(org, workspace)
    if schema is None:
        return {}
    rows = store.cursor().execute(f"SELECT source_id, session FROM {schema}.turns").fetchall()
    return {str(sid): str(session) for sid, session in rows if session is not None}


def _source_ids(store: Store, org: str, workspace: str) -> set[str]:
    schema = store.partition(org, workspace)
    if schema is None:
        return set()
    union = " UNION ".join(f"SELECT source_id FROM {schema}.{t}" for t in MEMORY_TABLES)
    return {str(r[0]) for r in store.cursor().execute(union).fetchall()}


def prepare_locomo(
    store: Store, items: list[datasets.QAItem], *, every: int | None = None, limit: int | None = None
) -> Prepared:
    """Resolve evidence against the store's turns: ids that name no turn of the conversation are
    dropped (a handful of typos in locomo10.json); a question left with no evidence is not scored."""
    maps: dict[str, dict[str, str]] = {}
    questions: list[Question] = []
    dropped: list[str] = []
    no_evidence = unresolved = 0
    for item in items:
        if item.workspace not in maps:
            maps[item.workspace] = _turn_sessions(store, item.org, item.workspace)
        if not item.evidence:
            no_evidence += 1
            continue
        turns, sessions, bad = relevance.resolve_evidence(item.evidence, maps[item.workspace])
        dropped.extend(f"{item.qid}:{b}" for b in bad)
        if not turns:
            unresolved += 1
            continue
        questions.append(Question(
            qid=item.qid, principal=Principal(item.org, item.workspace, EVAL_AGENT), query=item.question,
            relevant={"turn": frozenset(turns), "session": frozenset(sessions)}, category=item.category,
        ))
    total = len(questions)
    questions = subset(questions, every, limit)

    def level(name: str) -> UnitFn:
        return lambda hit, q: relevance.units(hit, name, maps[q.principal.workspace])

    return Prepared(
        dataset="locomo", questions=questions, levels={"turn": level("turn"), "session": level("session")},
        evidence={"qa_items": len(items), "without_evidence": no_evidence, "evidence_unresolvable": unresolved,
                  "with_evidence": total, "dropped_ids": dropped, "scored": len(questions)},
    )


def prepare_demo(
    store: Store, items: list[datasets.QAItem], *, every: int | None = None, limit: int | None = None,
    dataset: str = "demo",
) -> Prepared:
    """Source-level questions (the demo set, and the currentness set, whose items also name stale memories)."""
    known: dict[tuple[str, str], set[str]] = {}
    questions: list[Question] = []
    dropped: list[str] = []
    for item in items:
        key = (item.org, item.workspace)
        if key not in known:
            known[key] = _source_ids(store, *key)
        ids = relevance.split_ids(item.evidence)
        dropped.extend(f"{item.qid}:{i}" for i in ids if i not in known[key])
        ok = [i for i in ids if i in known[key]]
        if ok:
            relevant = {"source": frozenset(ok)}
            if dataset == "currentness":
                relevant["stale"] = frozenset(item.stale)
            questions.append(Question(qid=item.qid, principal=Principal(item.org, item.workspace, EVAL_AGENT),
                                      query=item.question, relevant=relevant, category=item.category))
    total = len(questions)
    questions = subset(questions, every, limit)
    return Prepared(
        dataset=dataset, questions=questions, levels={"source": lambda hit, q: relevance.source_units(hit)},
        evidence={"queries": len(items), "with_evidence": total, "dropped_ids": dropped,
                  "scored": len(questions)},
    )


def subset(questions: list[Question], every: int | None, limit: int | None) -> list[Question]:
    """The fixed subset of a run: of each workspace's scored questions, in file order, every `every`-th
    one starting with the first, then the first `limit` of those. Per workspace, so that a small subset
    still covers every conversation; a stride, so that it spans every question category."""
    seen: Counter[str] = Counter()
    taken: Counter[str] = Counter()
    out = []
    for q in questions:
        ws = q.principal.workspace_path
        index = seen[ws]
        seen[ws] += 1
        if every and index % every:
            continue
        if limit is not None and taken[ws] >= limit:
            continue
        taken[ws] += 1
        out.append(q)
    return out


# -- scoring --------------------------------------------------------------------------------------
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


# -- runs -----------------------------------------------------------------------------------------
@dataclass(slots=True)
class EvalSetup:
    dataset: str
    data_files: list[Path]
    store_path: Path
    store_action: str
    prepared: Prepared


def _load_records(dataset: str, data: Path) -> Callable[[], list[Any]]:
    from recallfs.query.ingest_file import load_file

    if dataset == "locomo":
        return lambda: load_file(data, "locomo", org=datasets.LOCOMO_ORG, workspace="unused", agent="locomo")
    # The currentness set's records name their own workspaces; the demo's default to demo/tern.
    org, ws = datasets.DEMO_WORKSPACE
    return lambda: load_file(data, "jsonl", org=org, workspace=ws, agent="demo")


# dataset -> (default memory file, default queries file, the queries' name beside another memory file)
_FILES = {
    "demo": (datasets.DEMO_MEMORY, datasets.DEMO_QUERIES, "demo_queries.json"),
    "currentness": (datasets.CURRENTNESS_MEMORY, datasets.CURRENTNESS_QUERIES, "currentness_queries.json"),
}


def _data_files(dataset: str, data: Path | None) -> tuple[Path, list[Path], Path]:
    """(the memory file, every file the store is keyed on, the questions file)."""
    if dataset == "locomo":
        data = data or datasets.LOCOMO_DEFAULT
        if not data.exists():
            raise EvalError(f"LoCoMo data not found at {data} (eval-only data, not shipped; pass --data)")
        return data, [data], data
    if dataset not in _FILES:
        raise EvalError(f"unknown dataset {dataset!r}")
    memory, questions, name = _FILES[dataset]
    data = data or memory
    queries = questions if data == memory else data.with_name(name)
    for path in (data, queries):
        if not path.exists():
            raise EvalError(f"{dataset} eval needs {path}, which does not exist")
    return data, [data, queries], queries


def _prepare(dataset: str, opened: Store, raw: Any, every: int | None, limit: int | None) -> Prepared:
    if dataset == "locomo":
        return prepare_locomo(opened, datasets.locomo_items(raw), every=every, limit=limit)
    if dataset == "currentness":
        return prepare_demo(opened, datasets.currentness_items(raw), every=every, limit=limit, dataset=dataset)
    return prepare_demo(opened, datasets.demo_items(raw), every=every, limit=limit)


def setup(dataset: str, *, data: Path | None = None, store: Path | None = None,
          every: int | None = None, limit: int | None = None, personas: int | None = None,
          ) -> tuple[EvalSetup, Store]:
    """Find the data, build or reuse the eval store, resolve the questions. The store is open (read-only).
    The memory_dev sets (`data`: their directory; `personas`: RealMem's first N) are in devset_eval.py."""
    from recallfs.query.ingest import IngestError

    if dataset in DEVSETS:
        from recallfs.evals.devset_eval import setup_dev

        return setup_dev(dataset, base=data, store=store, every=every, limit=limit, personas=personas)

    data, data_files, queries = _data_files(dataset, data)
    store_path = store.expanduser() if store else default_store_path(dataset, data_files)
    try:
        action = ensure_store(store_path, _load_records(dataset, data), refresh=store is not None)
        if action == "built" and store is None:
            prune_cache(dataset)
        opened = Store(store_path, read_only=True, create=False)
    except (IngestError, StoreError) as exc:
        raise EvalError(str(exc)) from None
    try:
        prepared = _prepare(dataset, opened, datasets.read_json(queries), every, limit)
    except (datasets.DatasetError, KeyError, TypeError) as exc:
        opened.close()
        raise EvalError(f"{queries}: {exc}") from None
    return EvalSetup(dataset, data_files, store_path, action, prepared), opened


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


# -- output ---------------------------------------------------------------------------------------
def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def markdown(report: dict[str, Any]) -> str:
    """The report's figures as markdown tables (for the README)."""
    lines: list[str] = []
    if "arms" in report:
        for arm, res in report["arms"].items():
            if not res.get("available"):
                lines.append(f"**{arm}**: unavailable ({res.get('reason')})\n")
                continue
            lines.append(f"**{arm}** ({res['questions']} questions, {res['ms_per_query']} ms/query)\n")
            if "currentness" in res:
                figs = res["currentness"][ALL_TABLES]
                lines.append(", ".join(f"{m} {figs[m]:.3f}" for m in metrics.CURRENTNESS_METRICS) + "\n")
            lines.append("| level | scope | R@1 | R@5 | R@10 | MRR | nDCG@10 |")
            lines.append("|---|---|---|---|---|---|---|")
            for level in ("turn", "session", "memory", "source"):
                for scope, figs in (res.get(level) or {}).items():
                    if figs is None:
                        continue
                    lines.append(f"| {level} | {scope} | " + " | ".join(_fmt(figs[m]) for m in metrics.METRICS) + " |")
            lines.append("")
    if "ablation" in report:
        levels = [lvl for lvl in ("turn", "session", "memory", "source") if report["ablation"]["rows"]
                  and lvl in report["ablation"]["rows"][0]]
        head = " | ".join(f"{lvl} {m}" for lvl in levels for m in ("R@5", "R@10", "MRR", "nDCG@10"))
        current = bool(report["ablation"]["rows"]) and "currentness" in report["ablation"]["rows"][0]
        extra = " | current@1 | stale above current" if current else ""
        lines.append(f"| variant | {head}{extra} |")
        lines.append("|---|" + "---|" * (4 * len(levels) + (2 if current else 0)))
        for row in report["ablation"]["rows"]:
            figs = " | ".join(_fmt(row[lvl][m]) for lvl in levels for m in ("r@5", "r@10", "mrr", "ndcg@10"))
            if "currentness" in row:
                figs += " | " + " | ".join(_fmt(row["currentness"][m]) for m in metrics.CURRENTNESS_METRICS)
            lines.append(f"| {row['variant']} | {figs} |")
        for s in report["ablation"]["skipped"]:
            lines.append(f"\nskipped: {s['variant']}: {s['reason']}")
    return "\n".join(lines) + "\n"


ALL_SETS = ("locomo", "demo", "realmem", "madial", "mtbenchplus")  # what --dataset all runs, in order


def _cli_problem(args: argparse.Namespace) -> str | None:
    for name, value in (("--limit", args.limit), ("--every", args.every), ("--personas", args.personas)):
        if value is not None and value < 1:
            return f"{name} must be at least 1"
    if args.personas is not None and args.dataset != "realmem":
        return "--personas is for --dataset realmem"
    if args.store and is_lake(args.store):  # eval builds its own store from the dataset, one file per set
        return (f"--store {mask_secrets(args.store)}: eval builds its own single-file store from the dataset, so "
                "--store names a file path; to measure a lake's memories, `recallfs migrate` it to a file")
    if args.dataset == "all" and (args.write_baseline or args.store or args.data):
        return "--dataset all runs every set on its own data and store: leave out --write-baseline, --store, --data"
    if args.write_baseline:
        return baseline_mod.section_problem(args.write_baseline, args.dataset, args.every, args.limit,
                                            bool(args.ablate), args.personas)
    return None


def _run_one(dataset: str, args: argparse.Namespace) -> dict[str, Any]:
    subset_of = baseline_mod.SECTION_SUBSET.get(args.write_baseline or "", {})
    return evaluate(dataset, data=args.data, store=Path(args.store) if args.store else None,
                    every=subset_of.get("every", args.every), limit=args.limit,
                    personas=subset_of.get("personas", args.personas),
                    arms=[args.arm] if args.arm else None, ablation=ablations() if args.ablate else None)


def _run_all(args: argparse.Namespace) -> dict[str, Any]:
    """Every set in turn; a set whose data is missing here is reported so, not an error."""
    sets: dict[str, Any] = {}
    for dataset in ALL_SETS:
        try:
            sets[dataset] = _run_one(dataset, args)
        except (EvalError, datasets.DatasetError) as exc:
            sets[dataset] = {"dataset": dataset, "available": False, "reason": str(exc)}
    return {"dataset": "all", "sets": sets}


def markdown_all(report: dict[str, Any]) -> str:
    """Every set's ranker at its unit in one table (evals/summary.py), then each set's own tables."""
    from recallfs.evals.summary import table

    parts = [table(report["sets"])]
    for name, sub in report["sets"].items():
        body = markdown(sub) if sub.get("available", True) else f"unavailable: {sub['reason']}\n"
        parts.append(f"### {name}\n\n{body}")
    return "\n".join(parts)


def run_cli(args: argparse.Namespace) -> int:
    """`recallfs eval`: prints the report as JSON (or markdown); 0 on success, 1 on an error."""
    problem = _cli_problem(args)
    if problem:
        print(f"recallfs eval: {problem}", file=sys.stderr)
        return 1
    try:
        report = _run_all(args) if args.dataset == "all" else _run_one(args.dataset, args)
    except (EvalError, datasets.DatasetError) as exc:
        print(f"recallfs eval: {exc}", file=sys.stderr)
        return 1
    if args.write_baseline:
        path = baseline_mod.write_section(args.write_baseline, report)
        print(f"recallfs eval: wrote the {args.write_baseline!r} figures to {path}", file=sys.stderr)
    if args.format == "markdown":
        sys.stdout.write(markdown_all(report) if args.dataset == "all" else markdown(report))
    else:
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    return 0
