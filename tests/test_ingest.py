"""Ingest through the real CLI into real DuckDB files: bad input is refused whole, with FILE:LINE."""

from __future__ import annotations

import json
import random

import pytest

from recallfs.query.importers.jsonl import jsonl_lines
from recallfs.query.records import MAX_RECORD_BYTES
from recallfs.query.store import Store

from conftest import fact, snapshot, turn, write_jsonl

GOOD = [
    fact("f1", "CI runs on GitHub Actions with cargo nextest", kind="decision", tags=["ci"], entity="ci"),
    turn("s1", 0, "maya", "hello, can you look at the flaky test?"),
    turn("s1", 1, "atlas", "Sure: test_sync_windows fails on path separators."),
    {"type": "summary", "source_id": "s1#summary", "session": "s1", "content": "Fixed a flaky Windows test.",
     "created_at": "2026-06-01"},
]


BAD_LINES = [
    # (second line, expected reason fragment)
    ("{not json", "malformed JSON"),
    ('["a list"]', "expected a JSON object"),
    (json.dumps({"type": "fact", "content": "x", "created_at": "2026-01-01"}), "missing field 'source_id'"),
    (json.dumps({"type": "fact", "source_id": "f9", "created_at": "2026-01-01"}), "missing field 'content'"),
    (json.dumps({"type": "fact", "source_id": "f9", "content": "x"}), "missing field 'created_at'"),
    (json.dumps({"type": "fact", "source_id": "f9", "content": "x", "created_at": "yesterday"}),
     "not an ISO 8601 date"),
    (json.dumps({"type": "fact", "source_id": "f9", "content": "x", "created_at": "2026-13-45"}),
     "not an ISO 8601 date"),
    (json.dumps({"type": "fact", "source_id": "f9", "content": "x", "created_at": "9999-12-31T23:00:00-05:00"}),
     "is outside the years 1900-2200"),  # past the calendar once in UTC: was an OverflowError traceback
    (json.dumps({"type": "fact", "source_id": "f9", "content": "x", "created_at": "0001-01-01T00:30:00+01:00"}),
     "is outside the years 1900-2200"),
    (json.dumps({"type": "fact", "source_id": "f9", "content": 42, "created_at": "2026-01-01"}),
     "content: expected a string, got int"),
    (json.dumps({"type": "fact", "source_id": "f9", "content": "x", "created_at": "2026-01-01", "tags": "ci"}),
     "tags: expected a list of strings"),
    (json.dumps({"type": "memo", "source_id": "f9", "content": "x", "created_at": "2026-01-01"}),
     "is not one of fact, summary, turn"),
    (json.dumps({"type": "turn", "source_id": "t9", "content": "x", "created_at": "2026-01-01", "session": "s",
                 "speaker": "a", "seq": "three"}), "seq: expected a non-negative integer"),
    (json.dumps({"type": "turn", "source_id": "t9", "content": "x", "created_at": "2026-01-01", "seq": 3,
                 "speaker": "a"}), "missing field 'session'"),
    (json.dumps({"type": "fact", "source_id": "f9", "content": "x", "created_at": "2026-01-01",
                 "status": "gone"}), "status: 'gone' is not one of"),
    (json.dumps({"type": "fact", "source_id": "f9", "content": "   ", "created_at": "2026-01-01"}),
     "content: must not be empty"),
    (json.dumps({"type": "fact", "source_id": "f9", "content": "x", "created_at": "2026-01-01",
                 "workspace": "a/b/c"}), "bad workspace"),
    (json.dumps({"type": "fact", "source_id": "f9", "content": "x", "created_at": "2026-01-01", "colour": 1}),
     "unknown field 'colour'"),
    # A lone surrogate escape decodes to no character UTF-8 can store; refused, never altered.
    (json.dumps({"type": "fact", "source_id": "f9", "content": "bad \ud800 text", "created_at": "2026-01-01"}),
     "content: a lone surrogate \\ud800 at character 4 is not text"),
    (json.dumps({"type": "fact", "source_id": "f9", "content": "x", "created_at": "2026-01-01",
                 "tags": ["ok", "\udfff"]}), "tags: a lone surrogate \\udfff at character 0"),
    (json.dumps({"type": "summary", "source_id": "s9", "session": "s", "content": "x", "created_at": "2026-01-01",
                 "title": "a\udbff"}), "title: a lone surrogate"),
    # Found 2026-12-04: a traceback (Python will not read an integer of over 4,300 digits), and a seq past
    # the turns table's INTEGER column that passed the checks and failed inside DuckDB.
    ('{"type": "fact", "source_id": "f9", "content": "x", "created_at": "2026-01-01", "n": ' + "9" * 5000 + "}",
     "malformed JSON: a number of more than 4,300 digits"),
    (json.dumps({"type": "turn", "source_id": "t9", "content": "x", "created_at": "2026-01-01", "session": "s",
                 "speaker": "a", "seq": 10**30}), "seq: expected a non-negative integer up to 2,147,483,647, got "
                                                  "'an integer of 31 digits'"),
    (json.dumps({"type": "turn", "source_id": "t9", "content": "x", "created_at": "2026-01-01", "session": "s",
                 "speaker": "a", "seq": 2**31}), "up to 2,147,483,647, got 2147483648"),
    (json.dumps({"type": "fact", "source_id": "f9", "content": "ab\x00c", "created_at": "2026-01-01"}),
     "content: a NUL character at character 2 is not text"),  # a file `truncate -s 100` made in inbox/ was 100 NULs
    ("[" * 100_000 + "]" * 100_000, "malformed JSON: nested too deeply"),
    # Found 2026-12-07: JSON keeps the last of a repeated key, so one of two texts was dropped silently
    ('{"type": "fact", "source_id": "f9", "content": "dup keys", "content": "second", "created_at": "2026-01-01"}',
     "malformed JSON: the key 'content' is given twice in one object"),
    ('{"a":' * 50_000 + "1" + "}" * 50_000, "malformed JSON: nested too deeply"),
    (json.dumps({"type": "fact", "source_id": "f9", "content": "x" * (MAX_RECORD_BYTES + 1),
                 "created_at": "2026-01-01"}), f"over the limit of {MAX_RECORD_BYTES:,} bytes"),
]


@pytest.mark.parametrize(("bad_line", "reason"), BAD_LINES, ids=[r[:40] for _, r in BAD_LINES])
def test_bad_record_refuses_whole_batch(tmp_path, cli, store_path, bad_line, reason):
    cli("ingest", str(write_jsonl(tmp_path / "seed.jsonl", GOOD[:2])), check=True)
    before = snapshot(store_path)
    bad = write_jsonl(tmp_path / "bad.jsonl", [fact("f5", "a good record before the bad one"), bad_line,
                                              fact("f6", "a good record after it")])
    proc = cli("ingest", str(bad))
    assert proc.returncode == 1
    assert f"{bad}:2: " in proc.stderr
    assert reason in proc.stderr
    assert "nothing written" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and len(proc.stderr) < 400  # one line, not the line's text
    assert snapshot(store_path) == before


def test_missing_file_and_bad_utf8(tmp_path, cli, store_path):
    proc = cli("ingest", str(tmp_path / "nope.jsonl"))
    assert proc.returncode == 1 and "no such file" in proc.stderr
    raw = tmp_path / "latin1.jsonl"
    raw.write_bytes(json.dumps(fact("f1", "ok")).encode() + b"\n" + b'{"content": "caf\xe9"}\n')
    proc = cli("ingest", str(raw))
    assert proc.returncode == 1 and f"{raw}:2: not valid UTF-8" in proc.stderr
    assert not store_path.exists()


def test_reingest_is_a_no_op_and_changes_make_versions(tmp_path, cli, store_path):
    src = write_jsonl(tmp_path / "notes.jsonl", GOOD)
    first = cli("ingest", str(src), check=True)
    assert "4 written" in first.stdout
    before = snapshot(store_path)
    again = cli("ingest", str(src), check=True)
    assert "0 written" in again.stdout and "4 unchanged" in again.stdout
    assert snapshot(store_path) == before

    changed = [dict(GOOD[0], content="CI runs on GitHub Actions with cargo nextest --profile ci"), *GOOD[1:]]
    third = cli("ingest", str(write_jsonl(tmp_path / "notes2.jsonl", changed)), check=True)
    assert "1 written (1 new versions)" in third.stdout
    with Store(store_path, read_only=True) as store:
        schema = store.partition("acme", "proj")
        rows = store.cursor().execute(
            f"SELECT version, content, rid IN (SELECT rid FROM {schema}.heads) FROM {schema}.facts ORDER BY version"
        ).fetchall()
    assert [(v, cur) for v, _, cur in rows] == [(1, False), (2, True)]
    assert rows[1][1].endswith("--profile ci")


def test_record_workspace_and_agent_override_defaults(tmp_path, cli, store_path):
    src = write_jsonl(tmp_path / "multi.jsonl", [
        fact("f1", "alpha fact"),
        fact("f2", "beta fact", workspace="other/space", agent="scout", visibility="private"),
    ])
    cli("ingest", str(src), check=True)
    with Store(store_path, read_only=True) as store:
        assert store.workspaces() == [("acme", "proj"), ("other", "space")]
        schema = store.partition("other", "space")
        row = store.cursor().execute(f"SELECT org, workspace, agent, visibility FROM {schema}.facts").fetchone()
    assert row == ("other", "space", "scout", "private")


def test_blank_and_comment_lines_are_skipped(tmp_path, cli):
    src = write_jsonl(tmp_path / "c.jsonl", ["// exported by hand", "", json.dumps(fact("f1", "kept"))])
    assert "1 written" in cli("ingest", str(src), check=True).stdout


def test_locomo_importer_rejects_non_locomo(tmp_path, cli, store_path):
    bad = tmp_path / "x.json"
    bad.write_text('{"not": "a list"}')
    proc = cli("ingest", "--format", "locomo", str(bad))
    assert proc.returncode == 1 and "expected a JSON list of conversations" in proc.stderr
    assert not store_path.exists()


def test_text_is_stored_as_written_surrogate_pairs_included(tmp_path, cli, store_path):
    """A surrogate *pair* escape is one real character (here an emoji); it is kept exactly."""
    src = tmp_path / "emoji.jsonl"
    src.write_text('{"type": "fact", "source_id": "e1", "content": "ship it \\ud83d\\ude80", '
                   '"created_at": "2026-06-01"}\n', encoding="utf-8")
    cli("ingest", str(src), check=True)
    with Store(store_path, read_only=True) as store:
        schema = store.partition("acme", "proj")
        assert store.cursor().execute(f"SELECT content FROM {schema}.facts").fetchone() == ("ship it \U0001f680",)


def test_a_record_at_the_size_limit_is_accepted(tmp_path, cli, store_path):
    content = ("word " * (MAX_RECORD_BYTES // 5))[: MAX_RECORD_BYTES - 100]  # the limit counts every text field
    src = write_jsonl(tmp_path / "big.jsonl", [fact("big", content, tags=["x"])])
    assert "1 written" in cli("ingest", str(src), check=True).stdout


def test_locomo_text_with_a_lone_surrogate_is_refused(tmp_path, cli, store_path):
    conv = {"sample_id": "c1", "conversation": {
        "speaker_a": "A", "speaker_b": "B", "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "fine"},
                      {"speaker": "B", "dia_id": "D1:2", "text": "broken \ud800"}]}}
    src = tmp_path / "locomo.json"
    src.write_text(json.dumps([conv]), encoding="utf-8")
    proc = cli("ingest", "--format", "locomo", str(src))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"{src}: conversation 0: turn D1:2: content: a lone surrogate \\ud800" in proc.stderr
    assert not store_path.exists()


def test_a_batch_looks_up_each_workspace_once(tmp_path, monkeypatch):
    """The partition of a workspace is found once per batch, not once per record: a catalog query per
    record made a 2,000-record write ten times slower (900 against 9,000 rows/s, same run)."""
    from datetime import datetime

    from recallfs.query.ingest import write_records
    from recallfs.query.records import MemoryRecord

    calls: list[tuple[str, str]] = []
    original = Store.ensure_partition

    def counted(self, cur, org, workspace):
        calls.append((org, workspace))
        return original(self, cur, org, workspace)

    monkeypatch.setattr(Store, "ensure_partition", counted)
    records = [MemoryRecord(table="facts", source_id=f"s{i}", content=f"note {i}", created_at=datetime(2026, 6, 1),
                            org="acme", workspace=f"w{i % 3}", agent="a") for i in range(300)]
    with Store(tmp_path / "s.duckdb") as store:
        report = write_records(store, records)
    assert report.written == 300
    assert sorted(calls) == [("acme", "w0"), ("acme", "w1"), ("acme", "w2")]


def _random_batches(seed: int) -> list[list[dict]]:
    """Small batches as agents write them: new memories, the same source written again (unchanged, or
    changed: a new version), a memory id named by a new source, older versions arriving late."""
    rnd = random.Random(seed)
    batches = []
    for step in range(30):
        batch = []
        for _ in range(rnd.randint(1, 3)):
            n = rnd.randint(0, 6)
            day = f"2026-06-{rnd.randint(1, 28):02d}T10:00:00Z"
            text = rnd.choice(["first text", "second text", "third text"])
            if rnd.random() < 0.5:  # a known source keeps its first memory id, whatever id it names later
                named = {"id": f"named{rnd.randint(0, 6)}"} if rnd.random() < 0.3 else {}
                batch.append(fact(f"src{n}", f"fact {n}: {text}", created_at=day, **named))
            elif rnd.random() < 0.5:
                batch.append(fact(f"new{step}-{n}", f"fact {n}: {text}", id=f"named{n}", created_at=day))
            else:
                batch.append(turn(f"s{n % 2}", n, "maya", f"turn {n}: {text}", created_at=day))
        batches.append(batch)
    return batches


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_small_batch_reading_only_its_own_rows_decides_as_a_full_read_does(tmp_path, seed, monkeypatch):
    """_Known reads only the rows a small batch names (its source ids, and the memory ids they lead to):
    the ids, versions and outcomes it gives are those of reading the whole table."""
    from recallfs.query import ingest as ingest_module
    from recallfs.query.ingest_file import ingest_records
    from recallfs.query.records import parse_record

    def run(path, narrow: int) -> tuple[list, list]:
        monkeypatch.setattr(ingest_module, "NARROW_LOAD", narrow)
        reports = []
        with Store(path) as store:
            for batch in _random_batches(seed):
                report = ingest_records(store, [parse_record(o, org="acme", workspace="proj", agent="tester")
                                                for o in batch], embedder=None)
                reports.append((report.written, report.unchanged, report.new_versions, report.historical))
            schema = store.partition("acme", "proj")
            rows = [store.cursor().execute(
                f"SELECT source_id, id, version, content FROM {schema}.{t} ORDER BY rid").fetchall()
                for t in ("facts", "turns")]
        return reports, rows

    assert run(tmp_path / "narrow.duckdb", 2000) == run(tmp_path / "full.duckdb", 0)


# Characters str.splitlines ends a line at that JSON lets stand raw inside a string (found 2026-12-08)
RAW_BREAKS = ["\u2028", "\u2029", "\x85", "\x1c", "\x1d", "\x1e", "\x0b", "\x0c"]


@pytest.mark.parametrize(("text", "lines"), [
    ("", []),
    ("a", ["a"]),
    ("a\n", ["a"]),
    ("a\nb", ["a", "b"]),
    ("a\n\nb\n", ["a", "", "b"]),
    ("a\r\nb\r\n", ["a", "b"]),
    ("\n", [""]),
    ("a\rb\n", ["a\rb"]),  # a lone \r ends no JSONL line
    *[(f"a{c}b\nc", [f"a{c}b", "c"]) for c in RAW_BREAKS],
], ids=repr)
def test_jsonl_lines_end_only_at_newline(text, lines):
    assert jsonl_lines(text) == lines


def test_raw_line_separators_in_a_string_are_stored_exactly(tmp_path, cli, store_path):
    records = [fact(f"sep{i}", f"a{c}b{c}", tags=[f"t{c}x"]) for i, c in enumerate(RAW_BREAKS)]
    src = tmp_path / "seps.jsonl"
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    assert f"{len(RAW_BREAKS)} written" in cli("ingest", str(src), check=True).stdout
    with Store(store_path, read_only=True) as store:
        schema = store.partition("acme", "proj")
        rows = store.cursor().execute(f"SELECT source_id, content, tags FROM {schema}.facts").fetchall()
    assert sorted(rows) == sorted((r["source_id"], r["content"], r["tags"]) for r in records)


def test_the_line_of_an_error_after_a_raw_line_separator(tmp_path, cli, store_path):
    good = "".join(json.dumps(fact(f"sep{i}", f"a{c}b"), ensure_ascii=False) + "\n" for i, c in enumerate(RAW_BREAKS))
    bad = json.dumps({"type": "fact", "source_id": "late", "content": "x", "created_at": "2026-13-01"})
    src = tmp_path / "late.jsonl"
    src.write_text(good + bad + "\n", encoding="utf-8")
    proc = cli("ingest", str(src))
    assert proc.returncode == 1
    assert f"{src}:{len(RAW_BREAKS) + 1}: " in proc.stderr and "not an ISO 8601 date" in proc.stderr
    assert not store_path.exists()
