"""Which version replaced which (query/lineage.py), from tables."""

from __future__ import annotations

from datetime import datetime

import pytest

from recallfs.query.lineage import Lineage, Ref, Version, links_of

_rids = iter(range(1, 10_000))


def v(mem_id: str, version: int = 1, day: int = 1, table: str = "facts", **extra: object) -> Version:
    return Version(next(_rids), table, mem_id, version, datetime(2026, 1, day), **extra)  # type: ignore[arg-type]


def named(versions: list[Version]) -> dict[str, tuple[str | None, list[str]]]:
    by_rid = {x.rid: f"{x.id}/v{x.version}" for x in versions}
    return {by_rid[rid]: (by.name if by else None, [r.name for r in older])
            for rid, (by, older) in links_of(versions).items()}


CASES = [
    ("one version, no link", [v("a")], {}),
    ("versions in time order", [v("a", 1, 1), v("a", 2, 2)],
     {"a/v1": ("a/v2", []), "a/v2": (None, ["a/v1"])}),
    ("an older version arriving late sits between by time",
     [v("a", 1, 1), v("a", 2, 9), v("a", 3, 5)],
     {"a/v1": ("a/v3", []), "a/v3": ("a/v2", ["a/v1"]), "a/v2": (None, ["a/v3"])}),
    ("a tie goes to the later arrival", [v("a", 1, 3), v("a", 2, 3)],
     {"a/v1": ("a/v2", []), "a/v2": (None, ["a/v1"])}),
    ("turns have versions too", [v("t", 1, 1, "turns"), v("t", 2, 2, "turns")],
     {"t/v1": ("t/v2", []), "t/v2": (None, ["t/v1"])}),
    ("a supersedes chain across ids, step by step",
     [v("a", day=1), v("b", day=2, supersedes="a"), v("c", day=3, supersedes="b")],
     {"a/v1": ("b/v1", []), "b/v1": ("c/v1", ["a/v1"]), "c/v1": (None, ["b/v1"])}),
    ("superseded_by from the old side names the new memory's head",
     [v("a", 1, 1), v("a", 2, 2, status="superseded", superseded_by="b"), v("b", 1, 3), v("b", 2, 4)],
     {"a/v1": ("a/v2", []), "a/v2": ("b/v2", ["a/v1"]), "b/v1": ("b/v2", []), "b/v2": (None, ["a/v2", "b/v1"])}),
    ("a deleted correction replaces nothing", [v("a", day=1), v("b", day=2, supersedes="a", status="deleted")], {}),
    ("a slot: each live fact is superseded by the next newer",
     [v("x", day=1, slot="s"), v("y", day=3, slot="s"), v("z", day=2, slot="s"), v("w", day=4, slot="s",
                                                                                  status="deleted")],
     {"x/v1": ("z/v1", []), "z/v1": ("y/v1", ["x/v1"]), "y/v1": (None, ["z/v1"])}),
    ("a cycle keeps its newest member", [v("a", day=1, supersedes="b"), v("b", day=2, supersedes="a")],
     {"a/v1": ("b/v1", []), "b/v1": (None, ["a/v1"])}),
]


@pytest.mark.parametrize(("versions", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_links_of(versions, expected):
    assert named(versions) == expected


def test_visible_names_only_readable_versions():
    hidden, shown = Ref("secret", 1, "facts", 7), Ref("open", 2, "facts", 8)
    line = Lineage(False, hidden, (hidden, shown))
    assert line.visible(lambda r: r.id != "secret") == Lineage(False, None, (shown,))
    assert line.visible(lambda r: r.id != "secret").fields() == [
        ("current", False), ("superseded_by", None), ("supersedes", ["open/v2"])]
