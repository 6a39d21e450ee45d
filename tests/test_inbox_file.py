"""query/inbox_file.py: a written file as records, or refused whole with its line. From tables."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import yaml

from recallfs.query.inbox_file import FrontMatterLoader, InboxError, Writer, parse_inbox_file

NOW = datetime(2026, 11, 27, 9, 30, tzinfo=UTC)
SCOUT = Writer(org="acme", workspace="platform", agent="scout", now=NOW)


def _one(name: str, text: str):
    records = parse_inbox_file(name, text.encode(), SCOUT)
    assert len(records) == 1
    return records[0]


@pytest.mark.parametrize(("name", "text", "expected"), [
    ("db.md", "The staging DB moved to pg-delta on 2026-11-20\n",
     {"table": "facts", "kind": "fact", "content": "The staging DB moved to pg-delta on 2026-11-20"}),
    ("note.txt", "  several\n\nparagraphs  \n", {"table": "facts", "content": "several\n\nparagraphs"}),
    ("pref.md", "---\nkind: preference\nentity: maya\nslot: maya.editor\ntags: [tools, editor]\n---\n"
     "Maya edits in Helix now.\n",
     {"table": "facts", "kind": "preference", "entity": "maya", "slot": "maya.editor", "tags": ["tools", "editor"],
      "content": "Maya edits in Helix now."}),
    ("old.md", "---\ncreated_at: 2026-05-01\nvisibility: private\n---\nThe offsite is in Lisbon.",
     {"created_at": datetime(2026, 5, 1), "visibility": "private"}),
    ("sum.md", "---\ntype: summary\nsession: s-42\ntitle: Release planning\n---\nWe agreed on a 2-week cadence.",
     {"table": "summaries", "session": "s-42", "title": "Release planning"}),
    ("same.md", "---\nagent: scout\nworkspace: acme/platform\n---\nClaims that match the view are fine.",
     {"agent": "scout", "workspace": "platform", "org": "acme"}),
    ("sup.md", "---\nsupersedes: f-db-host\n---\nThe DB host is db-7 now.", {"supersedes": "f-db-host"}),
    # Found 2026-12-07: YAML 1.1 read these as a date that is none (an internal error) and as a boolean
    ("ids.md", "---\ntype: summary\nsession: 2026-04-31\n---\nThe April session.", {"session": "2026-04-31"}),
    ("who.md", "---\ntype: turn\nsession: s\nseq: 1\nspeaker: no\n---\nHi.", {"speaker": "no"}),
    ("when.md", "---\ncreated_at: 2026-06-01T10:00:00Z\n---\nA time.", {"created_at": datetime(2026, 6, 1, 10)}),
    # Found 2026-12-07: the body was split as str.splitlines splits, so these became newlines
    ("seps.md", "---\nkind: note\n---\na\u2028b\u2029c\x85d\x0be\x1cf\r\ng\n",
     {"content": "a\u2028b\u2029c\x85d\x0be\x1cf\ng"}),
    ("crlf.md", "---\r\nkind: note\r\n---\r\nline one\r\nline two\r\n",
     {"kind": "note", "content": "line one\nline two"}),
])
def test_written_files_become_records(name, text, expected):
    rec = _one(name, text)
    assert (rec.org, rec.workspace, rec.agent) == ("acme", "platform", "scout")
    if "created_at" not in expected:
        assert rec.created_at == NOW.replace(tzinfo=None)  # the store keeps naive UTC
    for field, value in expected.items():
        assert getattr(rec, field) == value, field


@pytest.mark.parametrize(("name", "text", "line", "words"), [
    ("claim.md", "---\nagent: atlas\n---\nI am someone else.", 2, "writes as 'scout', not 'atlas'"),
    ("ws.md", "---\nkind: fact\nworkspace: acme/other\n---\nElsewhere.", 3, "writes to acme/platform"),
    ("yaml.md", "---\nkind: fact\ntags: [unclosed\n---\nBody.", 3, "front matter"),
    ("open.md", "---\nkind: fact\nBody without a closing line.", 1, "never closed"),
    ("field.md", "---\nkind: fact\ncolour: blue\n---\nBody.", 3, "unknown field 'colour'"),
    ("type.md", "---\ntype: turn\nsession: s\n---\nA turn needs its seq.", None, "seq"),
    ("empty.md", "---\nkind: fact\n---\n\n", 4, "no text"),
    ("blank.md", "   \n\n", None, "no text"),
    ("list.md", "---\n- a\n- b\n---\nBody.", 2, "field: value"),
    ("content.md", "---\ncontent: hidden\n---\nBody.", 2, "text after the front matter"),
    ("status.md", "---\nstatus: maybe\n---\nBody.", 2, "status"),
    ("hex.md", "---\nentity: 0x1F\n---\nBody.", 2, 'quote it: entity: "..."'),
    ("day.md", "---\nkind: fact\ncreated_at: 2026-02-30\n---\nBody.", 3, "created_at: '2026-02-30'"),
    ("zone.md", "---\ncreated_at: 2026-06-01T10:00:00+25:00\n---\nBody.", 2, "created_at:"),
    ("tagged.md", "---\ncreated_at: !!timestamp 2026-02-30\n---\nBody.", 2, "created_at:"),
    ("lines.jsonl", '{"type": "fact", "source_id": "a", "created_at": "2026-01-01", "content": "ok"}\n'
     '{"type": "fact", "source_id": "b", "created_at": "2026-01-01", "content": "x", "agent": "atlas"}\n',
     2, "writes as 'scout'"),
    ("bad.jsonl", '{"type": "fact",\n', 1, "malformed JSON"),
    ("none.jsonl", "// nothing but a comment\n", None, "no record"),
    ("array.jsonl", "[1, 2]\n", 1, "JSON object"),
    # Found 2026-12-08: a raw U+2028 in a string is valid JSON; splitlines cut the record at it
    ("sep.jsonl", '{"type": "fact", "source_id": "a", "created_at": "2026-01-01", "content": "a\u2028b\x85c"}\n'
     '{"type": "fact", "source_id": "b", "created_at": "2026-01-01", "content": "x", "agent": "atlas"}\n',
     2, "writes as 'scout'"),
    # Found 2026-12-04: nested aliases expanded to a billion items (68 s, 5 GB); a self-reference recursed.
    ("bomb.md", "---\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
     + "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 9)) + "---\nBody.",
     2, "anchors and aliases"),
    ("self.md", "---\nkind: fact\ntags: &a [*a]\n---\nBody.", 3, "anchors and aliases"),
    ("anchor.md", "---\nkind: fact\nentity: &who Zoe\n---\nBody.", 3, "anchors and aliases"),
    # Found 2026-12-05: PyYAML's loader spent ~1.2 ms a nesting level, 36 s for 30k brackets on one close.
    ("deep.md", "---\nkind: " + "[" * 30000 + "]" * 30000 + "\n---\nBody.", 2, "nest deeper than 7 levels"),
    ("deepmap.md", "---\n" + "".join(" " * i + f"k{i}:\n" for i in range(12)) + " " * 12 + "v\n---\nBody.",
     10, "nest deeper than 7 levels"),
])
def test_refused_files_say_which_line_and_why(name, text, line, words):
    with pytest.raises(InboxError) as info:
        parse_inbox_file(name, text.encode(), SCOUT)
    assert info.value.line == line, str(info.value)
    assert words in str(info.value)


def test_invalid_utf8_points_at_its_line():
    with pytest.raises(InboxError, match="UTF-8") as info:
        parse_inbox_file("bin.md", b"fine\nalso fine\n\xff\xfe broken", SCOUT)
    assert info.value.line == 3


@pytest.mark.parametrize(("name", "text"), [
    ("bom.md", "\ufeff---\nkind: decision\n---\nWe ship on Fridays.\n"),
    ("bom.jsonl", '\ufeff{"type": "fact", "source_id": "b1", "kind": "decision", "content": "We ship on Fridays."}\n'),
])
def test_a_byte_order_mark_is_not_text(name, text):
    """Some editors start a UTF-8 file with one: the front matter was stored as the memory's text."""
    rec = _one(name, text)
    assert (rec.kind, rec.content) == ("decision", "We ship on Fridays.")


def test_jsonl_is_read_as_ingest_reads_it():
    text = ('{"type": "turn", "source_id": "t1", "created_at": "2026-11-01T10:00:00Z", "session": "s1", "seq": 0, '
            '"speaker": "maya", "content": "hello"}\n\n// a comment\n'
            '{"type": "fact", "source_id": "f1", "created_at": "2026-11-01", "content": "cadence is 2 weeks"}\n')
    records = parse_inbox_file("batch.jsonl", text.encode(), SCOUT)
    assert [(r.table, r.source_id, r.agent) for r in records] == [("turns", "t1", "scout"), ("facts", "f1", "scout")]


def test_the_same_file_written_twice_is_the_same_record():
    # its source id is a hash of what it says, so ingest stores it once; other text is another memory
    first, again = _one("a.md", "The cache TTL is 5 minutes."), _one("b.md", "The cache TTL is 5 minutes.")
    other = _one("a.md", "The cache TTL is 10 minutes.")
    assert first.source_id == again.source_id and first.id == again.id
    assert other.source_id != first.source_id


def test_the_same_text_written_again_later_is_the_same_memory():
    """Found 2026-12-04: the time of the write was part of a plain file's source id, so an agent writing the
    same note twice (a retry after an error) made two facts. A created_at the file gives still counts."""
    from datetime import timedelta

    later = Writer(org="acme", workspace="platform", agent="scout", now=NOW + timedelta(minutes=5))
    first = _one("a.md", "The cache TTL is 5 minutes.")
    again = parse_inbox_file("a.md", b"The cache TTL is 5 minutes.", later)[0]
    assert first.id == again.id and first.source_id == again.source_id
    assert again.created_at > first.created_at  # written again: its next version, dated now
    dated = [parse_inbox_file("d.md", b"---\ncreated_at: %s\n---\nThe cache TTL is 5 minutes." % d, SCOUT)[0]
             for d in (b"2026-01-01", b"2026-02-01")]
    assert dated[0].source_id != dated[1].source_id


def test_a_slot_written_again_is_the_next_version_of_one_memory():
    first = _one("a.md", "---\nslot: build-cache\n---\nThe build cache lives on nfs-1")
    second = _one("b.md", "---\nslot: build-cache\n---\nThe build cache lives on nfs-2")
    named = _one("c.md", "---\nslot: build-cache\nid: f-mine\n---\nAn id given wins")
    assert first.id == second.id != named.id == "f-mine"
    assert first.source_id != second.source_id


# Found 2026-12-08: YAML keeps the last of a repeated key silently (`kind: decision` then `kind: fact`
# stored a fact); JSONL refuses the same with its line. Lines count from the front matter's first line.
@pytest.mark.parametrize(("source", "key", "line"), [
    ("kind: decision\nkind: fact", "kind", 2),
    ("kind: decision\n'kind': fact", "kind", 2),
    ("entity: a\ntags: [x]\nentity: b", "entity", 3),
    ("meta:\n  a: 1\n  a: 2", "a", 3),
    ("meta: {a: 1, b: 2, a: 3}", "a", 1),
    ("tags:\n  - {k: 1}\n  - {k: 1, k: 2}", "k", 3),
    ("a:\n  b:\n    c: 1\n    d: 2\n    c: 3", "c", 5),
])
def test_the_front_matter_loader_refuses_a_key_given_twice(source, key, line):
    with pytest.raises(yaml.YAMLError) as info:
        yaml.load(source, Loader=FrontMatterLoader)
    assert f"the key {key!r} is given twice" in str(info.value)
    assert info.value.problem_mark.line + 1 == line


@pytest.mark.parametrize(("source", "expected"), [
    ("a: {k: 1}\nb: {k: 2}", {"a": {"k": 1}, "b": {"k": 2}}),  # the same key in two maps
    ("tags: [x, x]", {"tags": ["x", "x"]}),
    ("kind: fact\nKind: fact", {"kind": "fact", "Kind": "fact"}),
])
def test_the_front_matter_loader_takes_keys_given_once(source, expected):
    assert yaml.load(source, Loader=FrontMatterLoader) == expected


def test_a_front_matter_key_given_twice_refuses_the_file_with_its_line():
    with pytest.raises(InboxError) as info:
        parse_inbox_file("d.md", b"---\nkind: decision\nkind: fact\n---\nx\n", SCOUT)
    assert info.value.line == 3
    assert "front matter: the key 'kind' is given twice" in str(info.value)
