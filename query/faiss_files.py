"""FAISS index files and their stamps, written atomically and verified when read.

`<store>.faiss/<schema>.<table>.index` holds one index; `<schema>.<table>.stamp.json` beside it says what
it was built from (store uuid, model, dim, epoch, count, max rid: query/vectors.py) and the index file's
size and sha256. The index is written first, then the stamp, each to a temporary file renamed into
place: a crash between the two leaves an index that does not match its stamp, which is rebuilt.

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


def save(index_path: Path, stamp_path: Path, write_index: Callable[[str], None], stamp: dict[str, Any]) -> None:
    """Write the index (through `write_index(path)`), then its stamp with the file's size and sha256."""
    index_path.parent.mkdir(parents=True, exist_ok=True)
    sums: dict[str, Any] = {}

    def write_checked(tmp: str) -> None:
        write_index(tmp)
        with open(tmp, "rb") as fh:
            sums["bytes"], sums["sha256"] = _digest(fh)

    atomic_write(index_path, write_checked)
    body = json.dumps({**stamp, **sums})
    def write_stamp(tmp: str) -> None:
        Path(tmp).write_text(body, encoding="utf-8")

    atomic_write(stamp_path, write_stamp)


def load(index_path: Path, stamp_path: Path, expected: dict[str, Any], read_index: Callable[[str], Any]) -> Loaded:
    """The index, if its stamp says it was built from `expected` and its bytes are the ones written."""
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
    if "sha256" not in saved:
        return Loaded(None, unverified=True)
    try:
        fh = open(index_path, "rb")
    except FileNotFoundError:
        return Loaded(None, "the index file is missing")
    except OSError as exc:
        return Loaded(None, f"the index file is unreadable ({exc.strerror or exc})")
    with fh:
        try:
            size, digest = _digest(fh)
        except OSError as exc:
            return Loaded(None, f"the index file is unreadable ({exc.strerror or exc})")
        if size != saved.get("bytes"):
            return Loaded(None, f"the index file is {size} bytes, its stamp says {saved.get('bytes')} (truncated?)")
        if digest != saved["sha256"]:
            return Loaded(None, "the index file's bytes do not match its checksum (corrupted)")
        # Read through the descriptor just verified: a file renamed over this path meanwhile is not read.
        own = f"/proc/self/fd/{fh.fileno()}"
        try:
            return Loaded(read_index(own if os.path.exists(own) else str(index_path)))
        except Exception as exc:  # FAISS raises RuntimeError for a file it cannot parse
            return Loaded(None, f"FAISS cannot read the index file ({str(exc).splitlines()[0] if str(exc) else exc})")
