"""One stem for every form of a word that ends in a vowel and y.

The FTS index stems with the original Porter algorithm (DuckDB's `stem(_, 'porter')`). Its step 1c turns
a final y into i when the rest of the word has a vowel, so "enjoy", "enjoys" and "enjoyed" become
"enjoi"; but a suffix that a later step removes leaves the y in place, so "enjoyment" and "enjoyable"
become "enjoy". Porter's own outputs thus split one word in two, and a query for "deploys" never found
a memory about a "deployment". The lexical arm folds every stem, the index's and the query's alike,
through `fold`: a final y after a vowel becomes i. A y after a consonant survives step 1c only when the
rest has no vowel ("sky"), and stays, so "sky" and "ski" remain two words.

Pure; `FOLD_SQL` is the same rule for a stem computed in SQL (tests/test_stem_fold.py checks that the two
agree).
"""

from __future__ import annotations

import numpy as np

_VOWELS = "aeiou"

# `{}`: a SQL expression giving a stem. RE2's syntax, as DuckDB's regexp_replace takes it.
FOLD_SQL = r"regexp_replace({}, '^(.+[aeiou])y$', '\1i')"


def fold(stem: str) -> str:
    """The stem the lexical arm counts `stem` (a Porter stem) under."""
    if len(stem) > 2 and stem[-1] == "y" and stem[-2] in _VOWELS:
        return stem[:-1] + "i"
    return stem


def variants(folded: str) -> tuple[str, ...]:
    """The Porter stems that fold to `folded`: itself, and its y form where it has one."""
    if len(folded) > 2 and folded[-1] == "i" and folded[-2] in _VOWELS:
        return folded, folded[:-1] + "y"
    return (folded,)


def fold_vocabulary(words: list[str]) -> tuple[list[str], np.ndarray] | None:
    """For an index's terms: the distinct folded terms, ascending, and each input term's position among
    them; None where no term changes (the common case costs one pass over the words ending in y)."""
    if not any(w.endswith("y") and fold(w) != w for w in words):
        return None
    folded = [fold(w) for w in words]
    distinct = sorted(set(folded))
    position = {w: i for i, w in enumerate(distinct)}
    return distinct, np.fromiter((position[w] for w in folded), dtype=np.int64, count=len(folded))
