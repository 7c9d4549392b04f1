"""The fetch stage's row gather (``torch.index_select`` into recycled buffers): bit for bit what
``np.take`` gives, for every row dtype, in memory and memory-mapped, and wide rows through the loader."""
from __future__ import annotations

import numpy as np
import pytest

import bgl
from bgl.loader.stages.row_buffers import RowBuffers
from bgl.sampler.row_gather import take_rows

# float32/16 feature rows, and the encoded rows of bgl.codec (int8, bfloat16 bits as int16)
DTYPES = ["float32", "float16", "float64", "int8", "int16", "uint8"]


def random_bits(shape, dtype, seed=0) -> np.ndarray:
    """Rows of arbitrary bit patterns (NaNs with payloads, infinities, subnormals included)."""
    dtype = np.dtype(dtype)
    raw = np.random.default_rng(seed).integers(0, 256, int(np.prod(shape)) * dtype.itemsize, np.uint8)
    return raw.view(dtype).reshape(shape)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mapped", [False, True])
def test_the_gather_is_bit_identical_to_np_take(tmp_path, dtype, mapped):
    rows = random_bits((300, 37), dtype)
    if mapped:
        path = tmp_path / "rows.npy"
        np.save(path, rows)
        rows = np.asarray(np.load(path, mmap_mode="r"))  # read-only, as the fetch stage holds a store's
    pool = RowBuffers()
    assert pool._tensor_view(rows) is not None  # the index_select path, not the fallback
    for i in range(6):
        ids = np.random.default_rng(i).integers(0, 300, 50 + 40 * i)
        got = pool.take(rows, ids)
        assert same_bits(got, np.take(rows, ids, axis=0)), (dtype, i)
        assert same_bits(take_rows(rows, ids), got)  # the typed fetch's gather, no buffers


def test_arrays_torch_cannot_wrap_fall_back_to_np_take():
    rows = random_bits((40, 3), ">f4")  # byte-swapped: no tensor over it
    pool = RowBuffers()
    assert pool._tensor_view(rows) is None
    ids = np.array([3, 3, 39, 0])
    assert same_bits(pool.take(rows, ids), np.take(rows, ids, axis=0))


def test_an_empty_batch_and_bad_ids():
    rows = random_bits((10, 4), "float32")
    pool = RowBuffers()
    assert pool.take(rows, np.zeros(0, np.int64)).shape == (0, 4)
    with pytest.raises(IndexError, match="10 is outside"):
        pool.take(rows, np.array([1, 10]))


@pytest.mark.parametrize("mode", ["inline", "thread"])
def test_wide_feature_rows_through_the_loader_are_the_stores_rows(random_store_factory, mode):
    store = random_store_factory(num_nodes=400, avg_degree=6.0, feat_dim=600, seed=3)
    feat = np.asarray(store.feat)
    loader = bgl.DataLoader(store, np.asarray(store.train_idx), bgl.NeighborSampler([5, 5]), batch_size=64,
                            shuffle=True, pipeline=mode)
    with loader:
        held = []
        for input_nodes, _, blocks in loader:
            x = blocks[0].srcdata["feat"]
            assert x.shape == (input_nodes.shape[0], 600)
            held.append((input_nodes, x))
        assert len(held) == len(loader) > 2
    for input_nodes, x in held:  # every batch kept: none was written over by a later gather
        assert same_bits(x.numpy(), feat[input_nodes.numpy()])
