"""``bgl.loader.arguments.has_repeats``: the same answer as a sort on each of its three paths
(increasing ids, dense ids marked in a bit array, sparse or negative ids sorted), for int32 and int64."""
from __future__ import annotations

import numpy as np
import pytest

from bgl.loader.arguments import has_repeats


def _reference(ids: np.ndarray) -> bool:
    return np.unique(ids).shape[0] != ids.shape[0]


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("span", [1, 3, 100, 10_000])  # ids drawn from [0, span * n): dense to sparse
def test_random_ids_agree_with_a_sort(dtype, span):
    rng = np.random.default_rng(span)
    for n in (2, 3, 17, 1000):
        distinct = rng.choice(span * n + 1, size=n, replace=False).astype(dtype)
        assert has_repeats(distinct) is False
        repeated = distinct.copy()
        repeated[rng.integers(1, n)] = repeated[0]
        assert has_repeats(repeated) is True
        drawn = rng.integers(0, span * n + 1, size=n).astype(dtype)
        assert has_repeats(drawn) == _reference(drawn)


def test_increasing_and_constant_runs():
    assert has_repeats(np.arange(10**5, dtype=np.int64)) is False
    assert has_repeats(np.array([0, 1, 1, 2])) is True  # sorted, not strictly increasing
    assert has_repeats(np.array([5, 5])) is True
    assert has_repeats(np.array([7])) is False
    assert has_repeats(np.array([], dtype=np.int64)) is False
    assert has_repeats(np.array([0, 2**40, 3])) is False  # sparse: sorted, never a 2**40 mark array


def test_bits_at_byte_edges_and_ids_the_bits_leave_to_a_sort():
    for v in (0, 7, 8, 63):  # a byte's first and last bits, the next byte's first
        assert has_repeats(np.array([9, v, 3, v])) is True
    assert has_repeats(np.array([9, 7, 8, 15, 16, 0])) is False
    assert has_repeats(np.array([5, -1, 3, -1])) is True  # a negative id: sorted, never a bit index
    assert has_repeats(np.array([5, -1, 3, -2])) is False
    wide = np.array([3, 2**30, 1], dtype=np.int64)  # past 64 * n and 32M: sorted
    assert has_repeats(wide) is False and has_repeats(np.append(wide, 2**30)) is True
    frozen = np.array([4, 1, 4], dtype=np.int64)
    frozen.flags.writeable = False  # a read-only seed array (a memmap's) is read, not copied
    assert has_repeats(frozen) is True
