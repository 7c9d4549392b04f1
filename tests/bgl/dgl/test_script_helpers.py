"""What DGL's example scripts use beyond the graph and the layers: ``AddSelfLoop`` (GCN, GAT),
``norm_by_dst`` (R-GCN), ``DGLGraph.clone`` and ``dgl.data.AsNodePredDataset`` (GraphSAGE).

Pinned lane: each against real DGL 2.1 on the same random graphs (with self-loops, parallel
edges, isolated nodes, typed).  Both lanes: the definitions checked by brute force.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import bgl.dgl as bdgl

N, E = 30, 90


def _loopy(lib, hub_edges):
    src, dst = hub_edges(N, E)
    src, dst = torch.cat([src, torch.tensor([3, 3, 7])]), torch.cat([dst, torch.tensor([3, 3, 7])])  # self-loops
    g = lib.graph((src, dst), num_nodes=N + 2)  # two isolated nodes
    g.edata["w"] = torch.arange(g.num_edges(), dtype=torch.float32)
    return g


def _typed(lib, hub_edges):
    s1, d1 = hub_edges(20, 60, seed=2)
    s2, d2 = hub_edges(10, 30, seed=3)
    return lib.heterograph({("user", "follows", "user"): (torch.cat([s1, torch.tensor([4])]),
                                                          torch.cat([d1, torch.tensor([4])])),
                            ("user", "buys", "item"): (d2, s2)}, num_nodes_dict={"user": 25, "item": 10})


def test_add_self_loop_transform_by_definition(hub_edges):
    g = _loopy(bdgl, hub_edges)
    out = bdgl.AddSelfLoop()(g)
    src, dst = out.edges()
    loops = src == dst
    assert int(loops.sum()) == g.num_nodes() and torch.equal(src[loops].sort().values, torch.arange(g.num_nodes()))
    old_loops = int((g.edges()[0] == g.edges()[1]).sum())
    assert old_loops >= 3 and out.num_edges() == g.num_edges() - old_loops + g.num_nodes()
    kept = bdgl.AddSelfLoop(allow_duplicate=True)(g)
    assert kept.num_edges() == g.num_edges() + g.num_nodes()
    with pytest.raises(ValueError, match="new_etypes"):
        bdgl.AddSelfLoop(new_etypes=True)


def test_norm_by_dst_by_definition(hub_edges):
    g = _loopy(bdgl, hub_edges)
    _, dst = g.edges()
    expected = torch.tensor([1.0 / int((dst == v).sum()) for v in dst.tolist()])
    assert torch.allclose(bdgl.norm_by_dst(g), expected)
    assert bdgl.norm_by_dst(g).dtype == torch.float32


def test_clone_shares_structure_not_feature_dicts(hub_edges):
    g = _loopy(bdgl, hub_edges)
    g.ndata["x"] = torch.randn(g.num_nodes(), 3)
    c = g.clone()
    c.ndata["y"] = torch.zeros(g.num_nodes())
    assert "y" not in g.ndata and c.ndata["x"] is g.ndata["x"]
    assert all(torch.equal(a, b) for a, b in zip(c.edges(), g.edges()))


def test_as_node_pred_dataset_by_definition():
    data = bdgl.data.CoraGraphDataset(verbose=False)
    ds = bdgl.data.AsNodePredDataset(data)
    g = data[0]
    assert torch.equal(ds.train_idx, g.ndata["train_mask"].nonzero().view(-1))
    assert torch.equal(ds.test_idx, g.ndata["test_mask"].nonzero().view(-1))
    assert ds.num_classes == data.num_classes and len(ds) == 1
    ds[0].ndata["extra"] = torch.zeros(g.num_nodes())
    assert "extra" not in data[0].ndata  # the wrapped dataset is left as it was
    bare = bdgl.graph(([0, 1], [1, 2]))
    bare.ndata["label"] = torch.tensor([0, 1, 1])
    with pytest.raises(ValueError, match="train_mask is not provided"):
        bdgl.data.AsNodePredDataset([bare])
    with pytest.raises(ValueError, match="float triplet"):
        bdgl.data.AsNodePredDataset([bare], split_ratio=[0.5, 0.5])


# ----------------------------------------------------------------------------- against DGL 2.1
@pytest.fixture
def dgl():
    return pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")


@pytest.mark.parametrize("kwargs", [{}, {"allow_duplicate": True}, {"fill_data": 2.0}, {"edge_feat_names": []}])
@pytest.mark.parametrize("build", [_loopy, _typed])
def test_add_self_loop_transform_matches_dgl(dgl, hub_edges, build, kwargs):
    ours, theirs = bdgl.AddSelfLoop(**kwargs)(build(bdgl, hub_edges)), dgl.AddSelfLoop(**kwargs)(build(dgl, hub_edges))
    assert ours.canonical_etypes == theirs.canonical_etypes
    for cet in theirs.canonical_etypes:
        for a, b in zip(ours.edges(etype=cet), theirs.edges(etype=cet)):
            assert torch.equal(a, b)
        for key, value in theirs.edges[cet].data.items():
            assert torch.equal(ours.edges[cet].data[key], value)


@pytest.mark.parametrize("build", [_loopy, _typed])
def test_norm_by_dst_matches_dgl(dgl, hub_edges, build):
    ours, theirs = build(bdgl, hub_edges), build(dgl, hub_edges)
    for cet in theirs.canonical_etypes:
        a, b = bdgl.norm_by_dst(ours, cet), dgl.norm_by_dst(theirs, cet)
        assert a.dtype == b.dtype and torch.equal(a, b)


def test_as_node_pred_dataset_matches_dgl(dgl, tmp_path, monkeypatch):
    monkeypatch.setenv("DGL_DOWNLOAD_DIR", str(tmp_path))
    g = _labelled(dgl)
    for ratio in (None, [0.6, 0.2, 0.2]):
        np.random.seed(5)
        theirs = dgl.data.AsNodePredDataset(_List([g if ratio is None else _unmasked(_labelled(dgl))]), split_ratio=ratio,
                                            save_dir=str(tmp_path), raw_dir=str(tmp_path))
        np.random.seed(5)
        ours = bdgl.data.AsNodePredDataset(_List([_labelled(bdgl) if ratio is None else _unmasked(_labelled(bdgl))]),
                                           split_ratio=ratio)
        for part in ("train_idx", "val_idx", "test_idx"):
            assert torch.equal(getattr(ours, part), getattr(theirs, part)), (ratio, part)
        assert ours.num_classes == theirs.num_classes


class _List(list):
    """A one-graph dataset with the ``name`` DGL's adapter reads."""

    name = "toy"


def _labelled(lib):
    gen = torch.Generator().manual_seed(0)
    g = lib.graph((torch.randint(0, 40, (100,), generator=gen), torch.randint(0, 40, (100,), generator=gen)),
                  num_nodes=40)
    g.ndata["label"] = torch.randint(0, 4, (40,), generator=gen)
    flags = torch.randint(0, 3, (40,), generator=gen)
    for value, mask in enumerate(("train_mask", "val_mask", "test_mask")):
        g.ndata[mask] = flags == value
    return g


def _unmasked(g):
    for mask in ("train_mask", "val_mask", "test_mask"):
        g.ndata.pop(mask)
    return g
