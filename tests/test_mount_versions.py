"""history/ says what is current (issue 12, items 1 and 7), on a real mount driven with cat, ls and grep.

Every version's front matter says `current`, `superseded_by` and `supersedes`, across one memory's
versions and across a chain of different ids; a recall hit says what it `replaces`; re-ingesting an older
file through the daemon writes nothing and changes no head; and no link names a memory the reader's
policy hides."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from mount_helpers import base_env, build_store, needs_fuse, start_mount, stop_mount
from test_versions import COFFEE_1, COFFEE_2, TAGONLY, TAGONLY_GONE

from conftest import fact, write_jsonl

pytestmark = [needs_fuse, pytest.mark.mount]

DB_1 = fact("db-1", "The primary database is db1.internal", id="f-db-host", created_at="2026-01-05T09:00:00Z")
DB_2 = fact("db-2", "The primary database moved to db2.internal", id="f-db-host-2", supersedes="f-db-host",
            created_at="2026-02-05T09:00:00Z")
DB_3 = fact("db-3", "The primary database moved to pg-main.internal", id="f-db-host-3", supersedes="f-db-host-2",
            created_at="2026-03-05T09:00:00Z")
# a chain whose newer link the reader may not read: another agent's private fact
VAULT_1 = fact("vault-1", "Secrets are kept in the team password manager", id="f-vault",
               created_at="2026-01-05T09:00:00Z")
VAULT_2 = fact("vault-2", "Secrets moved to the sealed vault cluster", id="f-vault-sealed", supersedes="f-vault",
               agent="other", visibility="private", created_at="2026-02-05T09:00:00Z")


def front(path: Path) -> dict:
    text = path.read_text()
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def lineage(path: Path) -> tuple:
    meta = front(path)
    return meta["current"], meta["superseded_by"], meta["supersedes"]


@pytest.fixture
def mounted(tmp_path: Path):
    env = base_env(tmp_path)
    build_store(tmp_path, [COFFEE_1, TAGONLY, DB_1, DB_2, VAULT_1, VAULT_2], env, name="notes1.jsonl")
    mount = start_mount(tmp_path, env)
    yield mount, tmp_path
    stop_mount(mount)


def test_history_says_what_is_current_and_reingest_rewinds_nothing(mounted):
    mount, tmp = mounted
    history = mount.path / "history"
    assert lineage(history / "f-coffee" / "v1.md") == (True, None, [])  # read before it is replaced
    assert lineage(history / "f-db-host-2" / "v1.md") == (True, None, ["f-db-host/v1"])

    notes2 = write_jsonl(tmp / "notes2.jsonl", [COFFEE_2, DB_3])
    notes3 = write_jsonl(tmp / "notes3.jsonl", [TAGONLY_GONE])
    for notes in (notes2, notes3):
        assert "through the mount daemon" in mount.cli("ingest", str(notes)).stdout

    # one memory's versions, in time order
    assert lineage(history / "f-coffee" / "v1.md") == (False, "f-coffee/v2", [])
    assert lineage(history / "f-coffee" / "v2.md") == (True, None, ["f-coffee/v1"])
    # a chain of different ids, step by step
    assert lineage(history / "f-db-host" / "v1.md") == (False, "f-db-host-2/v1", [])
    assert lineage(history / "f-db-host-2" / "v1.md") == (False, "f-db-host-3/v1", ["f-db-host/v1"])
    assert lineage(history / "f-db-host-3" / "v1.md") == (True, None, ["f-db-host-2/v1"])
    # a deletion
    assert lineage(history / "f-tagonly" / "v1.md") == (False, "f-tagonly/v2", [])
    assert front(history / "f-tagonly" / "v2.md")["status"] == "deleted"
    assert lineage(history / "f-tagonly" / "v2.md") == (False, None, ["f-tagonly/v1"])

    tree = sorted(p.name for p in (mount.path / "facts").glob("*.md"))
    coffee = subprocess.run(f"cat {history}/f-coffee/*.md", shell=True, capture_output=True, text=True,
                            check=True).stdout

    # the rewind case: notes1 again, through the daemon, writes nothing and moves no head
    again = mount.cli("ingest", str(tmp / "notes1.jsonl")).stdout
    assert "0 written (0 new versions), 6 unchanged" in again
    assert sorted(p.name for p in (history / "f-coffee").iterdir()) == ["v1.md", "v2.md"]
    assert subprocess.run(f"cat {history}/f-coffee/*.md", shell=True, capture_output=True, text=True,
                          check=True).stdout == coffee
    assert sorted(p.name for p in (mount.path / "facts").glob("*.md")) == tree
    assert not any("tagonly" in name or "espresso" in name for name in tree)


def test_recall_hit_says_what_it_replaces_and_links_never_name_hidden_memories(mounted):
    mount, tmp = mounted
    mount.cli("ingest", str(write_jsonl(tmp / "notes2.jsonl", [DB_3])))
    hits = sorted((mount.path / "recall" / "where is the primary database").glob("*.md"))
    assert front(hits[0])["id"] == "f-db-host-3" and front(hits[0])["replaces"] == ["f-db-host-2/v1"]
    out = json.loads(mount.cli("recall", "where is the primary database", "--format", "json").stdout)
    assert out["hits"][0]["replaces"] == ["f-db-host-2/v1"]
    context = mount.cli("recall", "where is the primary database", "--format", "context").stdout
    assert 'replaces="f-db-host-2/v1"' in context

    # f-vault was replaced by a fact this reader may not read: for this reader it stays current, as in a
    # store that never held the replacement (a `false` would tell it a hidden fact exists), and nothing
    # names the replacement
    assert lineage(mount.path / "history" / "f-vault" / "v1.md") == (True, None, [])
    assert any("--f-vault.md" in p.name for p in (mount.path / "facts").glob("*.md"))
    found = subprocess.run(["grep", "-r", "f-vault-sealed", str(mount.path)], capture_output=True, text=True)
    assert found.returncode == 1 and found.stdout == ""


SLOT = [fact(f"s-{k}", f"The build runner is runner-{k}", id=f"f-runner-{k}", slot="build-runner",
             created_at=f"2026-0{m}-01T09:00:00Z") for k, m in (("a", 1), ("b", 2), ("c", 3), ("d", 4))]
# f-runner-c's new version leaves the slot: b and d, linked through c before, are now linked to each other
C_LEAVES = fact("s-c", "The build runner c was retired", id="f-runner-c", created_at="2026-03-02T09:00:00Z")


def test_a_version_read_before_a_link_moves_away_is_not_served_stale(tmp_path: Path):
    """The kernel caches a version file's bytes; when a write changes its links, the file is invalidated
    even where the write's memory is no longer linked to it (its old partners, found by its old slot).
    A soak found history/ files showing the links of before a slot member left (2026-12-06)."""
    env = base_env(tmp_path)
    build_store(tmp_path, SLOT, env, name="slot1.jsonl")
    mount = start_mount(tmp_path, env)
    try:
        history = mount.path / "history"
        assert lineage(history / "f-runner-b" / "v1.md") == (False, "f-runner-c/v1", ["f-runner-a/v1"])
        assert lineage(history / "f-runner-d" / "v1.md") == (True, None, ["f-runner-c/v1"])
        subprocess.run(["grep", "-r", "superseded_by", str(history)], capture_output=True, check=True)
        notes = write_jsonl(tmp_path / "slot2.jsonl", [C_LEAVES])
        assert "through the mount daemon" in mount.cli("ingest", str(notes)).stdout
        assert lineage(history / "f-runner-b" / "v1.md") == (False, "f-runner-d/v1", ["f-runner-a/v1"])
        assert lineage(history / "f-runner-d" / "v1.md") == (True, None, ["f-runner-b/v1"])
        out = subprocess.run(["grep", "-rh", "^superseded_by:", str(history)], capture_output=True, text=True).stdout
        assert "f-runner-c/v1" not in out.replace("f-runner-c/v2", "")  # only c's own v1 -> v2 link names c
    finally:
        stop_mount(mount)


def test_a_chain_through_a_hidden_version_links_what_the_reader_sees(tmp_path: Path) -> None:
    """Found on a --map-uid mount: a slot's facts, the middle one another agent's private fact. The reader
    saw the oldest as replaced by nothing (`superseded_by: null`) and the newest as replacing nothing,
    which told it something hidden sat between them. Every file must equal a store that never held it."""
    chain = [fact(f"h-{k}", f"The staging database host is pg-{k}", id=f"f-host-{k}", slot="db.host",
                  created_at=f"2026-0{m}-01T09:00:00Z") for k, m in (("alpha", 1), ("bravo", 3))]
    private = fact("h-x", "The staging database host is pg-secret", id="f-host-x", slot="db.host", agent="other",
                   visibility="private", created_at="2026-02-01T09:00:00Z")
    views = {}
    for name, records in (("full", [*chain, private]), ("clean", chain)):
        base = tmp_path / name
        base.mkdir()
        env = base_env(base)
        build_store(tmp_path, records, env)  # one source path for both stores (front matter `source`)
        mount = start_mount(base, env)
        try:
            history = mount.path / "history"
            views[name] = {f"{d.name}/{v.name}": v.read_bytes() for d in history.iterdir() for v in d.iterdir()}
            assert lineage(history / "f-host-alpha" / "v1.md") == (False, "f-host-bravo/v1", [])
            assert lineage(history / "f-host-bravo" / "v1.md") == (True, None, ["f-host-alpha/v1"])
            hit = json.loads(mount.cli("recall", "staging database host", "--format", "json").stdout)["hits"][0]
            assert (hit["id"], hit["replaces"]) == ("f-host-bravo", ["f-host-alpha/v1"])
        finally:
            stop_mount(mount)
    assert views["full"].keys() == views["clean"].keys()
    for name, data in views["full"].items():  # the same but for when each store was written
        mine, theirs = ([line for line in d.decode().splitlines() if not line.startswith("ingested_at:")]
                        for d in (data, views["clean"][name]))
        assert mine == theirs, name
