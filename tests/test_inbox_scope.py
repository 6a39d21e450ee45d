"""A write through inbox/ cannot reach a memory its writer may not read (query/inbox_scope.py), found
2026-12-04: `supersedes: <id>` retired another agent's private fact, a shared `slot` made the write its
next version, and `superseded_by: <id>` told the writer whether a hidden id existed (its own fact went
non-current only then). And 2026-12-07: the defence for a slot (dropping it from the record) showed in
the writer's own file and left the visible fact it replaced current (query/slot_succession.py). Real
mount as `tester`; `other`'s private memories are hidden from it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from mount_helpers import SAMPLE, WORKSPACE, Mount, base_env, build_store, needs_fuse, start_mount, stop_mount

from recallfs.query.records import derive_id
from recallfs.query.store import Store

from conftest import fact

pytestmark = [needs_fuse, pytest.mark.mount]

HIDDEN_SLOT = fact("pay-1", "Payday is the 15th", id="f-pay", slot="pay.day", agent="other", visibility="private",
                   created_at="2026-06-01T09:00:00Z")
VISIBLE_SLOT = fact("pay-0", "Payday was the 30th", id="f-pay0", slot="pay.day", agent="other",
                    created_at="2026-05-01T09:00:00Z")


def _write(mount: Mount, name: str, text: str) -> None:
    proc = subprocess.run(["bash", "-c", f"cat > inbox/{name}"], input=text, cwd=mount.path, text=True,
                          capture_output=True, timeout=120)
    rejected = mount.path / "inbox" / ".rejected" / name
    assert proc.returncode == 0, (proc.stderr, rejected.read_text() if rejected.exists() else None)


def _refused(mount: Mount, name: str, text: str) -> str:
    """The rejection note of a write the mount refuses (EINVAL), with the name of the file taken out."""
    proc = subprocess.run(["bash", "-c", f"cat > inbox/{name}"], input=text, cwd=mount.path, text=True,
                          capture_output=True, timeout=120)
    assert proc.returncode != 0 and "Invalid argument" in proc.stderr, proc.stderr
    return (mount.path / "inbox" / ".rejected" / name).read_text().replace(name, "NAME")


def _current_ids(store: Path) -> set[str]:
    org, workspace = WORKSPACE.split("/")
    with Store(store, read_only=True) as s:
        schema = s.partition(org, workspace)
        return {str(r[0]) for r in s.cursor().execute(
            f"SELECT id FROM {schema}.facts WHERE rid IN (SELECT rid FROM {schema}.heads)").fetchall()}


def test_a_write_cannot_retire_or_probe_a_memory_its_writer_cannot_read(tmp_path: Path) -> None:
    env = base_env(tmp_path)
    build_store(tmp_path, [*SAMPLE, VISIBLE_SLOT, HIDDEN_SLOT], env)
    mount = start_mount(tmp_path, env)
    try:
        facts = mount.path / "facts"
        # a link to a hidden id is refused as a link to an id nobody wrote is (query/inbox_links.py)
        note = _refused(mount, "retire.md",
                        "---\nsupersedes: f-secret\n---\nThe retire-pelican note replaces a secret\n")
        assert "supersedes: f-secret: no fact you can read has this id" in note, note
        _write(mount, "pay.md", "---\nslot: pay.day\n---\nPayday is the 1st, says the slot-marten note\n")
        _write(mount, "pay2.md", "---\nslot: pay.day\n---\nPayday is the 2nd, says the slot-marten note again\n")
        # the existence test: a link to a hidden id and to an id nobody wrote must read the same
        o1 = _refused(mount, "o1.md", "---\nsuperseded_by: f-secret\n---\nThe oracle-alpha probe\n")
        o2 = _refused(mount, "o2.md", "---\nsuperseded_by: f-nope-never\n---\nThe oracle-alpha probe\n")
        assert o1 == o2.replace("f-nope-never", "f-secret"), (o1, o2)
        listed = os.listdir(facts)
        assert not [n for n in listed if "oracle-alpha" in n or "retire-pelican" in n], listed
        marten = [n for n in listed if "slot-marten" in n]
        assert len(marten) == 1 and "2nd" in marten[0], marten  # the writer's own slot writes still chain
        # as in a store without f-pay: the slot is kept, and the visible fact it held is replaced
        assert not [n for n in listed if "30th" in n], listed
        text = (facts / marten[0]).read_text()
        assert "slot: pay.day" in text and "f-pay0/v1]" in text, text
        first = (mount.path / "history" / "f-pay0" / "v1.md").read_text()
        assert "current: false" in first and "superseded_by: f-" in first, first
    finally:
        stop_mount(mount)
    current = _current_ids(Path(env["RECALLFS_STORE"]))
    assert {"f-secret", "f-pay"} <= current, current  # `other`'s memories are as they were
    assert "f-pay0" not in current, current


# Another agent's private fact under the id every writer of `api.key` used to share (before 2026-12-07 a
# slot's id did not name its writer, so the writer's fact was moved off it, and its file name said so).
HIDDEN_AT_SHARED_ID = fact("key-1", "The API key rotates monthly", id=derive_id("facts", "slot:api.key"),
                           slot="api.key", agent="other", visibility="private", created_at="2026-06-01T09:00:00Z")
FIELDS = ("id:", "version:", "current:", "superseded_by:", "supersedes:", "slot:", "status:")


def _tree(mount: Mount) -> dict[str, list[str]]:
    """Every file under facts/ and history/, with the front matter lines that say what it is and links."""
    out: dict[str, list[str]] = {}
    for top in ("facts", "history"):
        for path in sorted((mount.path / top).rglob("*.md")):
            lines = path.read_text().splitlines()
            out[str(path.relative_to(mount.path))] = [ln for ln in lines if ln.startswith(FIELDS)]
    return out


def _slot_writes(mount: Mount) -> dict[str, list[str]]:
    _write(mount, "pay.md", "---\nslot: pay.day\n---\nPayday is the 1st, says the slot-marten note\n")
    _write(mount, "key.md", "---\nslot: api.key\n---\nThe API key is in the vault\n")
    _write(mount, "key2.md", "---\nslot: api.key\n---\nThe API key is in the new vault\n")
    return _tree(mount)


def test_slot_writes_read_as_in_a_store_without_the_hidden_facts(tmp_path: Path) -> None:
    """The writer's tree after the same slot writes, against a store that never held `other`'s private
    facts: every name, id, version, link and `current` the same."""
    trees = []
    for name, records in (("full", [*SAMPLE, VISIBLE_SLOT, HIDDEN_SLOT, HIDDEN_AT_SHARED_ID]),
                          ("clean", [*SAMPLE, VISIBLE_SLOT])):
        env = base_env(tmp_path / name)
        (tmp_path / name).mkdir()
        build_store(tmp_path / name, records, env)
        mount = start_mount(tmp_path / name, env)
        try:
            trees.append(_slot_writes(mount))
        finally:
            stop_mount(mount)
    full, clean = trees
    assert full == clean
    assert [n for n in full if "the-api-key-is-in-the-new-vault" in n and n.startswith("facts/")]


def _own_id_writes(mount: Mount) -> tuple[list[str], list[str]]:
    _write(mount, "mine.md", "---\nid: f-secret\n---\nThe heron-gate code is 4411\n")
    _write(mount, "newer.md", "---\nsupersedes: f-secret\n---\nThe heron-gate code is now 5522\n")
    listed = sorted(os.listdir(mount.path / "facts"))
    heron = [n for n in listed if "heron-gate" in n]
    return listed, [ln for n in heron for ln in (mount.path / "facts" / n).read_text().splitlines()
                    if ln.startswith(("current:", "version:"))]


def test_a_link_to_a_hidden_id_reaches_the_writers_own_memory_of_that_id(tmp_path: Path) -> None:
    """The writer gives its fact an id another agent holds privately, then supersedes that id: as in a
    store without the hidden fact, its own fact is replaced (before 2026-12-07 the link was dropped, so
    the older fact stayed current beside its correction, only when the hidden id existed)."""
    views = []
    clean_sample = [r for r in SAMPLE if r.get("id") != "f-secret"]
    for name, records in (("full", SAMPLE), ("clean", clean_sample)):
        env = base_env(tmp_path / name)
        (tmp_path / name).mkdir()
        build_store(tmp_path / name, records, env)
        mount = start_mount(tmp_path / name, env)
        try:
            views.append(_own_id_writes(mount))
        finally:
            stop_mount(mount)
    full, clean = views
    assert full == clean
    assert [n for n in full[0] if "heron-gate" in n] == [n for n in full[0] if "5522" in n], full
