"""A large table's inverted lists (query/ivf_lists.py): loaded from beside its index, extended by the
windows appended since, or trained and saved when there are none that fit.

`<store>.faiss/<schema>.<table>.lists.npz` holds the centroids and each window's list;
`<schema>.<table>.lists.json` says what they were trained for (store uuid, model, dim, epoch, layout),
how many windows they assign and the rid of the last one, and the file's size and sha256
(query/faiss_files.py). Window positions only grow at the end, so lists that assign the first n windows
of the current index are still right for them. Training takes ~2 s at 65k windows on two cores (and
~30 s at 1M), which is why they are kept.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

from recallfs.query import faiss_files
from recallfs.query.ivf_lists import ANN_MIN, IvfLists
from recallfs.query.window_index import Stamp, TableIndex, faiss_module

log = logging.getLogger("recallfs.vectors")


def attach_lists(entry: TableIndex, base: Path | None) -> str | None:
    """Give the index of a table of ANN_MIN windows or more its lists (`base`: the path prefix of its
    files, None: do not persist). Call with the entry's lock held. Returns why saved lists were
    unusable when they were damaged (they are then trained again), else None."""
    if entry.ntotal < ANN_MIN:
        entry.lists = None
        return None
    lists, damage, changed = entry.lists, None, False
    if lists is None and base is not None:
        lists, damage = _load(entry, base)
    else:
        changed = True  # the entry's own lists, extended by add() since they were saved (if they were)
    if lists is not None and lists.count < entry.ntotal:
        for block in entry.vectors.blocks(lists.count):
            lists.extend(faiss_module(), block)
        changed = True
    if lists is None or lists.stale(entry.ntotal):
        lists, changed = _train(entry), True
    if lists.codes is None or lists.codes.ntotal != lists.count:
        lists.encode(faiss_module(), entry.vectors)
    entry.lists = lists
    if base is not None and changed:
        _save(entry, lists, base)
    return damage


def _train(entry: TableIndex) -> IvfLists:
    faiss = faiss_module()
    faiss.omp_set_num_threads(os.cpu_count() or 1)  # a one-off build: every core (searches use one)
    try:
        lists = IvfLists.train(faiss, entry.vectors)
    finally:
        faiss.omp_set_num_threads(1)
    log.info("trained %d inverted lists over %d windows", lists.nlist, lists.count)
    return lists


def _expected(stamp: Stamp) -> dict[str, Any]:
    return {"store_uuid": stamp.store_uuid, "model": stamp.model, "dim": stamp.dim, "epoch": stamp.epoch,
            "layout": stamp.layout}


def _paths(base: Path) -> tuple[Path, Path]:
    return base.with_name(base.name + ".lists.npz"), base.with_name(base.name + ".lists.json")


def _load(entry: TableIndex, base: Path) -> tuple[IvfLists | None, str | None]:
    path, stamp_path = _paths(base)
    arrays, saved, damage = faiss_files.load_sidecar(path, stamp_path, _expected(entry.stamp), _read)
    if damage is not None:
        log.warning("the inverted lists %s are damaged (%s); training them again", path, damage)
        return None, damage
    if arrays is None:
        return None, None
    centroids, assigned = arrays
    windows = int(saved.get("windows", -1))
    fits = (0 < windows == len(assigned) <= entry.ntotal and centroids.shape[1:] == (entry.stamp.dim,)
            and int(saved.get("last_rid", -1)) == int(entry.rids[windows - 1]))
    if not fits or int(assigned.max(initial=0)) >= len(centroids):
        return None, None  # lists of another build of this table: train new ones
    return IvfLists(centroids, assigned, int(saved.get("trained_on", windows))), None


def _save(entry: TableIndex, lists: IvfLists, base: Path) -> None:
    path, stamp_path = _paths(base)
    stamp = {**_expected(entry.stamp), "windows": lists.count, "last_rid": int(entry.rids[lists.count - 1]),
             "trained_on": lists.trained_on}
    centroids, assigned = lists.centroids, lists.assigned

    def write(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            np.savez(fh, centroids=centroids, assigned=assigned)

    try:
        faiss_files.save_sidecar(path, stamp_path, write, stamp)
    except (OSError, RuntimeError) as exc:  # a read-only directory: the lists stay in memory
        log.warning("cannot persist inverted lists under %s: %s", path.parent, exc)


def _read(path: str) -> tuple[np.ndarray, np.ndarray]:
    with open(path, "rb") as fh, np.load(fh, allow_pickle=False) as data:
        centroids = np.asarray(data["centroids"], dtype=np.float32)
        assigned = np.asarray(data["assigned"], dtype=np.int32)
    if centroids.ndim != 2 or assigned.ndim != 1:
        raise ValueError("lists of the wrong shape")
    return centroids, assigned
