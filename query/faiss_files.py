"""FAISS index files and their stamps, written atomically and verified when read.

`<store>.faiss/<schema>.<table>.index` holds one index and `<schema>.<table>.chunks.npy` its chunk map
(the rid of each window: query/window_index.py); `<schema>.<table>.stamp.json` beside them says what
they were built from (store uuid, model, dim, epoch, count, max rid, layout: query/vectors.py) and each
file's size and sha256. The index and the map are written first, then the stamp, each to a temporary
file renamed into place: a crash between them leaves files that do not match their stamp, which are
rebuilt.

Why a checksum: FAISS reads a flat index of the right size whatever its bytes, so a corrupted file would
load, and answer every query with wrong neighbours while recall reported the semantic arm as working.
sha256 runs at about 2 GB/s here (hardware SHA), so verifying a 100k-vector index (150 MB) costs under a
tenth of a second, once per index per process.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class Loaded:
    """A read attempt: the verified index, or None with `damage` saying why a file that should have
    matched could not be used (None when there was nothing to load, or it was built from other rows)."""

    index: Any | None
    damage: str | None = None
    unverified: bool = False  # a stamp without a checksum (an older recallfs wrote it)
    chunk_map: Any | None = None  # what read_map returned for the verified map file


def atomic_write(path: Path, write: Callable[[str], None]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _digest(fh: Any) -> tuple[int, str]:
    size = os.fstat(fh.fileno()).st_size
    return size, hashlib.file_digest(fh, "sha256").hexdigest()


def save(index_path: Path, stamp_path: Path, write_index: Callable[[str], None], stamp: dict[str, Any],
         map_path: Path, write_map: Callable[[str], None]) -> None:
    """Write the index (through `write_index(path)`) and the chunk map (`write_map(path)`), then the
    stamp with each file's size and sha256."""
    index_path.parent.mkdir(parents=True, exist_ok=True)
    sums: dict[str, Any] = {}

    def checked(write: Callable[[str], None], prefix: str) -> Callable[[str], None]:
        def write_checked(tmp: str) -> None:
            write(tmp)
            with open(tmp, "rb") as fh:
                sums[prefix + "bytes"], sums[prefix + "sha256"] = _digest(fh)
        return write_checked

    atomic_write(index_path, checked(write_index, ""))
    atomic_write(map_path, checked(write_map, "map_"))
    body = json.dumps({**stamp, **sums})
    def write_stamp(tmp: str) -> None:
        Path(tmp).write_text(body, encoding="utf-8")

    atomic_write(stamp_path, write_stamp)


def load(index_path: Path, stamp_path: Path, expected: dict[str, Any], read_index: Callable[[str], Any],
         map_path: Path, read_map: Callable[[str], Any]) -> Loaded:
    """The index and its chunk map, if the stamp says they were built from `expected` and both files'
    bytes are the ones written."""
    try:
        saved = json.loads(stamp_path.read_text(encoding="utf-8"))
        if not isinstance(saved, dict):
            raise ValueError("not an object")
    except FileNotFoundError:
        return Loaded(None, "its stamp is missing" if index_path.exists() else None)
    except (OSError, ValueError) as exc:
        return Loaded(None, f"its stamp is unreadable ({exc})")
    if {key: saved.get(key) for key in expected} != expected:
        return Loaded(None)  # stale: built from other rows, or another model or epoch
    if "sha256" not in saved or "map_sha256" not in saved:
        return Loaded(None, unverified=True)
    chunk_map, damage = _read_verified(map_path, "chunk map", saved, "map_", read_map)
    if damage is not None:
        return Loaded(None, damage)
    index, damage = _read_verified(index_path, "index", saved, "", read_index)
    if damage is not None:
        return Loaded(None, damage)
    return Loaded(index, chunk_map=chunk_map)


def save_sidecar(path: Path, stamp_path: Path, write: Callable[[str], None], stamp: dict[str, Any]) -> None:
    """A file derived from an index (its inverted lists), written then stamped with its size and sha256."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sums: dict[str, Any] = {}

    def write_checked(tmp: str) -> None:
        write(tmp)
        with open(tmp, "rb") as fh:
            sums["bytes"], sums["sha256"] = _digest(fh)

    atomic_write(path, write_checked)
    body = json.dumps({**stamp, **sums})

    def write_stamp(tmp: str) -> None:
        Path(tmp).write_text(body, encoding="utf-8")

    atomic_write(stamp_path, write_stamp)


def load_sidecar(path: Path, stamp_path: Path, expected: dict[str, Any],
                 read: Callable[[str], Any]) -> tuple[Any, dict[str, Any], str | None]:
    """(what `read` makes of the file, its stamp, None) when the stamp agrees with `expected` and the
    bytes are the ones written; (None, {}, why) for a damaged one; (None, {}, None) for none or a stale one."""
    try:
        saved = json.loads(stamp_path.read_text(encoding="utf-8"))
        if not isinstance(saved, dict):
            raise ValueError("not an object")
    except FileNotFoundError:
        return None, {}, None
    except (OSError, ValueError) as exc:
        return None, {}, f"its stamp is unreadable ({exc})"
    if {key: saved.get(key) for key in expected} != expected or "sha256" not in saved:
        return None, {}, None
    value, damage = _read_verified(path, "lists", saved, "", read)
    return (value, saved, None) if damage is None else (None, {}, damage)


def _read_verified(path: Path, what: str, saved: dict[str, Any], prefix: str,
                   read: Callable[[str], Any]) -> tuple[Any, str | None]:
    """(what `read` makes of the file, None) if its size and sha256 are the stamp's; else (None, why)."""
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        return None, f"the {what} file is missing"
    except OSError as exc:
        return None, f"the {what} file is unreadable ({exc.strerror or exc})"
    with fh:
        try:
            size, digest = _digest(fh)
        except OSError as exc:
            return None, f"the {what} file is unreadable ({exc.strerror or exc})"
        if size != saved.get(prefix + "bytes"):
            return None, f"the {what} file is {size} bytes, its stamp says {saved.get(prefix + 'bytes')} (truncated?)"
        if digest != saved[prefix + "sha256"]:
            return None, f"the {what} file's bytes do not match its checksum (corrupted)"
        # Read through the descriptor just verified: a file renamed over this path meanwhile is not read.
        own = f"/proc/self/fd/{fh.fileno()}"
        try:
            return read(own if os.path.exists(own) else str(path)), None
        except Exception as exc:  # FAISS raises RuntimeError for a file it cannot parse
            return None, f"the {what} file cannot be read ({str(exc).splitlines()[0] if str(exc) else exc})"
