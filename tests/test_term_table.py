"""query/term_table.TermTable against a dict of the same terms: hits, misses, and hostile strings."""

from __future__ import annotations

import pytest

from recallfs.query.term_table import TermTable

TERMS = sorted({"", "a", "ab", "abc", "b", "caf\u00e9", "cafe", "z", "\u65e5\u672c", "\U0001f642", "x" * 300,
                "lone\udc80surrogate", "tab\there", "42", "4", "-1"})


@pytest.mark.parametrize("terms", [TERMS, [], ["only"], [str(i) for i in sorted(str(n) for n in range(1000))]])
def test_lookups_agree_with_a_dict(terms):
    table = TermTable(terms)
    want = {t: i for i, t in enumerate(terms)}
    assert len(table) == len(want) and dict(table.items()) == want
    for term in [*terms, "absent", "aa", "abcd", "caf", "\U0001f643", "x" * 299, "zz", "0"]:
        assert table.get(term) == want.get(term)
        assert (term in table) == (term in want)
    assert 5 not in table


def test_ascending_is_what_the_table_needs():
    assert TermTable.ascending(TERMS) and TermTable.ascending([]) and TermTable.ascending(["a"])
    assert not TermTable.ascending(["b", "a"]) and not TermTable.ascending(["a", "a"])
