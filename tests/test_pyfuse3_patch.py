"""The pyfuse3 patch (patches/pyfuse3-3.5.0-no-open.patch), on a tiny forked file system.

Real kernel, real find/cat/grep: the first walk fills the kernel's caches, the second must be served
from them, which the handler counters of the file system show. On stock pyfuse3 these fail: read
and readdir get fh=0 once open/opendir decline, and opendir cannot return a FileInfo.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from recallfs.evals.tinyfs import Mounted, Tree, mounted

pytestmark = pytest.mark.mount

TREE = Tree(dirs=12, files=4)


def _skip_reason() -> str | None:
    if not Path("/dev/fuse").exists():
        return "/dev/fuse is missing"
    if shutil.which("fusermount3") is None:
        return "fusermount3 is missing (apt-get install fuse3)"
    return None


@pytest.fixture(autouse=True)
def _needs_fuse() -> None:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)


def _run(*args: str) -> str:
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{args[0]} failed: {done.stderr[-500:]}"
    return done.stdout


def _walk(fs: Mounted) -> None:
    """find, cat and grep -r over the whole mount; each must see exactly the tree."""
    root = str(fs.path)
    files = sorted(_run("find", root, "-type", "f").split())
    expected = [f"{root}/{TREE.dir_name(d)}/{TREE.file_name(f)}"
                for d in range(TREE.dirs) for f in range(TREE.files)]
    assert files == expected
    assert _run("cat", *files).encode() == b"".join(
        TREE.content(d, f) for d in range(TREE.dirs) for f in range(TREE.files))
    hits = sorted(_run("grep", "-rl", "needle", root).split())
    assert hits == [f"{root}/{TREE.dir_name(d)}/{TREE.file_name(0)}" for d in range(TREE.dirs)]


def _two_walks(mode: str, tmp_path: Path) -> tuple[dict[str, int], dict[str, int]]:
    """The handler counts of a first (cold) and a second (warm) walk of one mount."""
    with mounted(TREE, mode, tmp_path / "mnt") as fs:
        _walk(fs)
        first = fs.counts()
        fs.reset()
        _walk(fs)
        return first, fs.counts()


def test_noopen_second_walk_sends_no_open_and_reads_by_inode(tmp_path: Path) -> None:
    first, second = _two_walks("noopen", tmp_path)
    assert first["bad_fh"] == 0, first  # read/readdir were given the inode, not fh=0
    assert first["read"] > 0 and first["readdir"] > 0, first
    assert first["open"] <= 1 and first["opendir"] <= 1, first  # declined once, never asked again
    assert first["release"] == first["releasedir"] == 0, first
    never = ("open", "opendir", "release", "releasedir", "bad_fh")
    assert {op: second[op] for op in never} == dict.fromkeys(never, 0), second
    # warm: files and listings come from the kernel's caches (usually no call at all; not asserted
    # as zero because memory pressure may drop a cached page)
    assert second["read"] < first["read"] and second["readdir"] < first["readdir"], (first, second)


def test_opendir_fileinfo_sets_cache_readdir(tmp_path: Path) -> None:
    first, second = _two_walks("cachedir", tmp_path)
    assert first["readdir"] > 0 and first["bad_fh"] == 0, first
    assert second["opendir"] > 0, second  # opendir stays in this mode...
    assert second["readdir"] < first["readdir"], (first, second)  # ...but listings come from the cache


def test_classic_mode_is_unchanged(tmp_path: Path) -> None:
    """A file system that implements open/opendir sees what it always did (handles, no inodes)."""
    with mounted(TREE, "classic", tmp_path / "mnt") as fs:
        _walk(fs)
        fs.reset()
        _walk(fs)
        second = fs.counts()
    assert second["bad_fh"] == 0, second
    assert second["opendir"] > 0 and second["readdir"] > 0 and second["open"] > 0, second


def test_a_cold_find_asks_for_each_listing_twice(tmp_path: Path) -> None:
    """The floor under a cold walk (developer-notes/speed-log.md): FUSE has no end-of-listing flag, so a directory
    whose listing fits one reply still costs two READDIRs, the second answered empty."""
    with mounted(TREE, "noopen", tmp_path / "mnt") as fs:
        _run("find", str(fs.path))
        counts = fs.counts()
    assert counts["readdir"] == 2 * (TREE.dirs + 1), counts  # the root and each directory


def test_the_cold_floor_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from recallfs.evals import bench_pyfuse3

    bench_pyfuse3.main(["--cold", "--dirs", "20", "--files", "2", "--repeat", "1"])
    out = capsys.readouterr().out
    # 2 x 21 READDIRs, the root's GETATTR and the one OPENDIR that is declined
    assert "round 1 find" in out and "tinyfs" in out and "44 handler calls" in out, out
