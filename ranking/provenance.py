"""Provenance: which table a hit came from, and how much each ranked list counts in fusion.

The one place that holds the default weights. Distilled facts rank above summaries, and summaries
above raw turns: a fact is a memory someone chose to keep, a turn is what was said on the way.
"""

from __future__ import annotations

from collections.abc import Mapping

from recallfs.ranking.candidates import Candidate

# Lower is better provenance. Unknown tables come last.
TABLE_PRIORITY: dict[str, int] = {"facts": 0, "summaries": 1, "turns": 2}

# Keys: a table ("facts"), an arm ("semantic") or one list ("semantic:turns"). A list's weight is
# its own key when present, else (arm weight) x (table weight), each 1.0 when absent.
#
# Chosen by the ablation (README, "Ranking"; developer-notes/ranking.md) for calibrated fusion, where a
# weight scales a score: a fact outranks a turn unless the turn matches the query at least 1.25 times
# as strongly. On the demo set that kept the distilled answer above the session summary and the turns
# it came from (MRR 0.797 -> 0.872 against 0.995 / 0.99); on LoCoMo, where the evidence is turns, it
# cost 0.007 turn R@10. The lexical arm at 0.7 against the semantic arm's 1 is a 0.41 / 0.59 blend.
DEFAULT_WEIGHTS: dict[str, float] = {"facts": 1.0, "summaries": 0.82, "turns": 0.8, "lexical": 0.7}
# Rank fusion (RECALLFS_FUSION=rrf) merges per-table ranked lists, where a weight divides a reciprocal
# rank: there 0.8 would put a fact at rank 13 above every table's first turn (LoCoMo turn R@10 of the
# lexical arm, when it merged by rank: 0.768 -> 0.664). Their gradient only orders rows of equal rank
# in their lists. A single arm merges its tables by its own scores (fusion.by_score, SINGLE_ARM_WEIGHTS).
RANK_WEIGHTS: dict[str, float] = {"facts": 1.0, "summaries": 0.995, "turns": 0.99, "lexical": 0.7}
# A single arm merged by its own scores (fusion.by_score). Cosines are on one scale across tables, so
# the semantic arm's tables weigh 1 (the calibrated weights cost LoCoMo's every 10th question 0.025
# turn R@5 there). The calibrated BM25 is relative to each table's own ceiling, so a summary that holds
# every query word scores near 1 beside the fact it summarises: the lexical arm keeps calibrated
# fusion's table prior (currentness set: current@1 0.958 -> 1.000; demo MRR 0.594 -> 0.663; LoCoMo
# turn R@5 and R@10 unchanged). Keys are lists, so the semantic arm's are untouched.
SINGLE_ARM_WEIGHTS: dict[str, float] = {"lexical:summaries": 0.82, "lexical:turns": 0.8}


def split_list_name(name: str) -> tuple[str, str]:
    """'lexical:facts' -> ('lexical', 'facts'); a bare name is an arm over no named table."""
    arm, _, table = name.partition(":")
    return arm, table


def weight_for(name: str, weights: Mapping[str, float] | None) -> float:
    """The weight of the list `arm:table`. `None` means DEFAULT_WEIGHTS; `{}` means all equal."""
    table_weights = DEFAULT_WEIGHTS if weights is None else weights
    if name in table_weights:
        return float(table_weights[name])
    arm, table = split_list_name(name)
    return float(table_weights.get(arm, 1.0)) * float(table_weights.get(table, 1.0))


def parse_weights(text: str) -> dict[str, float]:
    """'facts=1,turns=0.5,semantic:turns=0.3' -> a weights mapping. Raises ValueError with the reason."""
    out: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"weight {part!r} is not NAME=NUMBER (e.g. facts=1.0 or semantic:turns=0.5)")
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"weight {part!r}: {value.strip()!r} is not a number") from None
        if not number >= 0 or number == float("inf"):
            raise ValueError(f"weight {part!r} must be a finite number >= 0")
        out[key] = number
    return out


def format_weights(weights: Mapping[str, float]) -> str:
    """The text form parse_weights reads: {'facts': 1.0, 'turns': 0.5} -> 'facts=1,turns=0.5'."""
    return ",".join(f"{key}={value:g}" for key, value in weights.items())


def provenance_key(cand: Candidate) -> tuple[int, int, float, int]:
    """Sort key, best provenance first: table priority, then found by more arms, then score, then rid."""
    return (TABLE_PRIORITY.get(cand.table, len(TABLE_PRIORITY)), -len(cand.arms), -cand.score, cand.rid)
