"""Arm scores put on one 0..1 scale, so fusion can weigh how strongly each arm matched, not only where.

Reciprocal rank fusion sees ranks only: an arm's first hit counts the same whether it matched the whole
query or one common word. On data where one arm is weak for a given question (a paraphrase lexical
cannot see, names that make every chat line look semantically alike), that costs the stronger arm its
lead. Each arm's raw score is therefore calibrated against something that does not depend on the
other candidates:

- lexical: BM25 over the query's *ceiling*, the score a row reaches by matching every query term as
  strongly as any row in the index does (the sum of each term's highest BM25 weight). A query term the
  index has never seen still counts in the ceiling, at the mean of the seen terms' weights, so a row
  that matches the two common words of a five-word question is not a perfect match;
- semantic: the cosine as a z-score against the query's similarity to a sample of the partition's
  memories (mean, sd), mapped linearly from Z_FLOOR (0: a typical near-miss) to Z_FULL (1: a clear
  standout).

Pure functions; the arms (query/lexical.py, query/semantic.py) supply the raw numbers. Z_FLOOR and
Z_FULL were chosen by the ablation (developer-notes/ranking.md), on LoCoMo and on the demo set together.
"""

from __future__ import annotations

from collections.abc import Sequence

Z_FLOOR = 1.75
Z_FULL = 5.5


def lexical_ceiling(term_maxima: Sequence[float], n_terms: int) -> float:
    """The BM25 a row would reach by matching every one of the query's `n_terms` distinct terms as well
    as the best row does. `term_maxima`: the highest BM25 weight of each term the index knows."""
    known = [w for w in term_maxima if w > 0]
    if not known:
        return 0.0
    unseen = max(0, n_terms - len(known))
    return sum(known) + unseen * (sum(known) / len(known))


def lexical_score(bm25: float, ceiling: float) -> float:
    """BM25 as a fraction of the ceiling, in 0..1."""
    if ceiling <= 0 or bm25 <= 0:
        return 0.0
    return min(1.0, bm25 / ceiling)


def term_fraction(matched: int, n_terms: int) -> float:
    """The calibrated lexical score of a row the index does not hold yet (found by substring): the
    share of the query's terms it contains."""
    if n_terms <= 0 or matched <= 0:
        return 0.0
    return min(1.0, matched / n_terms)


def similarity_z(cosine: float, mean: float, sd: float) -> float:
    """How far this cosine stands out from the query's similarity to memories in general."""
    return (cosine - mean) / max(sd, 1e-6)


# A nearest row with a positive cosine that does not stand out (z at or below Z_FLOOR, or under the
# arm's cosine floor) still takes part in fusion, at a score this small times its cosine: far below the
# relevance floor, so it never outranks evidence; it follows the hits that pass the floor, in cosine
# order among its kind (ranking/floor.py).
WEAK_SCALE = 1e-4


def weak_score(cosine: float) -> float:
    """The fused share of a neighbour that does not stand out: positive, in cosine order, tiny."""
    return WEAK_SCALE * max(0.0, cosine)


# How far the semantic arm's standout bar falls when the lexical arm found little. A query that shares
# no strong words with any memory (a whole dialogue alluding to an old event, a paraphrase) leaves the
# semantic arm as the only evidence, and memories that all concern one person or topic lift every
# cosine together, so the true one rarely stands Z_FLOOR sd out: then z from Z_FLOOR_WEAK already counts.
# LEXICAL_STRONG is the lexical arm's best calibrated score (a share of the query's ceiling) from which
# the full bar applies; between, the bar moves linearly.
Z_FLOOR_WEAK = 0.5
LEXICAL_STRONG = 0.3


def standout_floor(lexical_best: float, weak: float = Z_FLOOR_WEAK) -> float:
    """The z at which a semantic neighbour starts to count, given the lexical arm's best calibrated score
    (0..1) over the same scope: `weak` when the lexical arm matched nothing, Z_FLOOR from LEXICAL_STRONG
    up (`weak` = Z_FLOOR: the bar never moves)."""
    share = min(1.0, max(0.0, lexical_best) / LEXICAL_STRONG)
    return weak + share * (Z_FLOOR - weak)


def standout_note(lexical_best: float, z_floor: float) -> str:
    """recall's `stages.standout`: the bar a semantic neighbour had to clear, and why."""
    if z_floor >= Z_FLOOR:
        return f"z {z_floor:.2f} (the lexical arm's best match: {lexical_best:.2f} of the query)"
    return f"z {z_floor:.2f}, lowered: the lexical arm's best match is {max(0.0, lexical_best):.2f} of the query"


def semantic_score(z: float, floor: float = Z_FLOOR, full: float = Z_FULL) -> float:
    """A z-score mapped to 0..1: 0 at or below `floor`, 1 at or above `full`, linear between."""
    if full <= floor:
        raise ValueError("the full-credit z must be above the floor")
    return min(1.0, max(0.0, (z - floor) / (full - floor)))
