"""query/flat_vectors.FlatVectors: a saved `.npy` file (on disk, or read into memory when small) plus an
in-memory tail, read by position, by block, as a training sample, and scanned exactly; compared with the
same vectors in one numpy array. The vectors are float16 values, as the store holds them."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import numpy as np
import pytest

from recallfs.query import flat_vectors
from recallfs.query.flat_vectors import FlatVectors
from recallfs.query.half_vectors import rounded

DIM = 12


def _saved(tmp_path: Path, x: np.ndarray) -> Path:
    path = tmp_path / "t.vectors.npy"
    with open(path, "wb") as fh:
        FlatVectors.in_memory(x).write(fh)
    return path


@pytest.fixture(autouse=True, params=["float32", "float16"])
def small_blocks(monkeypatch, request):
    monkeypatch.setattr(flat_vectors, "BLOCK", 64)  # many blocks, and blocks that straddle file and tail
    # every test again with a saved file that is held in memory as float16 (a large table's)
    monkeypatch.setattr(flat_vectors, "HALF_RESIDENT_MIN", 1 if request.param == "float16" else 1 << 40)


def test_a_large_table_is_held_as_float16_and_read_as_float32(tmp_path, monkeypatch):
    x = rounded(np.random.default_rng(3).normal(size=(300, DIM)))
    path = str(_saved(tmp_path, x))
    monkeypatch.setattr(flat_vectors, "HALF_RESIDENT_MIN", 300)
    held = FlatVectors.open(path, 1 << 20)
    assert held._base.dtype == np.float16 and held.on_disk == 0
    assert held.gather(np.array([5, 299, 5])).dtype == np.float32
    assert np.array_equal(held.gather(np.array([5, 299, 5])), x[[5, 299, 5]])
    assert all(block.dtype == np.float32 for block in held.blocks(copy=False))
    monkeypatch.setattr(flat_vectors, "HALF_RESIDENT_MIN", 301)
    assert FlatVectors.open(path, 1 << 20)._base.dtype == np.float32


@pytest.mark.parametrize("resident_max", [0, 1 << 20])
@pytest.mark.parametrize(("saved", "appended"), [(0, 0), (0, 300), (300, 0), (300, 1), (257, 190), (64, 64)])
def test_file_and_tail_read_as_one_array(tmp_path, saved, appended, resident_max):
    rng = np.random.default_rng(saved + appended)
    x = rounded(rng.normal(size=(saved + appended, DIM)))
    vectors = FlatVectors.open(str(_saved(tmp_path, x[:saved])), resident_max)
    for part in np.array_split(x[saved:], 3):
        vectors.add(part)
    assert vectors.ntotal == len(x) and vectors.base_count == saved
    assert vectors.on_disk == (saved if resident_max == 0 else 0)
    blocks = list(vectors.blocks(0, flat_vectors.BLOCK))
    assert np.array_equal(np.concatenate(blocks) if blocks else np.zeros((0, DIM), np.float32), x)
    if len(x):
        start = len(x) // 3
        assert np.array_equal(np.concatenate(list(vectors.blocks(start, flat_vectors.BLOCK))), x[start:])
        wanted = rng.integers(0, len(x), 200)
        assert np.array_equal(vectors.gather(wanted), x[wanted])
        sample = np.unique(rng.integers(0, len(x), 50))
        assert np.array_equal(vectors.rows(sample), x[sample])


@pytest.mark.parametrize("resident_max", [0, 1 << 20])
@pytest.mark.parametrize("share", [1.0, 0.3, 0.01, 0.0])
def test_the_exact_scan_is_numpy_s_top_k_over_the_masked_windows(tmp_path, share, resident_max):
    rng = np.random.default_rng(7)
    x = rounded(rng.normal(size=(500, DIM)))
    x[100] = x[400]  # a tie: the lower position first
    vectors = FlatVectors.open(str(_saved(tmp_path, x[:350])), resident_max)
    vectors.add(x[350:])
    mask = rng.random(len(x)) < share
    mask[[100, 400]] = share > 0
    q = x[400] + 0.01
    positions, scores = vectors.top(q, 10, mask)
    allowed = np.flatnonzero(mask)
    ref = allowed[np.lexsort((allowed, -(x[allowed] @ q)))][:10]
    assert positions.tolist() == ref.tolist()
    assert np.allclose(scores, x[ref] @ q, atol=1e-5)


def test_a_written_file_maps_again_and_a_wrong_one_is_refused(tmp_path):
    x = rounded(np.random.default_rng(1).normal(size=(99, DIM)))
    path = _saved(tmp_path, x)
    assert np.load(path).dtype == np.float16  # the store's values (query/half_vectors.py): nothing lost
    assert np.array_equal(np.load(path), x)  # a plain .npy: numpy reads it too
    for wrong in (np.float32, np.float64):  # (a float32 file from before has a stale stamp: never opened)
        bad = tmp_path / "bad.npy"
        np.save(bad, x.astype(wrong))
        with pytest.raises(ValueError, match="float16"):
            FlatVectors.open(str(bad))
    short = tmp_path / "short.npy"
    short.write_bytes(path.read_bytes()[:-8])
    with pytest.raises(ValueError, match="size"):
        FlatVectors.open(str(short))


def test_a_file_replaced_on_disk_keeps_serving_what_was_opened(tmp_path):
    x = rounded(np.random.default_rng(2).normal(size=(200, DIM)))
    path = _saved(tmp_path, x)
    vectors = FlatVectors.open(str(path), 0)
    replacement = tmp_path / "new.npy"
    np.save(replacement, -x)
    replacement.replace(path)  # another process saved over it (an atomic rename)
    assert np.array_equal(np.concatenate(list(vectors.blocks())), x)
    assert np.array_equal(vectors.gather(np.arange(200)), x)


def test_only_vectors_left_on_disk_keep_a_descriptor(tmp_path):
    """A daemon serving many partitions holds three tables each: small ones are read and let go of."""
    x = rounded(np.random.default_rng(3).normal(size=(100, DIM)))
    path = str(_saved(tmp_path, x))
    before = len(os.listdir("/proc/self/fd"))
    small = [FlatVectors.open(path, 1 << 20) for _ in range(20)]
    assert len(os.listdir("/proc/self/fd")) == before and all(v.on_disk == 0 for v in small)
    large = [FlatVectors.open(path, 0) for _ in range(3)]
    assert len(os.listdir("/proc/self/fd")) == before + 3
    del large
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) == before
