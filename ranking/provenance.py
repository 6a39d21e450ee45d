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
# Chosen by the ablation (README, "Ranking"; developer-notes/ranking.md): on LoCoMo the evidence is in
# turns, so any real table gradient costs recall (1 / 0.9 / 0.8 lost 4 points of turn R@10, 1 / 0.97 /
# 0.94 still 1), while a gradient this shallow only orders hits of equal rank in their lists (a fact
# before a summary before a turn) and beat equal weights on both LoCoMo subsets and the demo set. The
# lexical arm at 0.7 keeps the semantic arm's lead where it is the stronger one (the demo set).
DEFAULT_WEIGHTS: dict[str, float] = {"facts": 1.0, "summaries": 0.995, "turns": 0.99, "lexical": 0.7}


def split_list_name(name: str) -> tuple[str, str]:
    """'lexical:facts' -> ('lexical', 'facts'); a bare name is an arm over no named table."""
    arm, _, table = name.partition(":")
    return arm, table


def weight_for(name: str, weights: Mapping[str, float] | None) -> float:
    """The weight of the ranked list `arm:table`. `None` means the defaults; `{}` means all equal."""
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
