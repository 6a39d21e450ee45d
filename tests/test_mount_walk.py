"""A cold walk over many history/<id>/ and sessions/<s>/ directories (issue 13, cold walks).

Each such directory lists its memories' files with their sizes, so its listing renders them: the daemon
lists siblings in batches, one content load each. A walk should wait for the first batch only; the next
ones are built while it lists the current one (mount/dir_cache.py, read-ahead). Counted, not timed: the
daemon's `listing_batches_waited` (batches a request had to wait for) after a real `find`.

A memory version is a file in several directories (facts/, facts/by-kind/<k>/, facts/by-tag/<t>/,
history/<id>/; sessions/<s>/turns/ and history/<id>/): a walk renders it once (mount/known_files.py),
counted by the daemon's `rows_rendered`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from mount_helpers import Mount, needs_fuse, serve, start_mount, stop_mount

from conftest import fact, turn, write_jsonl

pytestmark = [needs_fuse, pytest.mark.mount]
FACTS = 1500  # history/ dirs: several times the first batch (mount/dir_cache.py BATCH_WINDOW = 256)
SESSIONS = 700
RECORDS = [fact(f"cold-{i}", f"cold walk fact {i} about the osprey ledger {i % 11}", tags=[f"t{i % 5}"])
           for i in range(FACTS)] + [
    turn(f"2026-08-01-s{i:04d}", 0, "maya", f"session {i} turn about the osprey ledger") for i in range(SESSIONS)]


@pytest.fixture
def mounted(tmp_path: Path):
    yield from serve(tmp_path, RECORDS)


def test_a_cold_walk_waits_for_one_batch_of_each_kind(mounted: Mount) -> None:
    before = mounted.mount_info()["detail"]
    found = subprocess.run(["find", str(mounted.path), "-type", "f"], capture_output=True, text=True,
                           timeout=300, check=True).stdout.splitlines()
    rel = [Path(p).relative_to(mounted.path).parts for p in found]
    assert sum(1 for p in rel if p[0] == "history" and len(p) == 3) == FACTS + SESSIONS  # each listed whole
    assert sum(1 for p in rel if p[0] == "sessions" and p[2:3] == ("turns",)) == SESSIONS
    detail = mounted.mount_info()["detail"]
    waited = detail["listing_batches_waited"] - before.get("listing_batches_waited", 0)
    # history/<id>/ and sessions/<s>/: the first of each waits; every later batch was built ahead.
    assert waited <= 2, detail
    assert detail["listing_batches_ahead"] >= 2, detail
    assert detail["unexpected_errors"] == 0


def _walk(mount: Mount) -> list[str]:
    return subprocess.run(["find", str(mount.path), "-type", "f"], capture_output=True, text=True,
                          timeout=300, check=True).stdout.splitlines()


def test_a_cold_walk_renders_each_version_once(mounted: Mount) -> None:
    before = mounted.mount_info()["detail"]
    found = _walk(mounted)
    detail = mounted.mount_info()["detail"]
    # 1,500 facts in facts/, by-kind/fact/, by-tag/t<n>/ and history/; 700 turns in turns/ and history/
    assert detail["rows_rendered"] - before.get("rows_rendered", 0) == FACTS + SESSIONS, detail
    # Every name of a version reads its bytes from the content cache that its first listing filled.
    files = [p for p in found if "/recall/" not in p]
    subprocess.run(["xargs", "-0", "cat"], input="\0".join(files), capture_output=True, text=True, timeout=300,
                   check=True)
    after = mounted.mount_info()["detail"]
    assert after["content_cache_misses"] == detail["content_cache_misses"], after
    assert after["rows_rendered"] == detail["rows_rendered"]
    name = next(Path(p).name for p in files if "/facts/by-tag/t3/" in p)
    fact_id = next(line.split(": ", 1)[1] for line in (mounted.path / "facts" / name).read_text().splitlines()
                   if line.startswith("id: "))
    same = {(mounted.path / where).read_bytes() for where in (
        f"facts/{name}", f"facts/by-kind/fact/{name}", f"facts/by-tag/t3/{name}", f"history/{fact_id}/v1.md")}
    assert len(same) == 1
    assert after["unexpected_errors"] == 0


def test_a_cold_walk_leaves_the_cyclic_collector_almost_idle(mounted: Mount) -> None:
    """The daemon's objects are long-lived and freed by reference counting: with CPython's default
    thresholds a cold walk ran hundreds of young collections, and full ones that scan every inode and
    listing (query/collector.py GC_THRESHOLDS). Counted, not timed."""
    before = mounted.mount_info()["detail"]["gc_collections"]
    _walk(mounted)
    after = mounted.mount_info()["detail"]["gc_collections"]
    young, _middle, full = (a - b for a, b in zip(after, before, strict=True))
    assert young <= 20 and full == 0, (before, after)


def _memory_files(mount: Mount) -> dict[str, bytes]:
    """Every memory version's file the mount lists, by path (the generated overviews left out)."""
    return {str(Path(p).relative_to(mount.path)): Path(p).read_bytes() for p in _walk(mount)
            if Path(p).relative_to(mount.path).parts[0] in ("facts", "history", "sessions")}


def test_a_walk_after_a_write_renders_only_the_versions_the_write_changed(mounted: Mount, tmp_path: Path) -> None:
    """A version's file is its row (never changed) and its lineage: after a write, the next generation
    takes every earlier file whose lineage is the same, and renders only the new versions and those a
    new version replaced (mount/known_files.py). At 100k memories one fact written made the next
    `ls facts/` render all 30k facts again."""
    _walk(mounted)
    before = mounted.mount_info()["detail"]["rows_rendered"]
    replaced = next(p for p in (mounted.path / "facts").glob("*.md") if "cold walk fact 7 about" in p.read_text())
    fact_id = next(line.split(": ", 1)[1] for line in replaced.read_text().splitlines() if line.startswith("id: "))
    more = write_jsonl(tmp_path / "more.jsonl", [
        fact("cold-7", "cold walk fact 7 moved to the heron ledger", id=fact_id, created_at="2026-07-01T10:00:00Z"),
        fact("cold-new", "a new fact about the heron ledger", created_at="2026-07-01T10:00:00Z"),
        turn("2026-08-01-s0003", 1, "atlas", "a reply about the heron ledger")])
    assert "through the mount daemon" in mounted.cli("ingest", str(more)).stdout
    after_write = _memory_files(mounted)
    # the three new versions, and the version the first of them replaced (its front matter changed); the
    # session's listing is built again with its other turn's file as it was
    assert mounted.mount_info()["detail"]["rows_rendered"] - before == 4
    assert (mounted.path / "sessions" / "2026-08-01-s0003" / "turns").exists()
    assert f"history/{fact_id}/v2.md" in after_write
    assert b"superseded_by: " + f"{fact_id}/v2".encode() in after_write[f"history/{fact_id}/v1.md"]
    # byte for byte what a new daemon renders from scratch
    stop_mount(mounted)
    fresh = start_mount(tmp_path, mounted.env, name="mnt2")
    try:
        assert _memory_files(fresh) == after_write
    finally:
        stop_mount(fresh)
