"""What recall() was asked, parsed once: the query's inline options over the caller's, its searchable
words, and which arm and fusion run."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from datetime import datetime

from recallfs.query.lexical import query_terms
from recallfs.query.query_syntax import RecallOptions, parse_query, well_formed

ARMS = ("lexical", "semantic", "fused")
# How the fused arm combines the two: calibrated scores (the default, chosen by the ablation in
# developer-notes/ranking.md) or reciprocal ranks. Single arms are ordered by their own ranking either way.
FUSIONS = ("calibrated", "rrf")


@dataclass(frozen=True, slots=True)
class Request:
    """What was asked, parsed: the query as searched and the options merged (inline options win)."""

    query: str  # the query, well-formed
    text: str  # the search text: inline options removed
    terms: list[str]  # its searchable words, for the lexical arm
    options: RecallOptions
    errors: list[str]  # inline options that were dropped, and why
    k: int
    offset: int
    arm: str
    fusion: str

    @property
    def lexical(self) -> bool:
        return self.arm in ("lexical", "fused")

    @property
    def semantic(self) -> bool:
        return self.arm in ("semantic", "fused")

    @property
    def calibrated(self) -> bool:
        """Whether scores are calibrated (fused by calibrated fusion) rather than reciprocal ranks."""
        return self.arm == "fused" and self.fusion == "calibrated"


def parse(
    query: str, *, arm: str, fusion: str, options: RecallOptions | None, k: int, offset: int, now: datetime | None
) -> Request:
    """The query's inline options over the caller's; raises ValueError for an unknown arm or fusion."""
    if arm not in ARMS:
        raise ValueError(f"arm must be one of {', '.join(ARMS)}")
    if fusion not in FUSIONS:
        raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}")
    query = well_formed(query)
    parsed = parse_query(query, now=options.now if options is not None and options.now else now)
    opts = (options or RecallOptions()).merged(parsed.options)
    text = parsed.text if has_search_text(parsed.text) else ""
    return Request(query=query, text=text, terms=query_terms(text), options=opts,
                   errors=list(parsed.errors), k=opts.k or k, offset=opts.offset if opts.offset is not None else offset,
                   arm=arm, fusion=fusion)


def has_search_text(text: str) -> bool:
    """Whether `text` holds a letter or a digit (any script). Without one (`///`, `?`, an emoji, which
    MiniLM reads as an unknown token) the semantic arm ranked every memory by noise and answered a
    256 KiB filler fact first (found 2026-12-07): such a query has no search text, as an empty one."""
    return any(unicodedata.category(ch)[0] in "LN" for ch in text)
