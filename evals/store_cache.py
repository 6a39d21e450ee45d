"""The eval store: built once from a data set, then reused while neither the data nor the code that
decides what a store holds has changed.

The default path is `$XDG_CACHE_HOME/recallfs/eval/<dataset>-<key>.duckdb` (~/.cache when unset),
where the key hashes the data file's bytes, the recallfs version, the model and semantic settings and the
source of the modules that decide what a store holds (STORE_CODE less READ_PATH_MODULES).
Any change to those gives a new key, hence a fresh build; a fresh build prunes the cache to the
KEEP newest stores of that data set. A store is built under a temporary name and
renamed into place when complete, so an interrupted build never leaves a half store that a later run
would trust. A build killed outright (SIGTERM runs no `finally`) leaves its temporary file behind; the
next prune deletes those of builds whose process is gone.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from recallfs.query import settings
from recallfs.query.ingest_file import ingest_records
from recallfs.query.records import MemoryRecord
from recallfs.query.settings import cache_home
from recallfs.query.store import Store

REPO = Path(__file__).resolve().parents[1]
# What a store holds is decided by query/ (importers, ingest, migrations, FTS build, embedding) and the
# partition naming in scope/. Modules that only read a store are left out: editing them (as ranking
# work does all day) must not force a rebuild, which costs minutes once embeddings are included.
STORE_CODE = ("query/**/*.py", "scope/partition.py")
READ_PATH_MODULES = frozenset({
    "query/recall.py", "query/formats.py", "query/query_syntax.py", "query/gate.py", "query/semantic.py",
    "query/shaping.py", "query/settings.py", "query/bm25_memory.py", "query/derived.py", "query/rows.py",
    "query/arms.py", "query/staleness.py", "query/query_encoder.py", "query/semantic_query.py",
    "query/int8_scan.py", "query/gpu_search.py", "query/loading.py", "query/hot_rows.py", "query/onnx_query.py",
    "query/entity_card.py", "query/query_worker.py", "query/results.py", "query/query_embedding.py",
    "query/recall_request.py", "query/recall_scope.py", "query/context.py", "query/fallback.py", "query/replies.py",
    "query/turn_order.py",
})
KEEP = 3  # cached stores kept per data set (each LoCoMo store with vectors is ~80 MB)
# build_store's temporary name, and its WAL: `.<store>.building-<pid>[.wal]`.
_BUILDING = re.compile(r"^\.(?P<store>.+)\.building-(?P<pid>\d+)(?:\.wal)?$")


def cache_dir() -> Path:
    return cache_home() / "eval"


def code_fingerprint() -> str:
    h = hashlib.sha256()
    try:
        h.update(metadata.version("recallfs").encode())
    except metadata.PackageNotFoundError:  # running from a bare checkout
        h.update(b"unversioned")
    paths = sorted({p for pattern in STORE_CODE for p in REPO.glob(pattern)})
    for path in paths:
        rel = path.relative_to(REPO).as_posix()
        if rel in READ_PATH_MODULES:
            continue
        h.update(rel.encode())
        h.update(path.read_bytes())
    cfg = settings.resolve()  # which vectors ingest writes, if any
    h.update(f"model={cfg.model} semantic={cfg.semantic}".encode())
    return h.hexdigest()


def store_key(data_files: list[Path]) -> str:
    h = hashlib.sha256(code_fingerprint().encode())
    for path in data_files:
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def default_store_path(dataset: str, data_files: list[Path]) -> Path:
    return cache_dir() / f"{dataset}-{store_key(data_files)}.duckdb"


def build_store(path: Path, load: Callable[[], list[MemoryRecord]]) -> None:
    """Ingest `load()` into a new store at `path`, through the same path as `recallfs ingest`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.building-{os.getpid()}")
    for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
        leftover.unlink(missing_ok=True)
    try:
        with Store(tmp, create=True) as store:
            ingest_records(store, load(), embedder=_embedder())
            store.cursor().execute("CHECKPOINT")  # fold the WAL in: the file alone is the store
        os.replace(tmp, path)
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
            leftover.unlink(missing_ok=True)


def _embedder() -> Any:
    """The embedder the settings ask for, as `recallfs ingest` would use (None: the semantic arm is off)."""
    from recallfs.query.shared_embedders import embedder_from_settings

    cfg = settings.resolve()
    return embedder_from_settings(cfg) if cfg.semantic else None


def ensure_store(path: Path, load: Callable[[], list[MemoryRecord]], *, refresh: bool) -> str:
    """Make `path` hold the data set. Returns what was done: built, reused or refreshed.

    `refresh` (a store the user named) re-ingests into it, which the ingest's idempotence makes
    cheap and which repairs a store missing some of the data; the cached default is trusted as is."""
    if not path.exists():
        build_store(path, load)
        return "built"
    if not refresh:
        return "reused"
    with Store(path, create=False) as store:
        report = ingest_records(store, load(), embedder=_embedder())
    return "refreshed" if report.written else "reused"


def prune_cache(dataset: str, keep: int = KEEP, folder: Path | None = None) -> list[Path]:
    """Delete all but the `keep` most recently modified cached stores of `dataset` (with their WAL
    and FAISS folder). Returns the stores deleted."""
    folder = folder or cache_dir()
    stores = sorted(folder.glob(f"{dataset}-*.duckdb"), key=lambda p: p.stat().st_mtime, reverse=True)
    gone = stores[keep:]
    for path in gone:
        path.unlink(missing_ok=True)
        Path(str(path) + ".wal").unlink(missing_ok=True)
        shutil.rmtree(str(path) + ".faiss", ignore_errors=True)
    for leftover in abandoned_builds(folder):
        leftover.unlink(missing_ok=True)
    return gone


def abandoned_builds(folder: Path) -> list[Path]:
    """The temporary files of builds whose process is gone (of any data set): a killed build's ~70 MB
    would otherwise stay for good. A live process with that number keeps its files (it may be the build)."""
    out = []
    for path in folder.glob(".*.building-*"):
        match = _BUILDING.match(path.name)
        if match is not None and not _alive(int(match["pid"])):
            out.append(path)
    return sorted(out)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True
