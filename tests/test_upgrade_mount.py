"""An older store mounted as it is: a store whose vectors are float32 (FLOAT[d], before migration v4) is
converted when the mount opens it, its saved indexes rebuilt from the converted values, and a recall
through the mount answers by meaning as before. Real ingest, real mount, real `ls` and `cat`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from mount_helpers import base_env, fuse_problem, is_mounted, run_cli, start_mount, stop_mount, wait_until
from old_stores import float_vectors
from semantic_data import PARAPHRASES, records

from recallfs.query.store import Store
from recallfs.scope.principal import Principal

from conftest import write_jsonl

pytestmark = pytest.mark.skipif(fuse_problem() is not None, reason=str(fuse_problem()))

ME = Principal("acme", "proj", "tester")


def _embedding_type(path) -> str:
    with Store(path, read_only=True) as store:
        schema = store.schema_for(ME)
        return str(store.cursor().execute(
            "SELECT data_type FROM duckdb_columns() WHERE schema_name = ? AND table_name = 'vectors' "
            "AND column_name = 'embedding'", [schema]).fetchone()[0])


def test_a_float32_store_mounts_converts_and_recalls_by_meaning(tmp_path):
    env = base_env(tmp_path, RECALLFS_SEMANTIC="true", RECALLFS_RECALL_TTL_S="1")
    run_cli("ingest", str(write_jsonl(tmp_path / "m.jsonl", records())), env=env, check=True, timeout=600)
    path = tmp_path / "store.duckdb"
    with Store(path) as store:
        float_vectors(store, store.schema_for(ME), chunked=True)  # as the last release wrote it
    assert _embedding_type(path) == "FLOAT[384]"

    mount = start_mount(tmp_path, env)
    try:
        assert wait_until(lambda: not mount.mount_info()["detail"]["degraded"], timeout=180)
        for question, source_id, _content in PARAPHRASES:  # found by meaning alone, not by a shared word
            found = subprocess.run(["grep", "-rl", f"source_id: {source_id}", str(mount.path / "recall" / question)],
                                   capture_output=True, text=True, timeout=60)
            assert found.returncode == 0, (question, found.stderr)
            hit = subprocess.run(["cat", found.stdout.splitlines()[0]], capture_output=True, text=True, timeout=60,
                                 check=True).stdout
            assert "arms: [semantic]" in hit, (question, hit[:300])
    finally:
        stop_mount(mount)
    assert not is_mounted(mount.path)
    assert _embedding_type(path) == "SMALLINT[384]"  # converted by the mount's read-write open
    saved = sorted(Path(f"{path}.faiss").glob("*.vectors.npy"))
    assert saved and all(np.load(p).dtype == np.float16 for p in saved)  # rebuilt from the converted vectors
