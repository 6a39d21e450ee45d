"""recall/ as an agent meets it (issue 12, item 10), through a real mount and real ls, grep, rg and mkdir:
what `grep -r`/`rg` over recall/ say, and what `mkdir recall/foo` answers and why."""

from __future__ import annotations

import errno
import os
import subprocess

import pytest
from mount_helpers import Mount, module_mount, needs_fuse

from conftest import RECALLFS

pytestmark = [needs_fuse, pytest.mark.mount]


@pytest.fixture(scope="module")
def mounted(tmp_path_factory: pytest.TempPathFactory):
    yield from module_mount(tmp_path_factory, "recalldir")


def sh(*args: str, cwd: object = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=120, cwd=cwd)


def test_recall_lists_a_readme_that_says_how_to_recall(mounted: Mount) -> None:
    recall = mounted.path / "recall"
    assert sh("ls", str(recall)).stdout.split("\n")[0] == "README.md"
    text = (recall / "README.md").read_text()
    assert 'ls "recall/' in text and "grep -r" in text and "rg" in text


@pytest.mark.parametrize("tool", [["grep", "-ri"], ["rg", "-i"]])
def test_grep_and_rg_over_recall_say_why_they_find_no_memory(mounted: Mount, tool: list[str]) -> None:
    """What an agent types: a search of recall/ itself. Before, it searched no file at all. Now it
    searches recall/README.md, whose lines about searching name the tool and the way that works (a
    pattern the file does not hold still prints nothing: the file cannot know the pattern)."""
    sh("ls", str(mounted.path / "recall" / "flaky windows test") + "/")  # a recent query: a link in recall/
    proc = sh(*tool, tool[0], "recall/", cwd=mounted.path)
    assert proc.returncode == 0, proc.stderr
    assert "README.md" in proc.stdout and "recall/*/" in proc.stdout
    # and the ways it points to do find memory
    assert "separator" in sh("grep", "-ri", "separator", "facts/", "sessions/", cwd=mounted.path).stdout
    assert "separator" in sh("bash", "-c", "grep -ri separator recall/*/", cwd=mounted.path).stdout
    assert "separator" in sh("rg", "-L", "-i", "separator", "recall/", cwd=mounted.path).stdout


def test_the_readme_is_the_same_for_everyone_and_names_no_query(mounted: Mount) -> None:
    sh("ls", str(mounted.path / "recall" / "vault password rotates") + "/")
    text = (mounted.path / "recall" / "README.md").read_text()
    assert "vault" not in text and "flaky" not in text


def test_mkdir_in_recall_is_file_exists_because_every_name_there_exists(mounted: Mount) -> None:
    """The kernel checks that a name exists before it checks that the mount is read-only (Linux
    fs/namei.c, filename_create(): the lookup's -EEXIST wins over mnt_want_write()'s -EROFS), and under
    recall/ every name exists: it is a query. So `mkdir recall/foo` says "File exists", `mkdir -p` of one
    succeeds (it is a directory already), and a name that does not exist says "Read-only file system"."""
    with pytest.raises(OSError) as exc:
        os.mkdir(mounted.path / "recall" / "deploy steps")
    assert exc.value.errno == errno.EEXIST
    assert sh("mkdir", "-p", str(mounted.path / "recall" / "deploy steps")).returncode == 0
    assert (mounted.path / "recall" / "deploy steps" / "results.json").exists()
    for absent in (mounted.path / "recall" / ".not-a-query", mounted.path / "facts" / "newdir",
                   mounted.path / "recall" / "README.md" / "x"):
        with pytest.raises(OSError) as exc:
            os.mkdir(absent)
        assert exc.value.errno in (errno.EROFS, errno.ENOTDIR), absent
    with pytest.raises(OSError) as exc:
        os.mkdir(mounted.path / "recall" / ".not-a-query")
    assert exc.value.errno == errno.EROFS


def test_the_recallfs_command_and_python_run_from_inside_recall(mounted: Mount) -> None:
    """Under recall/ every name is a directory (a query), so a relative path that a program stats there
    exists. setuptools' default editable install finds the `recallfs` namespace through such a path (a
    placeholder on sys.path): `recallfs` run from recall/ said "No module named 'recallfs'" and left the
    placeholder in recall/ as a query. `make setup` installs a link tree instead (the Makefile says why)."""
    recall = mounted.path / "recall"
    before = set(os.listdir(recall))
    for args in ([str(RECALLFS), "status", "--store", str(mounted.store)],
                 [str(RECALLFS), "recall", "--arm", "lexical", "separator", "-k", "1"],
                 [str(RECALLFS.parent / "python"), "-c", "import json, recallfs.mount.cli"]):
        proc = subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=recall, env=mounted.env)
        assert proc.returncode == 0, f"{args[-1]}: {proc.stderr}"
    assert set(os.listdir(recall)) == before  # nothing a program probed became a recent query
