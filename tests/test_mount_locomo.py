"""The issue's must-show checks on a LoCoMo store mounted with --workspace locomo/conv-26."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from mount_helpers import Mount, expected_tree, needs_fuse, start_mount, stop_mount

from conftest import LOCOMO, needs_locomo, run_cli

yaml = pytest.importorskip("yaml")
pytestmark = [needs_fuse, needs_locomo(), pytest.mark.mount, pytest.mark.locomo]

QUESTION = "When did Caroline go to the LGBTQ support group?"


@pytest.fixture(scope="module")
def locomo(tmp_path_factory: pytest.TempPathFactory):
    from recallfs.query.store import Store

    tmp = tmp_path_factory.mktemp("locomo")
    env = {"RECALLFS_STORE": str(tmp / "store.duckdb"), "RECALLFS_WORKSPACE": "locomo/conv-26",
           "RECALLFS_AGENT": "default", "RECALLFS_SEMANTIC": "false", "XDG_RUNTIME_DIR": str(tmp / "run")}
    run_cli("ingest", "--format", "locomo", str(LOCOMO), env={k: v for k, v in env.items()
                                                              if k != "RECALLFS_WORKSPACE"}, check=True)
    store = Path(env["RECALLFS_STORE"])
    expected = expected_tree(store, "locomo", "conv-26", "default")
    with Store(store, read_only=True) as s:  # the store is the daemon's once mounted: ask DuckDB first
        schema = s.partition("locomo", "conv-26")
        sessions = {str(r[0]) for r in s.cursor().execute(
            f"SELECT DISTINCT m.session FROM {schema}.turns m JOIN {schema}.heads h ON h.rid = m.rid "
            "WHERE m.content LIKE '%support group%'").fetchall()}
    mount = start_mount(tmp, env)
    yield mount, expected, sessions
    stop_mount(mount)


def front_matter(path: Path) -> dict:
    return yaml.safe_load(path.read_text().split("---\n", 2)[1])


def test_find_counts_the_workspace(locomo: tuple[Mount, dict, set]) -> None:
    mount, expected, _ = locomo
    out = subprocess.run(["bash", "-c", f"find {mount.path} -type f | wc -l"], capture_output=True, text=True)
    assert int(out.stdout) == expected["files"] + 1  # + recall/README.md (index.md counts files outside recall/)
    assert front_matter(mount.path / "index.md")["files"] == expected["files"]


def test_recall_lists_d1_3_in_the_top_5(locomo: tuple[Mount, dict, set]) -> None:
    mount, _, _ = locomo
    q = mount.path / "recall" / QUESTION
    hits = sorted(n for n in os.listdir(f"{q}/") if n.endswith(".md"))[:5]
    provenance = [(front_matter(q / h)["source_id"], front_matter(q / h).get("refs") or []) for h in hits]
    assert any(source == "D1:3" or "D1:3" in refs for source, refs in provenance), provenance
    rg = subprocess.run(["bash", "-c", f'rg -l "support group" {mount.path}/recall/*/'], capture_output=True,
                        text=True)
    assert rg.returncode == 0
    found = rg.stdout.split("\n")
    d13 = [h for h in hits if "D1:3" in (q / h).read_text()]
    assert any(path.endswith(d13[0]) for path in found)


def test_grep_sessions_matches_duckdb(locomo: tuple[Mount, dict, set]) -> None:
    mount, _, sessions = locomo
    out = subprocess.run(["grep", "-rl", "support group", str(mount.path / "sessions")], capture_output=True,
                         text=True)
    listed = {Path(p).relative_to(mount.path / "sessions").parts[0] for p in out.stdout.split()}
    assert listed == sessions


def test_every_size_is_exact(locomo: tuple[Mount, dict, set]) -> None:
    mount, _, _ = locomo
    checked = 0
    for dirpath, _dirs, files in os.walk(mount.path):
        for name in files:
            path = Path(dirpath) / name
            assert path.stat().st_size == len(path.read_bytes()), path
            checked += 1
    q = mount.path / "recall" / QUESTION
    for name in os.listdir(f"{q}/"):
        assert (q / name).stat().st_size == len((q / name).read_bytes())
        checked += 1
    assert checked > 1000
