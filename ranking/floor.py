"""The relevance floor: a hit whose arms barely matched the query is no hit at all.

Every query finds *something* nearest to it: the semantic arm scores how far a memory stands out from
the query's similarity to memories in general, and for a query about nothing the memory memory holds
("zzqxv", a topic since deleted) the nearest rows still stand out a little (short content-free turns
such as "👍" sit close to any out-of-vocabulary text). Without a floor those come back as hits, and an
agent cannot tell "memory has nothing on this" from a weak match.

Two tests, both on evidence rather than on the shaped score:

- `relevance` (every hit): the calibrated fused score of the arms that ran, set before any shaping
  stage (question turns, session evidence, recency are priors on *which* match comes first, not
  evidence that something matched);
- `cosine` (hits only the semantic arm found): the z-score that calibrates the semantic arm says how far
  a row stands out from the query's similarity to memories in general, which for a query about nothing
  is still "a little"; an absolute cosine says whether it is near at all.

The floor reads `Candidate.relevance`, the calibrated fused score of the arms that ran, set before any
shaping stage (question turns, session evidence, recency are priors on *which* match comes first, not
evidence that something matched). The default was chosen by measurement (developer-notes/ranking.md).
"""

from __future__ import annotations

from recallfs.ranking.candidates import Candidate, ordered
from recallfs.ranking.stage_config import StageConfig

# When no memory the caller may read holds a word of the query (gibberish, a topic never mentioned),
# the semantic arm is the only witness. MiniLM then puts content-free rows near out-of-vocabulary
# text ("zzqxv" to "👍": cosine 0.339), while a real paraphrase sharing no word with the store sits at
# 0.38 ("does anyone own a boat" / "... sailing dinghy ..."), so the cosine asked rises a little.
# A tokenizer-level test (the query holds no word the model reads whole) would be the sturdier one.
NO_SHARED_WORD_COSINE = 0.35


def passes(cand: Candidate, floor: float, min_cosine: float) -> bool:
    """Whether a candidate is a match: its relevance reaches `floor`, and when it holds no word of the
    query (only the semantic arm vouches for it), its cosine to the query reaches `min_cosine` too."""
    if cand.relevance is not None and cand.relevance < floor:
        return False
    return cand.shares_words or cand.cosine is None or cand.cosine >= min_cosine


def above_floor(cands: list[Candidate], floor: float, min_cosine: float = 0.0) -> list[Candidate]:
    """The candidates that pass; (0, 0) keeps all. Pure: it changes no candidate, so passes them through."""
    if not 0.0 <= floor <= 1.0:
        raise ValueError("the relevance floor must lie in 0..1")
    if not -1.0 <= min_cosine <= 1.0:
        raise ValueError("the floor's cosine must lie in -1..1")
    return ordered([c for c in cands if passes(c, floor, min_cosine)])


Split = tuple[list[Candidate], list[Candidate]]  # (the hits, the near-misses that follow them)


def split_at_floor(cands: list[Candidate], floor: float, min_cosine: float = 0.0) -> Split:
    """(the candidates that pass, the near-misses that follow them). The floor decides whether memory
    has anything on the query: when no candidate with evidence passes, there is no near-miss either. When some do,
    the rest follow them, in their own order: a ranked list is not cut where the evidence thins (a
    plain retriever's top-k is not), and the near-misses hold the further evidence of a topic (the
    follow-ups of a thread, which share neither words nor much meaning with the question)."""
    passing = above_floor(cands, floor, min_cosine)
    if not any(c.relevance is not None for c in passing):  # none, or only rows that matched nothing
        return passing, []  # themselves (a current fact pulled in for a stale turn's sake)
    kept = {id(c) for c in passing}
    return passing, ordered([c for c in cands if id(c) not in kept])


def promote(passing: list[Candidate], near: list[Candidate], wanted: set[int]) -> Split:
    """`passing` and `near` with the near-misses in `wanted` moved up to the hits: rows a later stage lifts
    for a hit that passed (the reply to a question turn, the current fact of stale evidence). Such a row
    is pulled in when no arm found it; found weakly, it must not stay behind as a near-miss."""
    moved = [c for c in near if c.rid in wanted]
    if not moved:
        return passing, near
    return ordered(passing + moved), [c for c in near if c.rid not in wanted]


def below(passing: list[Candidate], rest: list[Candidate]) -> list[Candidate]:
    """`rest` rescored to follow `passing` (whatever the stages made of its scores), in its order."""
    if not rest:
        return passing
    least = min((c.score for c in passing), default=1.0)
    top = max(c.score for c in rest)
    scale = min(1.0, 0.5 * least / top) if top > 0 else 1.0
    moved = []
    for cand in rest:
        copy = cand.copy()
        copy.score, copy.near_miss = cand.score * scale, True
        moved.append(copy)
    return passing + moved


def floor_config(config: StageConfig, *, any_shared_word: bool, alone: bool = False) -> StageConfig:
    """The stages' config for one query: when no memory the caller may read holds a word of it, the
    floor's cosine rises to NO_SHARED_WORD_COSINE (unless the cosine test is off). Asked of the store,
    not of the candidates: a semantic-only ranking (`--arm semantic`) has no lexical candidates.

    `alone` (one arm ranks, `--arm lexical|semantic`): the arm's own floors decide what it found (BM25
    matched a word; the cosine cleared the arm's MIN_COSINE), so the floor cuts nothing of it, except
    that a query no memory shares a word with still asks NO_SHARED_WORD_COSINE of every hit. The
    relevance test there would be the semantic standout filter again (calibrated z), and the cosine
    test dropped the paraphrases a plain cosine top-k keeps (developer-notes/devsets.md)."""
    if any_shared_word and alone:
        return config.replace(relevance_floor=0.0, floor_cosine=0.0)
    if alone and config.floor_cosine > 0:
        return config.replace(relevance_floor=0.0, floor_cosine=max(config.floor_cosine, NO_SHARED_WORD_COSINE))
    if any_shared_word or config.floor_cosine <= 0 or config.floor_cosine >= NO_SHARED_WORD_COSINE:
        return config
    return config.replace(floor_cosine=NO_SHARED_WORD_COSINE)
