"""Eval data sets: where they live, how their questions are read, which subset a run takes.

- `locomo`: `../shared/data/locomo10.json` beside the repository (CC BY-NC: read in place, never
  copied into the project). Every conversation is its own workspace `locomo/<sample_id>`.
- `demo`: the bundled sample `query/data/demo_memory.jsonl` (workspace `demo/tern`) with the
  hand-written queries of `query/data/demo_queries.json`.
- `currentness`: questions whose answer changed over time (evals/currentness_data.py writes
  `evals/data/currentness_memory.jsonl` and `currentness_queries.json`; six workspaces `cur/<name>`),
  each with its current and its stale memories.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
LOCOMO_DEFAULT = REPO.parent / "shared" / "data" / "locomo10.json"
LOCOMO_ORG = "locomo"
DEMO_DIR = REPO / "query" / "data"
DEMO_MEMORY = DEMO_DIR / "demo_memory.jsonl"
DEMO_QUERIES = DEMO_DIR / "demo_queries.json"
DEMO_WORKSPACE = ("demo", "tern")
CURRENTNESS_DIR = REPO / "evals" / "data"
CURRENTNESS_MEMORY = CURRENTNESS_DIR / "currentness_memory.jsonl"
CURRENTNESS_QUERIES = CURRENTNESS_DIR / "currentness_queries.json"


class DatasetError(ValueError):
    """A data set that is missing or not in the expected shape; the message is for the user."""


@dataclass(frozen=True, slots=True)
class QAItem:
    """One question as the data set states it (evidence not yet resolved against the store)."""

    qid: str  # "<sample_id>#<index>", stable across runs
    org: str
    workspace: str
    question: str
    evidence: tuple[str, ...]
    category: str | None = None
    stale: tuple[str, ...] = ()  # currentness: memories that stated an older answer


def read_json(path: Path) -> Any:
    if not path.exists():
        raise DatasetError(f"{path}: no such file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: not readable JSON: {exc}") from None


def locomo_items(data: Any) -> list[QAItem]:
    """Every QA item of a parsed locomo10.json, in file order (items without evidence included)."""
    if not isinstance(data, list):
        raise DatasetError("a LoCoMo file is a JSON list of conversations")
    items: list[QAItem] = []
    for sample in data:
        sample_id = str(sample["sample_id"])
        for index, qa in enumerate(sample.get("qa") or []):
            evidence = qa.get("evidence") or []
            items.append(QAItem(
                qid=f"{sample_id}#{index}", org=LOCOMO_ORG, workspace=sample_id, question=str(qa["question"]),
                evidence=tuple(str(e) for e in evidence),
                category=str(qa["category"]) if qa.get("category") is not None else None,
            ))
    return items


def demo_items(data: Any) -> list[QAItem]:
    """The hand-written demo queries: [{"query", "relevant_source_ids", "note"}, ...]."""
    if not isinstance(data, list):
        raise DatasetError("demo queries are a JSON list of {query, relevant_source_ids, note}")
    org, ws = DEMO_WORKSPACE
    out = []
    for index, entry in enumerate(data):
        try:
            query, relevant = str(entry["query"]), entry["relevant_source_ids"]
        except (KeyError, TypeError):
            raise DatasetError(f"demo query {index}: needs query and relevant_source_ids") from None
        out.append(QAItem(qid=f"demo#{index}", org=org, workspace=ws, question=query,
                          evidence=tuple(str(r) for r in relevant)))
    return out



def currentness_items(data: Any) -> list[QAItem]:
    """The currentness questions: [{"query", "workspace": "org/ws", "current": [...], "stale": [...]}, ...]."""
    if not isinstance(data, list):
        raise DatasetError("currentness questions are a JSON list of {query, workspace, current, stale}")
    out = []
    for index, entry in enumerate(data):
        try:
            org, ws = str(entry["workspace"]).split("/", 1)
            out.append(QAItem(qid=f"currentness#{index}", org=org, workspace=ws, question=str(entry["query"]),
                              evidence=tuple(str(c) for c in entry["current"]),
                              stale=tuple(str(c) for c in entry["stale"]),
                              category=str(entry.get("mechanism")) if entry.get("mechanism") else None))
        except (KeyError, TypeError, ValueError):
            raise DatasetError(f"currentness question {index}: needs query, workspace ORG/WS, current and stale") \
                from None
    return out
