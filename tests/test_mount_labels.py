"""Labels in either Unicode form, through a real mount: "café" typed composed (NFC) and pasted decomposed
(NFD, "e" + U+0301) look the same in `ls`, so they are one tag, one entity, one session and one kind.

Before: a tag written decomposed by one agent and composed by another showed as two `café` directories
side by side, `ls facts/by-tag/café` (typed composed) was ENOENT for the decomposed one, and
`recall/... tag:café/` missed it. A store written before labels were normalized keeps what it holds, so
the test writes such rows as that code did (labels and content hash as typed).
"""

from __future__ import annotations

import json
import os
import subprocess
import unicodedata
from pathlib import Path

import duckdb
import pytest
from mount_helpers import WORKSPACE, base_env, build_store, needs_fuse, run_cli, start_mount, stop_mount

from recallfs.query.records import parse_record

from conftest import fact, turn, write_jsonl

pytestmark = [needs_fuse, pytest.mark.mount]


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


CAFE, ZOE, REUNION, DECISION = nfc("café"), nfc("Zoë"), nfc("réunion"), nfc("décision")
OLD = [  # written by a store before labels were normalized: kept decomposed
    fact("old-1", "The bakery on Rue Cler opens at seven", tags=[nfd(CAFE)], entity=nfd(ZOE), kind=nfd(DECISION)),
    turn(nfd(REUNION), 0, "maya", "Shall we meet at the bakery tomorrow"),
]
NEW = [  # written now, composed and decomposed
    fact("new-1", "Zoe prefers green tea in the morning", tags=[CAFE], entity=ZOE, kind=DECISION),
    fact("new-2", "The market closes at noon on Sundays", tags=[nfd(CAFE)], entity=nfd(ZOE)),
    turn(REUNION, 1, "sam", "Yes, at the bakery at eight"),
]


def _as_old_code_stored(store: Path, records: list[dict]) -> None:
    """Put these records' rows back as the code before normalization wrote them: labels as typed, and the
    content hash of the record as typed."""
    org, ws = WORKSPACE.split("/")
    con = duckdb.connect(str(store))
    try:
        schema = con.execute("SELECT schema_name FROM main.partitions WHERE org = ? AND workspace = ?",
                             [org, ws]).fetchone()[0]
        for obj in records:
            rec = parse_record(obj, org=org, workspace=ws, agent="tester")  # parsing alone keeps the labels
            con.execute(
                f"UPDATE {schema}.{rec.table} SET tags = ?, entity = ?, kind = ?, session = ?, content_hash = ? "
                "WHERE source_id = ?",
                [rec.tags, rec.entity, rec.kind, rec.session, rec.content_hash, rec.source_id])
        stored = con.execute(f"SELECT list(DISTINCT session) FROM {schema}.turns").fetchone()[0]
        assert stored == [nfd(REUNION)]
    finally:
        con.close()


def sh(*cmd: str) -> str:
    proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (cmd, proc.stderr)
    return proc.stdout


def test_a_label_in_either_unicode_form_is_one_label(tmp_path: Path) -> None:
    env = base_env(tmp_path)
    store = build_store(tmp_path, OLD, env, name="old.jsonl")
    _as_old_code_stored(store, OLD)
    build_store(tmp_path, NEW, env, name="new.jsonl")
    # the old file again: unchanged, though its labels are now stored composed when written anew
    again = run_cli("ingest", str(write_jsonl(tmp_path / "old-again.jsonl", OLD)), env=env, check=True).stdout
    assert "0 written" in again and "2 unchanged" in again, again
    mount = start_mount(tmp_path, env)
    try:
        m = mount.path
        assert os.listdir(m / "facts" / "by-tag") == [CAFE]
        assert os.listdir(m / "entities") == [f"{ZOE}.md"]
        assert os.listdir(m / "sessions") == [REUNION]
        assert sorted(os.listdir(m / "facts" / "by-kind")) == [DECISION, "fact"]
        tagged = sorted(os.listdir(m / "facts" / "by-tag" / CAFE))
        assert len(tagged) == 3
        # typed in the other form, each name reaches the same directory or file
        assert sorted(os.listdir(m / "facts" / "by-tag" / nfd(CAFE))) == tagged
        assert len(os.listdir(m / "facts" / "by-kind" / nfd(DECISION))) == 2
        card = sh("cat", str(m / "entities" / f"{nfd(ZOE)}.md"))
        assert all(text in card for text in ("Rue Cler", "green tea", "market closes"))
        transcript = (m / "sessions" / nfd(REUNION) / "transcript.md").read_text()
        assert "meet at the bakery" in transcript and "at eight" in transcript
        assert len(sh("ls", str(m / "sessions" / REUNION / "turns")).split()) == 2
        assert sh("grep", "-rl", "Rue Cler", str(m / "facts" / "by-tag")).count("\n") == 1
        # recall filters: a label typed in either form matches rows stored in either form
        for typed in (CAFE, nfd(CAFE)):
            hits = json.loads((m / "recall" / f"opens closes prefers tag:{typed}" / "results.json").read_text())
            assert {h["source_id"] for h in hits["hits"]} == {"old-1", "new-1", "new-2"}, typed
        for typed in (REUNION, nfd(REUNION)):
            q = m / "recall" / f"bakery session:{typed}"
            hits = json.loads((q / "results.json").read_text())["hits"]
            assert {h["source_id"] for h in hits} == {f"{nfd(REUNION)}#0", f"{REUNION}#1"}, typed
            # each hit names its file in the tree, under the one session directory
            paths = [line.split(": ", 1)[1].strip('"') for hit in sorted(q.glob("0*.md"))
                     for line in hit.read_text().splitlines() if line.startswith("path: ")]
            assert len(paths) == 2 and all(f"/sessions/{REUNION}/turns/" in p for p in paths), paths
            assert all(Path(p).is_file() for p in paths), paths
    finally:
        stop_mount(mount)
