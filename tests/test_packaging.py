"""The wheel installs under the `recallfs` namespace only, and its console script runs in a fresh venv."""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from pathlib import Path

from conftest import REPO


def test_wheel_installs_into_fresh_venv(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(dist), str(REPO)], check=True, capture_output=True, timeout=300)
    (wheel,) = dist.glob("recallfs-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/", 1)[0] for n in names if not n.startswith("recallfs-")}
    assert top == {"recallfs"}, f"wheel installs top-level packages {top - {'recallfs'}}"
    for layer in ("mount", "query", "ranking", "scope", "evals"):
        assert f"recallfs/{layer}/__init__.py" in names
    assert "recallfs/__init__.py" not in names  # a namespace: nothing owns the bare name
    assert "recallfs/query/data/demo_memory.jsonl" in names

    env_dir = tmp_path / "fresh"
    venv.create(env_dir, with_pip=True)
    pip = env_dir / "bin" / "pip"
    # --no-deps: the point is the package layout and entry point, not re-downloading torch.
    subprocess.run([str(pip), "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True,
                   capture_output=True, timeout=300)
    proc = subprocess.run([str(env_dir / "bin" / "recallfs"), "--help"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    for command in ("init", "ingest", "recall", "mount", "umount", "status", "eval"):
        assert command in proc.stdout
    site = next((env_dir / "lib").glob("python*/site-packages"))
    for bare in ("mount", "query", "ranking", "scope", "evals"):
        assert not (site / bare).exists()
    assert Path(site / "recallfs" / "query" / "recall.py").exists()
