"""bgl.cache.gpu_gather: dispatch between UVA / CPU-gather / plain paths, and the CPU path's rows."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from bgl.cache.gpu_gather import (HostFeatureSource, pinned_h2d_bandwidth, resolve_mode, to_host_tensor,
                            uva_supported)


@pytest.fixture()
def feat_memmap(tmp_path):
    rng = np.random.default_rng(0)
    arr = rng.standard_normal((300, 8)).astype(np.float32)
    np.save(tmp_path / "feat.npy", arr)
    return np.load(tmp_path / "feat.npy", mmap_mode="r"), arr


def test_resolve_mode_dispatch():
    assert resolve_mode("cpu", "auto") == "plain"
    assert resolve_mode("cpu", "uva") == "plain"  # on a CPU device every path is a plain gather
    assert resolve_mode("cpu", "cpu") == "plain"
    assert resolve_mode("cuda:0", "auto", uva_available=True) == "uva"
    assert resolve_mode("cuda:0", "auto", uva_available=False) == "cpu"
    assert resolve_mode("cuda:0", "cpu", uva_available=True) == "cpu"
    assert resolve_mode("cuda:0", "uva", uva_available=True) == "uva"
    with pytest.raises(ValueError, match="'uva' is not supported on cuda:0"):
        resolve_mode("cuda:0", "uva", uva_available=False)
    with pytest.raises(ValueError, match="'zero-copy'"):
        resolve_mode("cpu", "zero-copy")


def test_uva_probe_is_false_without_cuda():
    assert uva_supported("cpu") is False
    if not torch.cuda.is_available():
        assert uva_supported("cuda") is False
        with pytest.raises(ValueError, match="CUDA device"):
            pinned_h2d_bandwidth("cpu")


def test_cpu_source_gathers_rows_from_memmap(feat_memmap):
    mm, arr = feat_memmap
    src = HostFeatureSource(mm, device="cpu", mode="auto")
    assert src.mode == "plain"
    ids = torch.tensor([5, 0, 299, 5, 17], dtype=torch.int64)
    rows = src(ids)
    assert rows.shape == (5, 8) and rows.dtype == torch.float32
    np.testing.assert_array_equal(rows.numpy(), arr[ids.numpy()])
    assert src(torch.empty(0, dtype=torch.int64)).shape == (0, 8)
    st = src.stats()
    assert st["calls"] == 2 and st["rows"] == 5 and st["bytes"] == 5 * 8 * 4


def test_memmap_is_wrapped_without_copy(feat_memmap):
    mm, _ = feat_memmap
    host = to_host_tensor(mm, pin=False)
    assert host.data_ptr() == mm.ctypes.data


def test_node_offset_and_bad_ids(feat_memmap):
    mm, arr = feat_memmap
    src = HostFeatureSource(torch.from_numpy(arr.copy()), device="cpu", node_offset=1000)
    np.testing.assert_array_equal(src(torch.tensor([1000, 1299])).numpy(), arr[[0, 299]])
    with pytest.raises(IndexError, match="1300"):
        src(torch.tensor([1000, 1300]))
    with pytest.raises(IndexError, match="999"):
        src(torch.tensor([999]))
    with pytest.raises(TypeError, match="float32"):
        src(torch.tensor([1.0]))
    with pytest.raises(ValueError, match="2-D"):
        HostFeatureSource(np.zeros(5, np.float32))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("mode", ["uva", "cpu"])
def test_cuda_paths_match_plain_gather(feat_memmap, mode):
    mm, arr = feat_memmap
    if mode == "uva" and not uva_supported("cuda"):
        pytest.skip("no UVA on this device")
    src = HostFeatureSource(mm, device="cuda", mode=mode)
    for _ in range(3):  # several calls exercise the alternating staging buffers
        ids = torch.randint(0, 300, (100,))
        np.testing.assert_array_equal(src(ids.cuda()).cpu().numpy(), arr[ids.numpy()])


def test_source_serves_a_feature_cache(feat_memmap):
    from bgl.cache import FeatureCache

    mm, arr = feat_memmap
    src = HostFeatureSource(mm, device="cpu")
    cache = FeatureCache(capacity=50, num_nodes=300, dim=8)
    for ids in (torch.tensor([3, 4, 5, 3]), torch.tensor([5, 6, 3, 299])):
        np.testing.assert_array_equal(cache.fetch(ids, src).numpy(), arr[ids.numpy()])
    st = cache.stats()
    assert st["hits"] == 2 and st["misses"] == 6  # 3,4,5,3 all miss; then 5,3 hit and 6,299 miss
    assert src.stats()["rows"] == 5  # the cache asks for each distinct missing id once
