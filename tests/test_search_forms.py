"""Compatibility forms in the indexed text (query/search_forms.py), from tables."""

from __future__ import annotations

import pytest

from recallfs.query.search_forms import _words_change, searchable


@pytest.mark.parametrize(("text", "indexed"), [
    ("plain ascii stays", "plain ascii stays"),
    ("ＰＲＯＭＥＴＨＥＵＳ ２０２６", "PROMETHEUS 2026"),
    ("the ﬁrewall", "the firewall"),
    ("H₂O and m²", "H2O and m2"),
    ("wait…", "wait..."),
    ("café, naïve", "café, naïve"),  # canonical forms stay: the index strips accents itself
    ("東京タワー", "東京タワー"),
    ("ｶﾀｶﾅ", "カタカナ"),  # half-width katakana to full-width
])
def test_searchable(text: str, indexed: str) -> None:
    assert searchable(text) == indexed


@pytest.mark.parametrize(("old", "changes"), [
    ("wait… what", False),  # an ellipsis folds to dots: no term of the index moves, no rebuild
    ("a\u00a0b", False),  # a no-break space folds to a space
    ("ＡＢ", True),
    ("the ﬁrewall", True),
    ("m²", True),
])
def test_a_rebuild_is_due_only_when_a_word_changed(old: str, changes: bool) -> None:
    assert _words_change(old, searchable(old)) is changes
