"""Editing a memory the way an agent would: copy its file out of the mount, change it with sed, and write
it to inbox/. The mount's own front matter is accepted (its derived fields dropped, what rendering added
to the text taken off), an unchanged copy stores nothing, an edit is the memory's next version, and a
correction keeps what it corrected. Real mount, real cp and sed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from mount_helpers import Mount, needs_fuse, serve

from conftest import fact, turn

pytestmark = [needs_fuse, pytest.mark.mount]

RECORDS = [
    fact("window-1", "The deploy window is Tuesday afternoon", id="f-window", created_at="2026-05-01"),
    fact("pager-1", "The pager rota starts on Monday", id="f-rota", created_at="2026-05-01"),
    fact("pager-2", "The pager rota starts on Friday", id="f-rota", created_at="2026-05-10"),
    fact("window-2", "The deploy window moved to Thursday morning", id="f-window-fix", supersedes="f-window",
         created_at="2026-05-03"),
    fact("queue-1", "The job queue is rabbitmq", id="f-queue", superseded_by="f-queue-2", created_at="2026-05-01"),
    fact("queue-2", "The job queue is kafka", id="f-queue-2", created_at="2026-05-02"),
    turn("2026-05-02-ops", 0, "maya", "Who owns the pager this week?", caption="a rota screenshot",
         created_at="2026-05-02T10:00:00"),
    {"type": "summary", "source_id": "2026-05-02-ops#summary", "session": "2026-05-02-ops", "title": "Ops sync",
     "content": "Maya asked about the pager rota.", "created_at": "2026-05-02T11:00:00"},
]


@pytest.fixture(scope="module")
def mounted(tmp_path_factory: pytest.TempPathFactory):
    yield from serve(tmp_path_factory.mktemp("edits"), RECORDS)


def sh(script: str, cwd: Path) -> None:
    proc = subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def only(directory: Path, words: str) -> Path:
    found = [n for n in os.listdir(directory) if words in n]
    assert len(found) == 1, (words, os.listdir(directory))
    return directory / found[0]


def test_an_unchanged_copy_stores_nothing(mounted: Mount, tmp_path: Path) -> None:
    src = only(mounted.path / "facts", "thursday")
    sh(f"cp '{src}' inbox/ && cp '{src}' {tmp_path}/x.md && cp {tmp_path}/x.md inbox/again.md", mounted.path)
    assert os.listdir(mounted.path / "history" / "f-window-fix") == ["v1.md"]
    assert not os.listdir(mounted.path / "inbox" / ".rejected")


def test_an_edited_fact_is_its_next_version_and_its_correction_holds(mounted: Mount, tmp_path: Path) -> None:
    src = only(mounted.path / "facts", "thursday")
    sh(f"sed 's/Thursday morning/Thursday at 09:00/' '{src}' > {tmp_path}/fix.md && cp {tmp_path}/fix.md inbox/",
       mounted.path)
    assert sorted(os.listdir(mounted.path / "history" / "f-window-fix")) == ["v1.md", "v2.md"]
    now = only(mounted.path / "facts", "thursday").read_text()
    assert "version: 2" in now and now.rstrip().endswith("The deploy window moved to Thursday at 09:00")
    assert "source: inbox:fix.md" in now
    # the copy showed `supersedes: [f-window/v1]` (resolved); the stored link is kept, so the Tuesday
    # fact it corrected stays superseded
    assert not [n for n in os.listdir(mounted.path / "facts") if "tuesday" in n]
    assert "current: false" in (mounted.path / "history" / "f-window" / "v1.md").read_text()


def test_an_edited_turn_and_summary_keep_their_text_whole(mounted: Mount, tmp_path: Path) -> None:
    session = mounted.path / "sessions" / "2026-05-02-ops"
    turn_file = only(session / "turns", "maya")
    sh(f"sed 's/this week/next week/' '{turn_file}' > {tmp_path}/t.md && cp {tmp_path}/t.md inbox/ && "
       f"sed 's/pager rota/pager rota and the holidays/' '{session}/summary.md' > {tmp_path}/s.md && "
       f"cp {tmp_path}/s.md inbox/", mounted.path)
    text = turn_file.read_text()
    assert "version: 2" in text
    # the body is rendered as "speaker: content" plus the caption's line: neither is stored twice
    assert text.rstrip().endswith("maya: Who owns the pager next week?\n\n[shared an image: a rota screenshot]")
    summary = (session / "summary.md").read_text()
    assert "# Ops sync\n\nMaya asked about the pager rota and the holidays." in summary
    assert summary.count("# Ops sync") == 1


def test_a_copied_recall_hit_is_refused_with_the_file_to_copy_instead(mounted: Mount) -> None:
    """A hit leaves out fields of its memory, such as `visibility`: written back it would have made a
    private memory public."""
    hits = mounted.path / "recall" / "deploy window"
    first = sorted(n for n in os.listdir(hits) if n.endswith(".md"))[0]
    proc = subprocess.run(["cp", f"recall/deploy window/{first}", "inbox/hit.md"], cwd=mounted.path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "Invalid argument" in proc.stderr
    reason = (mounted.path / "inbox" / ".rejected" / "hit.md").read_text()
    assert "this is a recall hit" in reason and "write the memory's own file (" in reason
    own = reason.split("write the memory's own file (", 1)[1].split(")", 1)[0]  # the hit's path: its version
    assert "/history/" in own and "\nrank:" not in Path(own).read_text()  # a memory's file, not a hit
    proc = subprocess.run(["cp", own, "inbox/own.md"], cwd=mounted.path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr  # the file it names is taken back as the memory


def test_an_unchanged_turn_copy_stores_nothing(mounted: Mount) -> None:
    turns = mounted.path / "sessions" / "2026-05-02-ops" / "turns"
    before = {n: (turns / n).read_text() for n in os.listdir(turns)}
    sh(f"cp '{turns}'/*.md inbox/", mounted.path)
    assert {n: (turns / n).read_text() for n in os.listdir(turns)} == before


def test_a_memory_written_through_the_inbox_edits_like_any_other(mounted: Mount, tmp_path: Path) -> None:
    """Its created_at is the moment of the write, to the microsecond. The file showed it to the second,
    so a copy written back was dated before the memory it copied: an edit went to history only (facts/
    still showed the old text) and an unchanged copy stored another version."""
    sh("echo 'The build server is bld-one' > inbox/build.md", mounted.path)
    src = only(mounted.path / "facts", "bld-one")
    stamp = next(line for line in src.read_text().splitlines() if line.startswith("created_at:"))
    history = mounted.path / "history" / src.read_text().split("\nid: ", 1)[1].split("\n", 1)[0]
    sh(f"cp '{src}' {tmp_path}/same.md && cp {tmp_path}/same.md inbox/", mounted.path)
    assert os.listdir(history) == ["v1.md"]
    sh(f"sed 's/bld-one/bld-two/' '{src}' > {tmp_path}/b.md && cp {tmp_path}/b.md inbox/", mounted.path)
    assert not [n for n in os.listdir(mounted.path / "facts") if "bld-one" in n]
    now = only(mounted.path / "facts", "bld-two").read_text()
    assert "version: 2" in now and stamp in now  # the edit keeps the date the file gave
    assert sorted(os.listdir(history)) == ["v1.md", "v2.md"]


def test_an_older_version_comes_back_as_current_once_its_date_is_dropped(mounted: Mount, tmp_path: Path) -> None:
    """README, Editing a memory: a copy keeps the date of the version it copies, so changing only its text
    stores an older version (found 2026-12-07: the README said a text change alone brought it back)."""
    hist = mounted.path / "history" / "f-rota"
    sh(f"sed 's/Monday/Monday mornings/' {hist}/v1.md > {tmp_path}/r.md && cp {tmp_path}/r.md inbox/", mounted.path)
    assert "current: false" in (hist / "v3.md").read_text()
    assert "friday" in only(mounted.path / "facts", "pager-rota").name
    sh(f"grep -v '^created_at:' {hist}/v1.md > {tmp_path}/r2.md && cp {tmp_path}/r2.md inbox/", mounted.path)
    assert "current: true" in (hist / "v4.md").read_text()
    assert "monday" in only(mounted.path / "facts", "pager-rota").name


def test_a_memory_a_link_retired_comes_back_when_a_file_of_ones_own_clears_the_link(
        mounted: Mount, tmp_path: Path) -> None:
    """Found 2026-12-07: `superseded_by: null` was read as not naming the link, so the new version kept it
    and the memory stayed retired. A copy of the mount's file keeps the link (its null is the rendering's)."""
    hist = mounted.path / "history" / "f-queue"
    sh(f"grep -v '^created_at:' {hist}/v1.md | sed 's/rabbitmq/nats/' > {tmp_path}/q.md && cp {tmp_path}/q.md inbox/",
       mounted.path)
    assert "current: false" in (hist / "v2.md").read_text()  # the rendered copy: the link is kept
    (tmp_path / "own.md").write_text("---\nid: f-queue\nsuperseded_by: null\n---\nThe job queue is nats\n")
    sh(f"cp {tmp_path}/own.md inbox/", mounted.path)
    assert "current: true" in (hist / "v3.md").read_text()
    assert only(mounted.path / "facts", "nats").name.endswith("--f-queue.md")
    assert only(mounted.path / "facts", "kafka")  # the link only retired f-queue; f-queue-2 stays


def test_an_edit_of_an_older_version_dated_as_the_current_one_is_refused(mounted: Mount, tmp_path: Path) -> None:
    """Found 2026-12-07 by a soak: an edit made by copying keeps its version's date, so all of a memory's
    versions can share one; an edited copy of an older version then won the tie (the later arrival) and
    silently became current. It is refused, saying how to edit the memory or bring the text back."""
    (tmp_path / "tie.md").write_text("---\nid: f-tie\n---\nThe wombat build cache lives on disk A.\n")
    sh(f"cp {tmp_path}/tie.md inbox/", mounted.path)
    current = only(mounted.path / "facts", "wombat")
    sh(f"sed 's/disk A/disk B/' '{current}' > {tmp_path}/t2.md && cp {tmp_path}/t2.md inbox/", mounted.path)
    hist = mounted.path / "history" / "f-tie"
    assert "disk-b" in only(mounted.path / "facts", "wombat").name
    proc = subprocess.run(["bash", "-c", f"sed 's/disk A/disk C/' {hist}/v1.md > {tmp_path}/t3.md && "
                           f"cp {tmp_path}/t3.md inbox/"], cwd=mounted.path, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode != 0 and "Invalid argument" in proc.stderr, proc.stderr
    note = (mounted.path / "inbox" / ".rejected" / "t3.md").read_text()
    assert "version 1 of f-tie" in note and "version 2 is current" in note and "history/f-tie/v2.md" in note, note
    assert "disk-b" in only(mounted.path / "facts", "wombat").name
    assert sorted(os.listdir(hist)) == ["v1.md", "v2.md"]
    sh("rm inbox/.rejected/t3.md", mounted.path)
    # an unchanged copy of the older version is still nothing, and its date dropped brings the text back
    sh(f"cp {hist}/v1.md inbox/", mounted.path)
    sh(f"grep -v '^created_at:' {tmp_path}/t3.md > {tmp_path}/t4.md && cp {tmp_path}/t4.md inbox/", mounted.path)
    assert "disk-c" in only(mounted.path / "facts", "wombat").name
    assert not {"v1.md", "t4.md"} & set(os.listdir(mounted.path / "inbox" / ".rejected"))
