"""The memory_dev sets in the harness: their records for the eval store, and their questions resolved
against it (evals/devsets.py reads the data; this turns it into the harness's Prepared).

Units: RealMem is judged on sessions (a turn hit counts for its session), MADial-Bench on memories
and MT-Bench+ on user turns (a hit counts for its own source id). Gold units the store does not hold
are dropped and listed, as LoCoMo's unresolvable evidence is; a question left with none is not scored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from recallfs.evals import devsets
from recallfs.evals.eval_setup import EvalSetup
from recallfs.evals.questions import EVAL_AGENT, EvalError, Prepared, Question, UnitFn, subset
from recallfs.evals.relevance import HitRef
from recallfs.evals.store_cache import default_store_path, ensure_store, prune_cache
from recallfs.query.importers.jsonl import parse_jsonl_text
from recallfs.query.migrations import MEMORY_TABLES
from recallfs.query.records import MemoryRecord
from recallfs.query.store import Store, StoreError
from recallfs.scope.principal import Principal

RELEVANCE = {
    "session": "relevant units are the sessions the next assistant turn names in memory_session_uuids; "
               "a hit counts for its session",
    "memory": "relevant units are the dialogue's relevant-id memories; a hit counts for its own source id",
    "turn": "relevant units are the user turns on the question's topic (turn-info prefix); a turn hit "
            "counts for itself",
}


def records(dev: devsets.DevSet) -> list[MemoryRecord]:
    """The set as `recallfs ingest` would read it from a JSONL file."""
    text = "\n".join(json.dumps(r) for r in dev.records) + "\n"
    return parse_jsonl_text(text, name=dev.name, org="dev", workspace="dev", agent=dev.name)


def session_unit(hit: HitRef, question: Question) -> list[str]:
    return [hit.session] if hit.session else []


def source_unit(hit: HitRef, question: Question) -> list[str]:
    return [hit.source_id]


def turn_unit(hit: HitRef, question: Question) -> list[str]:
    return [hit.source_id] if hit.table == "turns" else []


UNIT_FNS: dict[str, UnitFn] = {"session": session_unit, "memory": source_unit, "turn": turn_unit}


def _known_units(store: Store, principal: Principal, level: str) -> set[str]:
    schema = store.partition(principal.org, principal.workspace)
    if schema is None:
        return set()
    column = "session" if level == "session" else "source_id"
    union = " UNION ".join(f"SELECT {column} FROM {schema}.{t}" for t in MEMORY_TABLES)
    return {str(r[0]) for r in store.cursor().execute(union).fetchall() if r[0] is not None}


def prepare_dev(store: Store, dev: devsets.DevSet, *, every: int | None = None,
                limit: int | None = None) -> Prepared:
    level = devsets.LEVEL[dev.name]
    known: dict[str, set[str]] = {}
    questions: list[Question] = []
    dropped: list[str] = []
    for item in dev.questions:
        org, ws = item.workspace.split("/", 1)
        principal = Principal(org, ws, EVAL_AGENT)
        if item.workspace not in known:
            known[item.workspace] = _known_units(store, principal, level)
        ok = sorted(u for u in item.gold if u in known[item.workspace])
        dropped.extend(f"{item.qid}:{u}" for u in sorted(item.gold) if u not in known[item.workspace])
        if ok:
            questions.append(Question(qid=item.qid, principal=principal, query=item.query,
                                      relevant={level: frozenset(ok)}, until=item.until))
    total = len(questions)
    questions = subset(questions, every, limit)
    evidence: dict[str, Any] = {"queries": len(dev.questions), "with_evidence": total, "dropped_ids": dropped,
                                "scored": len(questions)}
    return Prepared(dataset=dev.name, questions=questions, levels={level: UNIT_FNS[level]}, evidence=evidence,
                    relevance={level: RELEVANCE[level]})


def store_label(name: str, personas: int | None) -> str:
    """The eval store's cache name: a RealMem store of the first N personas is its own data set."""
    return f"{name}_p{personas}" if personas else name


def key_files(files: list[Path]) -> list[Path]:
    """What a dev set's cached store is keyed on beside the code store_cache hashes: its data files and
    the adapter that turns them into records (evals/devsets.py is not under query/, yet decides what
    the store holds: a change there must build a fresh store, not reuse one of the old records)."""
    return [*files, Path(devsets.__file__)]


def setup_dev(name: str, *, base: Path | None, store: Path | None, every: int | None, limit: int | None,
              personas: int | None) -> tuple[EvalSetup, Store]:
    """Read the set in place, build or reuse its eval store, resolve its questions (store open read-only)."""
    from recallfs.query.ingest import IngestError

    base = base or devsets.DEV
    files = devsets.data_files(name, base)[: personas if name == "realmem" else None]
    if not files or not all(p.exists() for p in files):
        raise EvalError(f"{name} data not found under {base} (eval-only data, not shipped; see "
                        "../shared/data/SOURCES.md, or pass --data DIR)")
    try:
        dev = devsets.load(name, base, personas=personas)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EvalError(f"{name}: cannot read the data under {base}: {exc}") from None
    label = store_label(name, personas if name == "realmem" else None)
    store_path = store.expanduser() if store else default_store_path(label, key_files(files))
    try:
        action = ensure_store(store_path, lambda: records(dev), refresh=store is not None)
        if action == "built" and store is None:
            prune_cache(label)
        opened = Store(store_path, read_only=True, create=False)
    except (IngestError, StoreError) as exc:
        raise EvalError(str(exc)) from None
    prepared = prepare_dev(opened, dev, every=every, limit=limit)
    return EvalSetup(name, files, store_path, action, prepared), opened
