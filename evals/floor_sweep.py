"""How a relevance floor would trade answerable questions against junk queries (developer-notes/ranking.md).

    python -m recallfs.evals.floor_sweep --dataset locomo            # all 1,981 LoCoMo questions
    python -m recallfs.evals.floor_sweep --dataset demo --junk       # the demo queries, and junk queries
    python -m recallfs.evals.floor_sweep --dataset locomo --arm lexical   (or --fusion rrf, --arm semantic)

Each question runs once through the real recall() with the floor off. A floor only drops hits and keeps
the order of the rest, so a question's gold hit leaves the top 10 under floor f exactly when every
gold hit in its top 10 has `relevance` below f: one pass gives the count for every candidate floor.
A junk query answers "nothing" under f when none of its hits passes. The memory_dev sets
are measured by evals/floor_devsets.py, which feeds the same `sweep` below.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from recallfs.query.recall import recall
from recallfs.query.results import RecallResult
from recallfs.ranking.floor import NO_SHARED_WORD_COSINE
from recallfs.ranking.stage_config import StageConfig

FLOORS = (0.0, 0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.08, 0.1)
COSINES = (0.0, 0.25, 0.3, 0.35, 0.4)
TOP = 10
# The floor "off" for the sweep, but with its cosine test on at a value every semantic hit clears
# (the arm's own floor is 0.2): so recall() still reports in stages.floor whether any readable memory
# holds a query word, and applies the raised cosine (NO_SHARED_WORD_COSINE) when none does.
MEASURE_COSINE = 1e-6
# Queries the demo store has nothing on: gibberish, and questions on topics it never mentions.
JUNK_QUERIES = (
    "zzqxv", "asdf qwerty", "xkcd lorem ipsum", "qwpoeiruty", "blorptang frizzle", "aaaaaaaa", "??", "🦄🦄",
    "kubernetes", "what is the capital of France", "purple elephant banana", "recipe for sourdough bread",
    "who won the 1998 world cup", "how tall is mount everest", "best pizza in naples", "my dentist appointment",
    "quantum chromodynamics lecture notes", "the price of bitcoin", "knitting patterns for scarves",
    "zebra migration in the serengeti",
)

Evidence = tuple[float, bool, "float | None"]  # (relevance, lexical evidence, cosine)


def evidence(hit: Any) -> Evidence:
    return (hit.relevance, hit.shares_words, hit.cosine)


def passes(ev: Evidence, floor: float, cosine: float, any_words: bool = True) -> bool:
    """ranking/floor.py's rule: relevance reaches the floor, and a hit holding no query word also
    reaches the cosine (NO_SHARED_WORD_COSINE at least when no hit of the query holds one)."""
    rel, words, cos = ev
    if cosine > 0 and not any_words:
        cosine = max(cosine, NO_SHARED_WORD_COSINE)
    return rel >= floor and (words or cos is None or cos >= cosine)


def gold_evidence(result: RecallResult, units: Callable[[Any], Iterable[str]], gold: frozenset[str]) -> list[Any]:
    """[any hit holds a query word, [evidence of each top-TOP hit that counts for a gold unit]]."""
    return [any_shared_word(result), [evidence(h) for h in result.hits[:TOP] if gold & set(units(h))]]


def any_shared_word(result: RecallResult) -> bool:
    """Whether some readable memory holds a word of the query: recall() raised the floor's cosine when
    none does, and says so in stages.floor (ranking/floor.floor_config)."""
    return f"cosine {NO_SHARED_WORD_COSINE:g}" not in result.stages.get("floor", "")


def sweep(gold: Sequence[Any], junk: Sequence[Any] = (),
          floors: Sequence[float] = FLOORS, cosines: Sequence[float] = COSINES) -> list[dict[str, Any]]:
    """Per (floor, cosine): answerable questions whose every gold hit in the top 10 would be dropped
    (so the gold leaves the top 10: a floor only drops hits), and junk queries left with no hit."""
    answerable = [g for g in gold if g[1]]
    rows = []
    for f in floors:
        for c in cosines:
            lost = sum(1 for w, g in answerable if not any(passes(e, f, c, w) for e in g))
            rows.append({"floor": f, "cosine": c, "questions": len(gold), "gold_in_top10": len(answerable),
                         "lost": lost, "junk": len(junk),
                         "junk_empty": sum(1 for w, j in junk if not any(passes(e, f, c, w) for e in j))})
    return rows


def _recall_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    off = StageConfig(relevance_floor=0.0, floor_cosine=MEASURE_COSINE)
    return {"arm": args.arm, "fusion": args.fusion, "stages": off, "k": TOP}


def _measure(args: argparse.Namespace) -> dict[str, Any]:
    from recallfs.evals.eval_setup import setup
    from recallfs.evals.scoring import hit_refs
    from recallfs.evals.semantic_probe import load_semantic
    from recallfs.query import settings as settings_mod
    from recallfs.scope.principal import Principal

    info, store = setup(args.dataset, every=args.every)
    semantic, reason = load_semantic(settings_mod.resolve()) if args.arm != "lexical" else (None, "off")
    kwargs = _recall_kwargs(args)
    level = "turn" if args.dataset == "locomo" else "source"
    unit_fn = info.prepared.levels[level]
    gold: list[Any] = []
    try:
        for q in info.prepared.questions:
            result = recall(store, q.principal, q.query, semantic=semantic, **kwargs)
            refs = hit_refs(result)
            by_hit = dict(zip((id(h) for h in result.hits), refs, strict=True))

            def units(hit: Any, q: Any = q, m: dict[int, Any] = by_hit) -> list[str]:
                return unit_fn(m[id(hit)], q)
            gold.append(gold_evidence(result, units, q.relevant[level]))
        junk: list[Any] = []
        if args.junk:
            first = info.prepared.questions[0].principal
            principal = Principal(first.org, first.workspace, "eval")
            for text in JUNK_QUERIES:
                result = recall(store, principal, text, semantic=semantic, **kwargs)
                junk.append([any_shared_word(result), [evidence(h) for h in result.hits]])
    finally:
        store.close()
    return {"dataset": args.dataset, "arm": args.arm, "fusion": args.fusion, "semantic": reason or "on",
            "level": level, "rows": sweep(gold, junk), "gold": gold, "junk_hits": junk}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m recallfs.evals.floor_sweep")
    parser.add_argument("--dataset", choices=("locomo", "demo"), default="locomo")
    parser.add_argument("--arm", choices=("fused", "lexical", "semantic"), default="fused")
    parser.add_argument("--fusion", choices=("calibrated", "rrf"), default="calibrated")
    parser.add_argument("--every", type=int, default=None)
    parser.add_argument("--junk", action="store_true", help="also run the junk queries (demo store)")
    args = parser.parse_args(argv)
    json.dump(_measure(args), sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
