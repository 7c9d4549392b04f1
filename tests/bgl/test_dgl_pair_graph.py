"""bgl.dgl.real_dgl.blocks.to_dgl_pair_graph: built from the unit-graph index, the same DGLGraph as dgl.graph().

The adapter skips ``dgl.graph``'s generic path for speed; these tests hold it to the graph that
path builds (``dgl.graph((src, dst), num_nodes=n)`` with the fields assigned one by one): edges,
node count, node/edge types, id type, formats, and every field sharing the batch's storage.
"""
from __future__ import annotations

import pytest
import torch

dgl = pytest.importorskip("dgl")

from bgl.dgl.real_dgl.blocks import to_dgl_pair_graph  # noqa: E402
from bgl.loader.seeds.edges import PairGraph  # noqa: E402


def reference(pair):
    """What ``dgl.graph`` plus per-field assignment gives for ``pair``."""
    src, dst = pair.edges()
    g = dgl.graph((src, dst), num_nodes=pair.num_nodes())
    for key, value in pair.ndata.items():
        g.ndata[dgl.NID if key == "_ID" else key] = value
    if "_ID" in pair.edata:
        g.edata[dgl.EID] = pair.edata["_ID"]
    return g


def assert_same_graph(got, want):
    assert (got.num_nodes(), got.num_edges()) == (want.num_nodes(), want.num_edges())
    assert got.ntypes == want.ntypes and got.etypes == want.etypes
    assert got.canonical_etypes == want.canonical_etypes
    assert got.idtype == want.idtype and got.device == want.device
    assert got.formats() == want.formats()
    for a, b in zip(got.edges(), want.edges()):
        assert torch.equal(a, b)
    # CSR/CSC built on demand from the COO must agree too (what a scorer's apply_edges may use)
    for fmt in ("csr", "csc"):
        for a, b in zip(got.adj_tensors(fmt), want.adj_tensors(fmt)):
            assert torch.equal(a, b)
    assert sorted(got.ndata.keys()) == sorted(want.ndata.keys())
    assert sorted(got.edata.keys()) == sorted(want.edata.keys())
    for key in want.ndata.keys():
        assert torch.equal(got.ndata[key], want.ndata[key])
    for key in want.edata.keys():
        assert torch.equal(got.edata[key], want.edata[key])


@pytest.mark.parametrize("num_edges", [0, 1, 37])
def test_positive_pair_graph_matches_dgl_graph(num_edges):
    gen = torch.Generator().manual_seed(num_edges)
    n = 11
    src = torch.randint(0, n, (num_edges,), generator=gen)
    dst = torch.randint(0, n, (num_edges,), generator=gen)
    node_ids = torch.randperm(100, generator=gen)[:n]
    feat = torch.randn(3 * n, 5, generator=gen)[:n]  # a view of the first rows, as the transfer stage passes
    pair = PairGraph(src, dst, node_ids, torch.randperm(1000, generator=gen)[:num_edges])
    pair.ndata["feat"] = feat
    got = to_dgl_pair_graph(pair)
    assert_same_graph(got, reference(pair))
    # the fields are the batch's tensors, not copies
    assert got.ndata["feat"].data_ptr() == feat.data_ptr()
    assert got.ndata[dgl.NID].data_ptr() == node_ids.data_ptr()


def test_negative_pair_graph_has_no_edge_ids_and_keeps_duplicates():
    n = 4
    src = torch.tensor([0, 0, 3, 3, 3])
    dst = torch.tensor([1, 1, 2, 0, 0])  # repeated pairs stay repeated, as DGL's Uniform draws them
    pair = PairGraph(src, dst, torch.tensor([9, 2, 7, 5]))
    got = to_dgl_pair_graph(pair)
    assert dgl.EID not in got.edata
    assert_same_graph(got, reference(pair))


def test_int32_local_ids_become_int64_like_the_loaders_pairs():
    src, dst = torch.tensor([0, 1], dtype=torch.int32), torch.tensor([1, 2], dtype=torch.int32)
    pair = PairGraph(src, dst, torch.tensor([4, 5, 6]))
    got = to_dgl_pair_graph(pair)
    assert got.idtype == torch.int64
    assert_same_graph(got, reference(PairGraph(src.long(), dst.long(), pair.ndata["_ID"])))
