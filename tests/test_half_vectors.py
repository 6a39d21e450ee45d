"""query/half_vectors: a vector's float16 bits as DuckDB's SMALLINT and back, tested from tables."""

from __future__ import annotations

import numpy as np
import pytest

from recallfs.query.half_vectors import from_stored, half_bits, rounded


@pytest.mark.parametrize(("value", "bits"), [
    (0.0, 0x0000), (-0.0, -0x8000), (1.0, 0x3C00), (-1.0, -0x4400), (0.5, 0x3800),
    (2.0**-24, 0x0001),  # the smallest subnormal
    (65504.0, 0x7BFF),  # the largest finite float16
    (1.0 + 2.0**-11, 0x3C00),  # a tie rounds to even
    (1.0 + 3 * 2.0**-11, 0x3C02),  # ... upwards when even is above
])
def test_bits_of_one_coordinate(value, bits):
    assert int(half_bits(np.array([[value]], dtype=np.float32))[0, 0]) == bits
    assert from_stored([np.array([bits], dtype=np.int16)], 1, half=True)[0, 0] == np.float32(np.float16(value))


@pytest.mark.parametrize("dim", [1, 3, 384])
def test_a_matrix_round_trips_to_its_float16_values(dim):
    x = np.random.default_rng(dim).normal(size=(50, dim)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    stored = list(half_bits(x))  # what DuckDB hands back: one array per row
    back = from_stored(stored, dim, half=True)
    assert back.dtype == np.float32 and back.shape == (50, dim) and back.flags.c_contiguous
    assert np.array_equal(back, rounded(x))
    assert np.abs(back - x).max() <= 2.0**-12  # unit vectors: each coordinate within half a float16 step at 1
    cosines = np.sum(back * x, axis=1) / np.linalg.norm(back, axis=1)
    assert np.abs(cosines - 1).max() < 1e-6
    assert np.array_equal(from_stored(list(x), dim, half=False), x)  # a store before float16: FLOAT[d]


def test_no_rows_and_a_wrong_width():
    assert from_stored([], 4, half=True).shape == (0, 4)
    with pytest.raises(ValueError, match="expected"):
        from_stored([np.zeros(3, dtype=np.int16)], 4, half=True)
