"""Which hits of earlier recall runs still open under the newest run (mount/recall_dirs.still_open)."""

from __future__ import annotations

import pytest

from recallfs.mount import recall_dirs
from recallfs.mount.entries import Entry
from recallfs.mount.paths import Kind


def names(*items: str) -> list[Entry]:
    return [Entry(n, Kind.QUERY, {}) for n in items]


@pytest.mark.parametrize(("earlier", "shown", "expected"), [
    ([], set(), []),
    (["01-a.md", "02-b.md"], {"01-a.md"}, ["02-b.md"]),  # what the new run shows is not repeated
    (["02-a.md", "01-a.md", "02-a.md"], set(), ["02-a.md", "01-a.md"]),  # one per name, newest run first
    (["01-a.md", "results.json"], {"results.json"}, ["01-a.md"]),
])
def test_still_open(earlier: list[str], shown: set[str], expected: list[str]) -> None:
    assert [e.name for e in recall_dirs.still_open(names(*earlier), shown)] == expected


def test_still_open_is_bounded() -> None:
    many = names(*(f"{i:04d}-x.md" for i in range(recall_dirs.EARLIER_KEPT + 50)))
    kept = recall_dirs.still_open(many, set())
    assert len(kept) == recall_dirs.EARLIER_KEPT and kept[0].name == "0000-x.md"
