"""Shared fixtures: real DuckDB stores in tmp dirs and the real `recallfs` console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from lake_helpers import lake, pg_cluster  # noqa: F401 (fixtures: one PostgreSQL for the whole session)

REPO = Path(__file__).resolve().parents[1]
LOCOMO = REPO.parent / "shared" / "data" / "locomo10.json"
RECALLFS = Path(sys.executable).parent / "recallfs"

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--long", action="store_true",
                     help="the long fuzz and load runs: over 100,000 fuzz examples in all, a 10-minute load test")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--long"):
        os.environ.setdefault("RECALLFS_FUZZ_LONG", "1")
        os.environ.setdefault("RECALLFS_LOAD_S", "600")

os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def run_cli(*args: str, env: dict[str, str] | None = None, check: bool = False,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run the installed console script, as a user would."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run([str(RECALLFS), *args], capture_output=True, text=True, env=full_env,
                          timeout=timeout, stdin=subprocess.DEVNULL)
    if check and proc.returncode != 0:
        raise AssertionError(f"recallfs {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def write_jsonl(path: Path, records: Iterable[dict | str]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def fact(source_id: str, content: str, **extra: object) -> dict:
    return {"type": "fact", "source_id": source_id, "content": content, "created_at": "2026-06-01T10:00:00Z",
            **extra}


def turn(session: str, seq: int, speaker: str, content: str, **extra: object) -> dict:
    return {"type": "turn", "source_id": f"{session}#{seq}", "session": session, "seq": seq,
            "speaker": speaker, "content": content, "created_at": f"2026-06-01T10:{seq % 60:02d}:00Z", **extra}


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store.duckdb"


@pytest.fixture
def cli(store_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """`recallfs` bound to a fresh store, lexical-only unless a test passes RECALLFS_SEMANTIC."""

    def _run(*args: str, env: dict[str, str] | None = None, check: bool = False) -> subprocess.CompletedProcess[str]:
        # Semantic off: these tests are about ingest and the lexical contract, and loading torch in every
        # subprocess would cost seconds each. The semantic arm has its own CLI tests (test_semantic_cli.py).
        base = {"RECALLFS_STORE": str(store_path), "RECALLFS_WORKSPACE": "acme/proj", "RECALLFS_AGENT": "tester",
                "RECALLFS_SEMANTIC": "false"}
        return run_cli(*args, env={**base, **(env or {})}, check=check)

    return _run


def snapshot(path: Path) -> list[tuple]:
    """Every row of every table of every partition, to prove a refused batch changed nothing."""
    from recallfs.query.store import Store

    if not path.exists():
        return []
    with Store(path, read_only=True) as store:
        cur = store.cursor()
        rows: list[tuple] = []
        for org, ws in store.workspaces():
            schema = store.partition(org, ws)
            for table in ("facts", "summaries", "turns", "heads"):
                rows += [(table, *r) for r in cur.execute(f"SELECT * FROM {schema}.{table} ORDER BY rid").fetchall()]
        rows += cur.execute("SELECT * FROM main.partitions ORDER BY schema_name").fetchall()
        return rows


def needs_locomo() -> pytest.MarkDecorator:
    return pytest.mark.skipif(not LOCOMO.exists(), reason=f"LoCoMo data not present at {LOCOMO} (eval-only data)")


@pytest.fixture(scope="session")
def locomo_store() -> Path:
    """A LoCoMo store with vectors, built once and cached across runs (the eval harness's cache):
    embedding its 8,695 rows takes a minute or more on two cores. Read-only users may open it as is;
    writers must copy it."""
    if not LOCOMO.exists():
        pytest.skip(f"LoCoMo data not present at {LOCOMO} (eval-only data)")
    from recallfs.evals.store_cache import default_store_path, ensure_store
    from recallfs.query.importers import read_locomo

    path = default_store_path("locomo", [LOCOMO])
    ensure_store(path, lambda: read_locomo(LOCOMO, org="locomo", workspace="unused", agent="default"),
                 refresh=False)
    return path


@pytest.fixture
def disk(tmp_path: Path):
    """A real 48 MB tmpfs, for tests that fill a disk."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(mnt)], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs to fill (needs root and mount rights): {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        if subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)  # busy: detach, never hang


@pytest.fixture(scope="session")
def minilm() -> Any:
    """The packaged MiniLM, loaded once for the whole run."""
    from recallfs.query.shared_embedders import shared_embedder

    emb = shared_embedder()
    assert emb.wait_ready(), emb.problem
    return emb
