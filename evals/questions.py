"""A data set's questions resolved against its eval store: what each asks, as whom, and which units
are relevant (LoCoMo's evidence turns, the demo and currentness sets' source ids). The memory_dev sets
resolve theirs in devset_eval.py."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from recallfs.evals import datasets, relevance
from recallfs.evals.relevance import HitRef
from recallfs.query.migrations import MEMORY_TABLES
from recallfs.query.store import Store
from recallfs.scope.principal import Principal

EVAL_AGENT = "eval"


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

