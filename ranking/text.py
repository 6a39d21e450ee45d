"""Text helpers the stages share: folding and word splitting, the same way for every stage."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_WORD = re.compile(r"\w+", re.UNICODE)

# For ASCII text, \w is exactly [A-Za-z0-9_]: one bytes.translate that lower-cases those and blanks every
# other byte, then split(), finds the same words as the regex in half the time (the near-duplicate
# stage splits some 400 candidates per recall at 100k memories).
_ASCII_WORD_BYTES = bytes(
    (ch | 0x20 if 65 <= ch <= 90 else ch) if (chr(ch).isalnum() or ch == 95) else 32 for ch in range(128)
) + bytes(128)


def fold(text: str) -> str:
    """Lower-case, accents stripped, runs of whitespace made one space.

    The one fold: the stages compare texts by it, and the lexical arm cuts its query terms from it
    (query/lexical.query_terms), because it folds as the FTS index does (lower=1, strip_accents=1:
    NFKD, combining marks dropped). Making whitespace one space changes no term, since terms are split
    on every non-word character anyway."""
    if text.isascii():  # nothing to decompose: skip the per-character pass (most memories)
        return " ".join(text.lower().split())
    decomposed = unicodedata.normalize("NFKD", text.lower())
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(stripped.split())


# Scripts written without spaces between words (or, in Korean, with particles joined to the word):
# there a query word is found inside a longer run of text, so the lexical arm may look for it by
# substring. In a spaced script such a hit is another word that contains it ("tab" in "database").
_UNSPACED = re.compile(
    "[\u0e00-\u0eff\u0f00-\u0fff\u1000-\u109f\u1100-\u11ff\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002ffff]")


def unspaced(term: str) -> bool:
    """Whether `term` holds a character of a script written without spaces (Thai, Lao, Tibetan, Myanmar,
    Khmer, Japanese kana, CJK ideographs, Hangul)."""
    return not term.isascii() and _UNSPACED.search(term) is not None


def words(text: str) -> list[str]:
    """Folded words in order (letters, digits and underscore in any script)."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_WORD_BYTES).decode("ascii").split()
    return _WORD.findall(fold(text))


def estimate_tokens(text: str) -> int:
    """A model-free token estimate: about four characters per token, at least one.

    Good enough for a context budget; the renderers add a little framing per hit on top.
    """
    return max(1, (len(text) + 3) // 4)


# Words that carry no claim of their own. Negations, modals, numbers and prepositions of order or
# direction ("not", "must", "before", "off") are kept: swapping one changes what a sentence says.
_FUNCTION_WORDS = frozenset(
    """
    a an the is am are was were be been being do does did has have had having
    i me my we us our you your he him his she her it its they them their
    this that these those there here to of with by for at as so just also
    """.split()
)


@lru_cache(maxsize=65_536)  # words recur across texts far more than texts recur across queries
def stem(word: str) -> str:
    """A light, conservative suffix strip ("deployed" -> "deploy", "notes" -> "note"): two words
    that stem alike are one word; ones that do not are kept apart, which is the safe side."""
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + keep
    if word.endswith("es") and word[:-2].endswith(("s", "x", "ch", "sh")) and len(word) > 4:
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


@lru_cache(maxsize=32_768)  # pure, and the same candidates come back query after query
def content_words(text: str) -> frozenset[str]:
    """What a text claims, as a set: its words without function words, lightly stemmed."""
    return frozenset(stem(w) for w in words(text) if w not in _FUNCTION_WORDS)
