"""bgl.ingest(PyG Data): x / y / masks, and every edge-level tensor as a named edge array in edge order."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import bgl
from bgl.errors import IngestError

Data = pytest.importorskip("torch_geometric.data").Data


def make_data(n=150, e=2000, seed=0):
    g = torch.Generator().manual_seed(seed)
    mask = torch.zeros(n, dtype=torch.bool)
    return Data(x=torch.randn(n, 4, generator=g), y=torch.randint(0, 3, (n,), generator=g),
                edge_index=torch.randint(0, n, (2, e), generator=g), edge_attr=torch.randn(e, 3, generator=g),
                edge_weight=torch.rand(e, generator=g), score=torch.randint(0, 9, (e,), generator=g),
                train_mask=mask.clone().index_fill_(0, torch.arange(0, 50), True),
                val_mask=mask.clone().index_fill_(0, torch.arange(50, 80), True),
                test_mask=mask.clone().index_fill_(0, torch.arange(80, 150), True))


def test_edge_level_tensors_become_edge_arrays_in_csc_order(tmp_path):
    data = make_data()
    store = bgl.ingest(data, tmp_path / "s", remove_self_loops=False, dedupe=False)
    assert sorted(store.meta.edata) == ["edge_attr", "edge_weight", "score"]
    assert store.meta.extra["format"] == "pyg" and store.num_edges == data.num_edges
    # the store's CSC holds each target's in-edges (PyG's message direction)
    ip, ind = np.asarray(store.indptr), np.asarray(store.indices)
    dst = np.repeat(np.arange(store.num_nodes), np.diff(ip))
    key = lambda s, d: s * store.num_nodes + d  # noqa: E731
    ei = data.edge_index.numpy()
    assert np.array_equal(np.sort(key(ind, dst)), np.sort(key(ei[0], ei[1])))
    # each stored row is the row of an original edge with the same endpoints
    order = np.lexsort((np.arange(ei.shape[1]), key(ei[0], ei[1])))
    stored = np.lexsort((np.arange(ind.size), key(ind, dst)))
    for name in ("edge_attr", "edge_weight", "score"):
        orig = getattr(data, name).numpy()
        got = np.asarray(store.edge_array(name))
        assert got.dtype == orig.dtype
        same_pair = key(ind, dst)[stored] == key(ei[0], ei[1])[order]
        assert same_pair.all()
        multi = np.bincount(key(ei[0], ei[1]), minlength=store.num_nodes ** 2)[key(ind, dst)[stored]] > 1
        assert np.array_equal(got[stored][~multi], orig[order][~multi])
    assert np.array_equal(np.asarray(store.feat), data.x.numpy())
    assert np.array_equal(np.asarray(store.label), data.y.numpy())
    assert np.array_equal(np.sort(store.split("train")), np.arange(50))


def test_edge_keys_picks_arrays_and_names_a_bad_one(tmp_path):
    data = make_data()
    store = bgl.ingest(data, tmp_path / "s", edge_keys=["edge_weight"])
    assert list(store.meta.edata) == ["edge_weight"]
    data.bad = torch.zeros(7)
    with pytest.raises(IngestError, match="data.bad must be a tensor with one row per edge \\(2000\\), got shape"):
        bgl.ingest(data, tmp_path / "t", edge_keys=["bad"])
    data.edge_index = data.edge_index.clone()
    data.edge_index[0, 3] = 10_000
    with pytest.raises(IngestError, match="outside \\[0, 150\\)"):
        bgl.ingest(data, tmp_path / "u")
