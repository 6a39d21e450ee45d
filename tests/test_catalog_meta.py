"""query/catalog._meta: the catalog holds a Meta per readable row for a whole generation (100k at 100k
memories), so a value that repeats across rows (session, kind, tags, entity, speaker) is one string
object, not one per row as DuckDB returns it: 41 -> 27 MB of Metas for the 100k bench store."""

from __future__ import annotations

from datetime import UTC, datetime

from recallfs.query.readable_parts import meta as _meta

WHEN = datetime(2026, 1, 1, tzinfo=UTC)


def _row(rid: int) -> tuple[object, ...]:
    # "".join: a new string object each time, as DuckDB makes them
    def fresh(text: str) -> str:
        return "".join(list(text))
    return (rid, f"t-{rid}", fresh("s-2026-01-01"), fresh("turn"), [fresh("ci"), fresh("build")], fresh("nextest"),
            WHEN, rid, fresh("maya"), 1)


def test_repeated_values_are_one_object_and_equal_to_the_row() -> None:
    a, b = _meta("turns", _row(1)), _meta("turns", _row(2))
    assert a.session is b.session and a.kind is b.kind and a.speaker is b.speaker and a.entity is b.entity
    assert all(x is y for x, y in zip(a.tags, b.tags, strict=True))
    assert (a.rid, a.id, a.session, a.kind, a.tags, a.entity, a.created_at, a.seq, a.speaker, a.version) == (
        1, "t-1", "s-2026-01-01", "turn", ("ci", "build"), "nextest", WHEN, 1, "maya", 1)
    empty = _meta("facts", (3, "f", None, "fact", None, None, WHEN, None, None, 2))
    assert (empty.session, empty.tags, empty.entity, empty.speaker) == (None, (), None, None)
