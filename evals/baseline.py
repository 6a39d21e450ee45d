"""The committed baseline (evals/baseline.json) and the comparison the baseline test enforces.

Sections:
- `ci`: the fixed LoCoMo subset (every CI_EVERY-th scored question of each conversation) that
  tests/test_eval_baseline.py re-runs; every figure in it is enforced;
- `full`: every LoCoMo question, for the README (not re-run by the tests: it takes minutes);
- `demo`: the bundled sample's hand-written queries, enforced by tests/test_eval_demo.py;
- `currentness`: the currentness set (current@1, stale_above_current and source-level figures),
  enforced by tests/test_eval_currentness.py;
- `realmem_ci`: RealMem's first persona (its own small store), every question, enforced by
  tests/test_eval_baseline.py; `realmem`: every persona, for the README (not re-run by the tests);
- `madial`, `mtbenchplus`: every question of each (small sets), enforced by tests/test_eval_baseline.py.

Every section keeps the plain reference's rows (`plain_bm25`, `plain_cosine`, `plain_rrf`) beside the
arms when the run had them; they are guarded like the arms (they move only when the data or store does).

Refresh one with `recallfs eval --dataset locomo --write-baseline ci` (or `full`, or
`--dataset demo --write-baseline demo`), and say in the commit why the figures moved.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

BASELINE_PATH = Path(__file__).resolve().parent / "baseline.json"
TOLERANCE = 0.005
SECTION_DATASET = {"ci": "locomo", "full": "locomo", "demo": "demo", "currentness": "currentness",
                   "realmem": "realmem", "realmem_ci": "realmem", "madial": "madial", "mtbenchplus": "mtbenchplus"}
# The subset a section is written from (and re-run on); sections not named here take every question.
SECTION_SUBSET: dict[str, dict[str, int]] = {"ci": {"every": 10}, "realmem_ci": {"personas": 1}}
LEVELS = ("turn", "session", "memory", "source", "currentness")
LOWER_IS_BETTER = frozenset({"stale_above_current"})  # a figure that must not rise


def section_problem(section: str, dataset: str, every: int | None, limit: int | None, ablate: bool,
                    personas: int | None = None) -> str | None:
    """Why this run cannot write that section (None when it can)."""
    if section not in SECTION_DATASET:
        return f"unknown baseline section {section!r}; use one of {', '.join(SECTION_DATASET)}"
    if SECTION_DATASET[section] != dataset:
        return f"the {section!r} baseline section is written by --dataset {SECTION_DATASET[section]}"
    if ablate:
        return "--write-baseline records the arm comparison, not an ablation"
    if limit is not None or every is not None or personas is not None:
        return "--write-baseline picks the question set itself: leave out --limit, --every and --personas"
    return None


def figures(report: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a harness report a baseline keeps: per arm, level -> scope -> metric."""
    arms: dict[str, Any] = {}
    unavailable: dict[str, Any] = {}
    for arm, res in report["arms"].items():
        if not res.get("available"):
            unavailable[arm] = res.get("reason")
            continue
        arms[arm] = {level: res[level] for level in LEVELS if level in res}
    out: dict[str, Any] = {
        "subset": report.get("subset"),
        "questions": report["questions"],
        "arms": arms,
    }
    if unavailable:
        out["unavailable"] = unavailable
    return out


def harness_arms(section_arms: list[str]) -> list[str]:
    """The harness's arm names that re-run a section's rows (its `plain_*` rows come from `plain`)."""
    names = [a for a in section_arms if not a.startswith("plain_")]
    return names + (["plain"] if len(names) < len(section_arms) else [])


def load(path: Path = BASELINE_PATH) -> dict[str, Any]:
    if not path.exists():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


def write_section(section: str, report: Mapping[str, Any], path: Path = BASELINE_PATH) -> Path:
    """Replace one section, keeping the others."""
    data = load(path)
    data["tolerance"] = data.get("tolerance", TOLERANCE)
    data["refresh"] = ("recallfs eval --dataset locomo --write-baseline ci|full; "
                       "recallfs eval --dataset demo --write-baseline demo; "
                       "recallfs eval --dataset currentness --write-baseline currentness; "
                       "recallfs eval --dataset realmem --write-baseline realmem_ci|realmem; "
                       "recallfs eval --dataset madial --write-baseline madial; "
                       "recallfs eval --dataset mtbenchplus --write-baseline mtbenchplus")
    data[section] = figures(report)
    ordered = {k: data[k] for k in ("tolerance", "refresh", *SECTION_DATASET) if k in data}
    path.write_text(json.dumps(ordered, indent=2) + "\n", encoding="utf-8")
    return path


def regressions(base: Mapping[str, Any], current: Mapping[str, Any], tolerance: float = TOLERANCE) -> list[str]:
    """Every figure of `base` (a section's `arms`) that `current` lowers by more than `tolerance`,
    and every baseline arm `current` no longer has. Figures only in `current` are not judged."""
    out: list[str] = []
    for arm, levels in base.items():
        if arm not in current:
            out.append(f"{arm}: no figures now (the arm was unavailable)")
            continue
        for level, scopes in levels.items():
            for scope, figs in (scopes or {}).items():
                if figs is None:
                    continue
                now_figs = ((current[arm].get(level) or {}).get(scope)) or {}
                for metric, value in figs.items():
                    got = now_figs.get(metric)
                    if got is None:
                        out.append(f"{arm} {level} {scope} {metric}: missing now (baseline {value:.4f})")
                    elif metric in LOWER_IS_BETTER:
                        if got > value + tolerance + 1e-9:
                            out.append(f"{arm} {level} {scope} {metric}: {got:.4f} > baseline {value:.4f}"
                                       f" + {tolerance}")
                    elif got < value - tolerance - 1e-9:  # exactly at the tolerance passes
                        out.append(f"{arm} {level} {scope} {metric}: {got:.4f} < baseline {value:.4f}"
                                   f" - {tolerance}")
    return out
