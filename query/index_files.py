"""A table's vector index on disk: `<store>.faiss/<schema>.<table>.vectors.npy` (the window vectors,
query/flat_vectors.py), its chunk map and its stamp, written and verified through query/faiss_files.py
(checksums, atomic renames). A large table's vectors file is left on disk and read as rows are asked for.

Before 2026-11-27 the vectors were a FAISS flat index file, `<schema>.<table>.index`, read whole into
memory whatever its size. Its stamp lacks FILE_FORMAT, so it is stale: the index is rebuilt once from
DuckDB's vectors (no embedding), and the old file is removed when the new one is saved.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np

from recallfs.query import faiss_files, flat_vectors
from recallfs.query.flat_vectors import FlatVectors
from recallfs.query.store import Store
from recallfs.query.window_index import TableIndex
from recallfs.query.window_map import Stamp, is_window_map

log = logging.getLogger("recallfs.vectors")

FILE_FORMAT = "npy-float16"  # in the stamp: files of the formats before it (FAISS, npy-float32) are stale


def index_dir(store: Store) -> Path:
    return Path(str(store.path) + ".faiss")


def index_paths(store: Store, schema: str, table: str) -> tuple[Path, Path, Path]:
    """The index, its stamp and its chunk map."""
    base = index_dir(store)
    return (base / f"{schema}.{table}.vectors.npy", base / f"{schema}.{table}.stamp.json",
            base / f"{schema}.{table}.chunks.npy")


def _legacy_path(store: Store, schema: str, table: str) -> Path:
    return index_dir(store) / f"{schema}.{table}.index"


def load_index(store: Store, schema: str, table: str, stamp: Stamp) -> tuple[TableIndex | None, str | None]:
    """(the persisted index, if it is the one for `stamp` or one behind it (the same rows but fewer: an
    ingest by another process since), and intact; else why it is damaged, if it is). The caller extends
    an index that is behind."""
    index_path, stamp_path, map_path = index_paths(store, schema, table)
    stamp = _behind(stamp_path, stamp) or stamp
    loaded = faiss_files.load(index_path, stamp_path, _stamp_dict(stamp), FlatVectors.open,
                              map_path, _read_map)
    if loaded.unverified:
        log.info("rebuilding FAISS index %s: written without a checksum (an older recallfs)", index_path)
    if loaded.index is None:
        return None, loaded.damage
    index: FlatVectors = loaded.index
    if index.ntotal != stamp.count or index.dim != stamp.dim:
        return None, f"the index holds {index.ntotal} {index.dim}-d vectors, its stamp says " \
                     f"{stamp.count} {stamp.dim}-d"
    if not is_window_map(loaded.chunk_map, stamp.count):
        return None, f"the chunk map does not fit the index's {stamp.count} vectors"
    return TableIndex(index, loaded.chunk_map, stamp), None


def _behind(stamp_path: Path, current: Stamp) -> Stamp | None:
    """The saved stamp, when it names an earlier state of the same vectors: same store, model and epoch,
    fewer windows and a lower highest rid (whether only rows above it were added, the caller checks)."""
    try:
        saved = json.loads(stamp_path.read_text(encoding="utf-8"))
        older = Stamp(**{name: saved[name] for name in Stamp.__dataclass_fields__})
    except (OSError, ValueError, KeyError, TypeError):
        return None
    same = (older.store_uuid, older.model, older.dim, older.epoch, older.layout) == \
        (current.store_uuid, current.model, current.dim, current.epoch, current.layout)
    return older if same and older.count < current.count and older.max_rid < current.max_rid else None


def save_index(store: Store, schema: str, table: str, entry: TableIndex) -> None:
    """Write the index, then its stamp with the file's checksum (query/faiss_files.py)."""
    index_path, stamp_path, map_path = index_paths(store, schema, table)
    written: dict[str, Any] = {}  # the stamp, filled while the index is written (save() reads it after)
    maps: list[np.ndarray] = []

    def write_index(tmp: str) -> None:
        with entry.lock, open(tmp, "wb") as fh:  # the stamp and chunk map that go with exactly the rows written
            entry.vectors.write(fh)
            written.update(_stamp_dict(entry.stamp))
            maps.append(entry.rids)  # add() replaces the array, never changes it

    def write_map(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            np.save(fh, maps[0], allow_pickle=False)

    try:
        faiss_files.save(index_path, stamp_path, write_index, written, map_path, write_map)
        _legacy_path(store, schema, table).unlink(missing_ok=True)
    except (OSError, RuntimeError) as exc:  # a read-only directory: the index stays in memory
        log.warning("cannot persist FAISS index under %s: %s", index_path.parent, exc)
        return
    _map_saved(entry, index_path, len(maps[0]))


def _map_saved(entry: TableIndex, path: Path, count: int) -> None:
    """Serve the windows just written from the file, so that the in-memory tail of a large table does not
    keep growing. A table small enough to be held in memory keeps what it holds (reading the file back
    would only copy the same vectors again after every ingest)."""
    if count * entry.stamp.dim * 4 <= flat_vectors.RESIDENT_MAX:
        return
    try:
        saved = FlatVectors.open(str(path))
    except (OSError, ValueError) as exc:  # replaced or removed meanwhile: keep what is held
        log.info("vectors %s not reopened after saving: %s", path, exc)
        return
    with entry.lock:
        # the file is still the one written (not another process's newer save of other rows)
        probe = np.array([0, count // 2, count - 1], dtype=np.int64) if count else np.zeros(0, dtype=np.int64)
        if saved.ntotal == count == entry.ntotal and np.array_equal(saved.gather(probe), entry.vectors.gather(probe)):
            entry.vectors = saved


def _read_map(path: str) -> np.ndarray:
    with open(path, "rb") as fh:  # a /proc/self/fd path has no .npy suffix for np.load to add
        out: np.ndarray = np.load(fh, allow_pickle=False)
    return out


def _stamp_dict(stamp: Stamp) -> dict[str, Any]:
    return {**{name: getattr(stamp, name) for name in Stamp.__dataclass_fields__}, "file": FILE_FORMAT}
