"""``AsLinkPredDataset`` and the node-split helpers (``add_nodepred_split``, ``mask_nodes_by_property``,
``add_node_property_split``): DGL 2.1's splits for the same NumPy state and seed (pinned lane) and their shape
without DGL."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import bgl.dgl as bdgl


class _One:
    """A one-graph dataset of ``lib``'s graph: 12 nodes, 30 random edges, 3 features."""

    name = "toy"

    def __init__(self, lib, seed=0):
        gen = torch.Generator().manual_seed(seed)
        self.g = lib.graph((torch.randint(0, 12, (30,), generator=gen), torch.randint(0, 12, (30,), generator=gen)),
                           num_nodes=12)
        self.g.ndata["feat"] = torch.rand(12, 3, generator=gen)

    def __getitem__(self, idx):
        return self.g

    def __len__(self):
        return 1


def _link_state(ds):
    s, d = ds.train_graph.edges()
    return ([s.tolist(), d.tolist(), ds.train_graph.num_nodes(), ds.feat_size] +
            [t.tolist() for part in (ds.val_edges, ds.test_edges) for pair in part for t in pair] +
            [str(t.dtype) for part in (ds.val_edges, ds.test_edges) for pair in part for t in pair])


def test_splits_match_dgl(tmp_path):
    dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
    pytest.importorskip("networkx", reason="add_node_property_split computes properties with networkx")
    states = []
    for lib in (dgl, bdgl):
        np.random.seed(4)
        link = lib.data.AsLinkPredDataset(_One(lib), split_ratio=(0.6, 0.2, 0.2), neg_ratio=2,
                                          save_dir=str(tmp_path / lib.__name__), verbose=False)
        one = _One(lib)
        lib.data.add_nodepred_split(one, (0.5, 0.25, 0.25))
        masks = {k: v.tolist() for k, v in one.g.ndata.items() if k.endswith("mask")}
        values = np.random.RandomState(1).random_sample(20).round(1)  # ties: the seeded order decides
        by_property = {k: v.tolist() for k, v in lib.data.mask_nodes_by_property(values, [0.3, 0.1, 0.2, 0.2, 0.2],
                                                                                  random_seed=7).items()}
        prop = _One(lib)
        for name in ("popularity", "locality", "density"):
            lib.data.add_node_property_split(prop, [0.3, 0.1, 0.1, 0.3, 0.2], name, ascending=name != "density",
                                             random_seed=3)
            by_property[name] = {k: v.tolist() for k, v in prop.g.ndata.items() if k != "feat"}
        states.append((_link_state(link), masks, by_property))
    assert states[0] == states[1]


def test_splits_without_dgl():
    np.random.seed(0)
    link = bdgl.data.AsLinkPredDataset(_One(bdgl), split_ratio=(0.6, 0.2, 0.2), neg_ratio=2, verbose=False)
    (vs, vd), (ns, nd) = link.val_edges
    assert link.train_graph.num_edges() == 18 and vs.shape == (6,) and ns.shape[0] <= 12 and link.feat_size == 3
    g = _One(bdgl).g
    assert not bool(g.has_edges_between(ns, nd).any()) and not bool((ns == nd).any())
    with pytest.raises(ValueError, match="triplet"):
        bdgl.data.add_nodepred_split(_One(bdgl), (0.5, 0.5))
    masks = bdgl.data.mask_nodes_by_property(np.arange(10.0), [0.2, 0.2, 0.2, 0.2, 0.2], random_seed=0)
    assert masks["out_test_mask"].nonzero().flatten().tolist() == [8, 9]  # the largest values: out of distribution
    assert sum(int(m.sum()) for m in masks.values()) == 10 and masks["in_train_mask"].dtype == torch.bool
