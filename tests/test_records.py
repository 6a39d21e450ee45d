"""Record parsing and importer helpers, from tables."""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from recallfs.query.importers.locomo import parse_locomo_date
from recallfs.query.records import RecordError, derive_id, parse_record, parse_timestamp


@pytest.mark.parametrize(("text", "expected"), [
    ("2026-06-11", datetime(2026, 6, 11)),
    ("2026-06-11T14:03:00Z", datetime(2026, 6, 11, 14, 3)),
    ("2026-06-11T16:03:00+02:00", datetime(2026, 6, 11, 14, 3)),
    ("2026-06-11 14:03", datetime(2026, 6, 11, 14, 3)),
])
def test_parse_timestamp(text, expected):
    assert parse_timestamp(text) == expected


@pytest.mark.parametrize("bad", ["", "yesterday", "2026-02-30", "11/06/2026", 20260611, None, "0001-01-01"])
def test_parse_timestamp_refuses(bad):
    with pytest.raises(RecordError):
        parse_timestamp(bad)


@pytest.mark.parametrize(("text", "expected"), [
    ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56)),
    ("12:09 am on 13 September, 2023", datetime(2023, 9, 13, 0, 9)),
    ("12:30 pm on 1 January 2024", datetime(2024, 1, 1, 12, 30)),
    ("10:37 am on 27 June, 2023", datetime(2023, 6, 27, 10, 37)),
])
def test_locomo_dates(text, expected):
    assert parse_locomo_date(text) == expected


def test_locomo_date_refuses_garbage():
    with pytest.raises(ValueError, match="unrecognised"):
        parse_locomo_date("sometime in May")


def test_ids_are_stable_and_table_prefixed():
    assert derive_id("facts", "x") == derive_id("facts", "x")
    assert derive_id("facts", "x") != derive_id("turns", "x")
    assert derive_id("turns", "D1:3").startswith("t-")


def test_search_text_carries_speaker_caption_and_tags():
    rec = parse_record({"type": "turn", "source_id": "s#1", "session": "s", "seq": 1, "speaker": "Mel",
                        "content": "look!", "caption": "a photo of a lake", "created_at": "2026-01-01"},
                       org="o", workspace="w", agent="a")
    assert rec.search_text == "Mel: look! [shared an image: a photo of a lake]"
    rec = parse_record({"type": "fact", "source_id": "f", "content": "use nextest", "tags": ["ci", "tests"],
                        "entity": "ci", "created_at": "2026-01-01"}, org="o", workspace="w", agent="a")
    assert rec.search_text == "use nextest (ci) #ci #tests"


def test_content_hash_changes_with_content_only():
    base = {"type": "fact", "source_id": "f", "content": "a", "created_at": "2026-01-01"}
    a = parse_record(base, org="o", workspace="w", agent="x")
    b = parse_record(base, org="o", workspace="w", agent="x")
    c = parse_record({**base, "content": "b"}, org="o", workspace="w", agent="x")
    assert a.content_hash == b.content_hash != c.content_hash


@pytest.mark.parametrize("key", ["id", "supersedes", "superseded_by"])
@pytest.mark.parametrize("value", [".hidden", "..", "."])
def test_an_id_starting_with_a_dot_is_refused(key, value):
    # history/<id>/ would be a hidden name, which the mount resolves to nothing ("..": not a name at all)
    record = {"type": "fact", "source_id": "f", "content": "a", "created_at": "2026-01-01", key: value}
    with pytest.raises(RecordError, match=f"{key}: '{re.escape(value)}' must be .* not starting with '.'"):
        parse_record(record, org="o", workspace="w", agent="a")


@pytest.mark.parametrize("key", ["id", "supersedes", "superseded_by"])
def test_an_id_with_a_trailing_newline_is_refused(key):
    # The old rule was `^...$` with re.match, and `$` also matches before a final newline: "f-1\n" was
    # stored, and its file in facts/ could not be opened (the mount's grammar holds the whole name to
    # the rule).
    record = {"type": "fact", "source_id": "f", "content": "a", "created_at": "2026-01-01", key: "f-1\n"}
    with pytest.raises(RecordError, match=f"{key}: 'f-1\\\\n' must be 1-64 letters"):
        parse_record(record, org="o", workspace="w", agent="a")
