"""Fuzz a real mount (semantic arm on, so the tokenizer sees every name) through the kernel:
recall names of any bytes and options, and every operation on paths inside and outside recall/.

Invariants (tests/fuzz_support.py): the daemon stays up, no EIO ever, every errno is one the README's
errno table documents, fstat size equals the bytes read, refused writes change nothing, and the daemon
counts no unexpected error. `pytest --long` runs over 100,000 in all; CI runs about 2,000.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fuzz_support import OPERATIONS, TOP, Probe, component, fuzz_examples, recall_names
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mount_helpers import (
    Mount,
    module_mount,
    needs_fuse,
    wait_until,
)

pytestmark = [needs_fuse, pytest.mark.mount, pytest.mark.slow]



def fuzz(default: int, long: int) -> settings:
    return settings(max_examples=fuzz_examples(default, long), deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory):
    for mount in module_mount(tmp_path_factory, "fuzz", RECALLFS_SEMANTIC="true", RECALLFS_RECALL_TTL_S="1"):
        # the model loads in the background: fuzz the hybrid pipeline, tokenizer included
        assert wait_until(lambda mount=mount: not mount.mount_info()["detail"]["degraded"], timeout=180)
        yield mount


def _tree(mount: Path) -> list[bytes]:
    """Every path outside recall/, to aim operations at real names too."""
    out = []
    for root, dirs, files in os.walk(os.fsencode(mount)):
        dirs[:] = [d for d in dirs if d != b"recall"]
        out.extend(os.path.join(root, n) for n in dirs + files)
    return out


def _report(probe: Probe, what: str) -> None:
    # `pytest -s` shows the figure the long run quotes
    print(f"\nfuzz {what}: {probe.examples} examples, {probe.files_read} files read, errnos {dict(probe.errnos)}",
          file=sys.stderr)


def _generation(mount: Mount) -> int:
    return int(mount.mount_info()["detail"]["generation"])


def test_recall_names(fuzzed: Mount) -> None:
    probe = Probe(fuzzed.path, fuzzed.mount_info()["pid"])
    generation = _generation(fuzzed)

    @fuzz(900, 50_000)
    @given(recall_names)
    def one(name: bytes) -> None:
        probe.recall(name)

    one()
    # the same kind of names through real tools: ls and rg over the recall directories
    for name in (b"caf\xe9", b"ci since:99999y", b"maya k:5", b"\xff\xfe deploy", "日本語 🙂".encode()):
        target = os.fsencode(fuzzed.path) + b"/recall/" + name + b"/"
        proc = subprocess.run([b"ls", target], capture_output=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert b"results.json" in proc.stdout
    rg = subprocess.run(["rg", "-c", "--no-messages", "query", str(fuzzed.path / "recall") + "/"],
                        capture_output=True, text=True, timeout=120)
    assert rg.returncode in (0, 1) and "Input/output error" not in rg.stderr, rg.stderr
    _report(probe, "recall names")
    detail = fuzzed.mount_info()["detail"]
    assert detail["unexpected_errors"] == 0, detail["last_unexpected_error"]
    assert "EIO" not in detail["errnos"]
    assert _generation(fuzzed) == generation  # a lookup writes nothing


def test_paths_and_operations(fuzzed: Mount) -> None:
    probe = Probe(fuzzed.path, fuzzed.mount_info()["pid"])
    tree = _tree(fuzzed.path)
    base = os.fsencode(fuzzed.path)
    before = {p: os.lstat(p) for p in tree}
    generation = _generation(fuzzed)
    path = st.one_of(
        st.sampled_from(tree),
        st.builds(lambda top, tail: b"/".join([base, *([os.fsencode(top)] if top else []), *tail]),
                  st.sampled_from(TOP), st.lists(component, min_size=0, max_size=3)),
        st.builds(lambda known, tail: b"/".join([known, *tail]), st.sampled_from(tree),
                  st.lists(component, min_size=1, max_size=2)),
    )

    @fuzz(900, 50_000)
    @given(path, st.sampled_from(OPERATIONS))
    def one(target: bytes, op: str) -> None:
        probe.path_op(target, op)

    one()
    _report(probe, "paths")
    after = {p: os.lstat(p) for p in tree}
    assert {p: (s.st_size, s.st_mode) for p, s in before.items()} == \
        {p: (s.st_size, s.st_mode) for p, s in after.items()}
    detail = fuzzed.mount_info()["detail"]
    assert detail["unexpected_errors"] == 0, detail["last_unexpected_error"]
    assert "EIO" not in detail["errnos"]
    assert _generation(fuzzed) == generation  # every refused write left the store as it was
    index = (fuzzed.path / "index.md").read_text()
    assert "health: ok" in index, index[:600]
    assert json.loads(fuzzed.cli("status", "--json").stdout)["mounts"][0]["health"] == "ok"
