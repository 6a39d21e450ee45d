"""One table of every set, ranker and metric at the set's unit: what `--dataset all --format markdown`
opens with and the README's "Recall quality on every set" table is. Pure: tested from a table.

A recallfs ranker more than BELOW below its plain counterpart (lexical arm vs plain BM25, semantic
arm vs plain cosine, default pipeline vs plain RRF) is printed in bold.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from recallfs.evals.metrics import METRICS

BELOW = 0.005
COUNTERPART = {"lexical": "plain_bm25", "semantic": "plain_cosine", "fused": "plain_rrf"}
LABEL = {"lexical": "lexical arm", "semantic": "semantic arm", "fused": "**default pipeline**",
         "plain_bm25": "plain BM25", "plain_cosine": "plain cosine", "plain_rrf": "plain RRF (k=60)"}
LEVEL_ORDER = ("turn", "session", "memory", "source")


def _cell(arm: str, metric: str, figs: Mapping[str, float], arms: Mapping[str, Any], level: str) -> str:
    text = f"{figs[metric]:.3f}"
    other = arms.get(COUNTERPART.get(arm, ""), {})
    if other.get("available") and figs[metric] < other[level]["all_tables"][metric] - BELOW:
        return f"**{text}**"
    return text


def rows_of(name: str, report: Mapping[str, Any]) -> list[str]:
    """The set's rows: one per available ranker and level, in LABEL order."""
    arms = report.get("arms") or {}
    out = []
    for level in (lvl for lvl in LEVEL_ORDER if any(lvl in (res or {}) for res in arms.values())):
        for arm in LABEL:
            res = arms.get(arm) or {}
            if not res.get("available") or level not in res:
                continue
            figs = res[level]["all_tables"]
            cells = " | ".join(_cell(arm, m, figs, arms, level) for m in METRICS)
            out.append(f"| {name} ({level}, {report['questions']}) | {LABEL[arm]} | {cells} |")
    return out


def table(sets: Mapping[str, Mapping[str, Any]]) -> str:
    lines = ["| set (unit, questions) | ranker | R@1 | R@5 | R@10 | MRR | nDCG@10 |", "|---|---|---|---|---|---|---|"]
    for name, report in sets.items():
        if report.get("available", True):
            lines.extend(rows_of(name, report))
    return "\n".join(lines) + "\n"
