"""``bgl.DataLoader`` over a ``bgl.dgl`` graph: read in place (checked by pointer), ``bgl.dgl`` blocks, and
the same batches as ``bgl.dgl.dataloading.DataLoader`` and as the core loader over the graph's arrays.

The arrays route (``bgl.DataLoader(graph_arrays(g), ..., blocks="bgl")``) is the independent reference:
it samples the same CSC with the same generator, so its node and edge ids must be the batch's.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import bgl
import bgl.dgl as bdgl
from bgl.dgl.in_place import graph_arrays

NID = EID = "_ID"


def _random_graph(seed: int = 0, n: int = 200, e: int = 1500):
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(0, n, (e,), generator=gen)
    dst = torch.randint(0, n - 5, (e,), generator=gen)
    g = bdgl.graph((src, dst), num_nodes=n)
    g.ndata["feat"] = torch.randn(n, 5, generator=gen)
    g.ndata["feat2"] = torch.randn(n, 2, generator=gen)
    g.ndata["label"] = torch.randint(0, 3, (n,), generator=gen)
    g.edata["w"] = torch.rand(e, generator=gen)
    return g


@pytest.fixture(scope="module")
def g():
    return _random_graph()


def _batches(make_loader, seed: int = 7) -> list:
    torch.manual_seed(seed)  # the loader's generator is read from torch's RNG when it is built
    return list(make_loader())


def _same_block(a, b) -> None:
    """Two ``bgl.dgl`` blocks (or a ``bgl.dgl`` block and a core Block) with the same nodes and edges."""
    def ids(block):
        if hasattr(block, "srcdata") and NID in block.srcdata:
            return block.srcdata[NID], block.dstdata[NID], block.edata[EID]
        return block.src_ids, block.dst_ids, block.edge_ids

    for x, y in zip(ids(a), ids(b)):
        assert torch.equal(x, y)
    sa, da = a.edges()
    sb, db = b.edges() if hasattr(b, "edges") else _core_edges(b)
    assert torch.equal(sa.long(), sb.long()) and torch.equal(da.long(), db.long())


def _core_edges(block):
    dst = torch.repeat_interleave(torch.arange(block.indptr.shape[0] - 1), torch.diff(block.indptr))
    return block.indices, dst


def test_bgl_dataloader_reads_a_bgl_dgl_graph_in_place(g):
    """No copy of the graph's arrays: the loader's CSC indices, edge ids, features and labels are the graph's
    tensors; only ``indptr`` is widened to the sampler's int64 row spans (8 B a node) when the graph holds int32."""
    loader = bgl.DataLoader(g, torch.arange(0, 200, 3), bgl.NeighborSampler([4, 3]), batch_size=32)
    arrays = loader._info.store
    csc = g._relation(None).csc()
    if csc.indptr.dtype == torch.int64:
        assert arrays.tensor("indptr").data_ptr() == csc.indptr.data_ptr()
    else:
        assert torch.equal(arrays.tensor("indptr"), csc.indptr.long())
    assert arrays.tensor("indices").data_ptr() == csc.indices.data_ptr()
    assert np.shares_memory(arrays.indices, csc.indices.numpy())
    if csc.eids is not None:
        assert arrays.tensor("edge_ids").data_ptr() == csc.eids.data_ptr()
    assert arrays.tensor("feat").data_ptr() == g.ndata["feat"].data_ptr()
    assert np.shares_memory(arrays.feat, g.ndata["feat"].numpy())
    assert arrays.tensor("label").data_ptr() == g.ndata["label"].data_ptr()
    for input_nodes, output_nodes, blocks in loader:
        assert all(isinstance(b, bdgl.DGLGraph) and b.is_block for b in blocks)
        assert torch.equal(blocks[0].srcdata["feat"], g.ndata["feat"][input_nodes])
        assert torch.equal(blocks[0].srcdata["feat2"], g.ndata["feat2"][input_nodes])  # every field, as DGL
        assert torch.equal(blocks[-1].dstdata["label"], g.ndata["label"][output_nodes])
        for b in blocks:
            assert torch.equal(b.edata["w"], g.edata["w"][b.edata[EID].long()])


def test_node_batches_equal_the_dgl_face_and_the_arrays_route(g):
    seeds = torch.arange(0, 200, 2)
    sampler = bgl.NeighborSampler([4, 3])
    kwargs = dict(batch_size=16, shuffle=True)
    ours = _batches(lambda: bgl.DataLoader(g, seeds, sampler, **kwargs))
    face = _batches(lambda: bdgl.dataloading.DataLoader(g, seeds, sampler, **kwargs))
    arrays = _batches(lambda: bgl.DataLoader(graph_arrays(g, "feat", "label"), seeds, sampler, blocks="bgl", **kwargs))
    assert len(ours) == len(face) == len(arrays) == 7
    for a, b, c in zip(ours, face, arrays):
        for i in range(2):
            assert torch.equal(a[i], b[i]) and torch.equal(a[i], c[i])
        for x, y, z in zip(a[2], b[2], c[2]):
            _same_block(x, y)
            _same_block(x, z)
        assert torch.equal(a[2][0].srcdata["feat"], b[2][0].srcdata["feat"])
        assert torch.equal(a[2][0].srcdata["feat"], c[2][0].srcdata["feat"])


@pytest.mark.parametrize("exclude", ["self", "reverse_id"])
def test_edge_seed_batches_equal_the_dgl_face_and_the_arrays_route(g, exclude):
    n, e = g.num_nodes(), g.num_edges()
    src, dst = g.edges()
    both = bdgl.graph((torch.cat([src, dst]), torch.cat([dst, src])), num_nodes=n)
    both.ndata["feat"] = g.ndata["feat"]
    reverse = torch.cat([torch.arange(e, 2 * e), torch.arange(0, e)])
    sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler([3, 2]), exclude=exclude,
                                             reverse_eids=reverse if exclude == "reverse_id" else None,
                                             negative_sampler=bgl.negative_sampler.Uniform(2))
    seeds = torch.arange(0, 2 * e, 41)
    kwargs = dict(batch_size=20, shuffle=True)
    ours = _batches(lambda: bgl.DataLoader(both, seeds, sampler, **kwargs))
    face = _batches(lambda: bdgl.dataloading.DataLoader(both, seeds, sampler, **kwargs))
    arrays = _batches(lambda: bgl.DataLoader(graph_arrays(both, "feat", None), seeds, sampler, blocks="bgl",
                                             **kwargs))
    assert len(ours) == len(face) == len(arrays) > 1
    for a, b, c in zip(ours, face, arrays):
        assert torch.equal(a[0], b[0]) and torch.equal(a[0], c[0])
        for pa, pb, pc in zip(a[1:3], b[1:3], c[1:3]):
            assert isinstance(pa, bdgl.DGLGraph)
            for x, y in zip(pa.edges(), pb.edges()):
                assert torch.equal(x, y)
            for x, y in zip(pa.edges(), pc.edges()):
                assert torch.equal(x, y)
            assert torch.equal(pa.ndata[NID], pc.ndata[NID])
        assert torch.equal(a[1].edata[EID], c[1].edata[EID])
        assert torch.equal(a[1].ndata["feat"], both.ndata["feat"][a[1].ndata[NID]])
        excluded = set(a[1].edata[EID].tolist())
        if exclude == "reverse_id":
            excluded |= set(reverse[a[1].edata[EID]].tolist())
        for x, y, z in zip(a[3], b[3], c[3]):
            _same_block(x, y)
            _same_block(x, z)
            assert not excluded & set(x.edata[EID].tolist())


def _typed_graph():
    gen = torch.Generator().manual_seed(3)
    n_user, n_item = 30, 20
    pairs = torch.randperm(n_user * n_item, generator=gen)[:120]  # no repeated pair: one reverse each
    us, it = pairs // n_item, pairs % n_item
    fs, fd = torch.randint(0, n_user, (90,), generator=gen), torch.randint(0, n_user, (90,), generator=gen)
    g = bdgl.heterograph({("user", "buys", "item"): (us, it), ("item", "bought_by", "user"): (it, us),
                          ("user", "follows", "user"): (fs, fd)}, num_nodes_dict={"user": n_user, "item": n_item})
    g.nodes["user"].data["feat"] = torch.randn(n_user, 3, generator=gen)
    g.nodes["item"].data["feat"] = torch.randn(n_item, 3, generator=gen)
    g.nodes["user"].data["label"] = torch.randint(0, 2, (n_user,), generator=gen)
    return g


def _same_typed_block(a, b) -> None:
    assert a.canonical_etypes == b.canonical_etypes
    for nt in a.srctypes:
        assert torch.equal(a.srcnodes[nt].data[NID], b.srcnodes[nt].data[NID])
    for nt in a.dsttypes:
        assert torch.equal(a.dstnodes[nt].data[NID], b.dstnodes[nt].data[NID])
    for c in a.canonical_etypes:
        for x, y in zip(a.edges(etype=c), b.edges(etype=c)):
            assert torch.equal(x, y)
        assert torch.equal(a.edges[c].data[EID], b.edges[c].data[EID])


def test_typed_node_batches_equal_the_dgl_face():
    g = _typed_graph()
    seeds = {"user": torch.arange(0, 30, 2)}
    sampler = bgl.NeighborSampler([3, 3])
    ours = _batches(lambda: bgl.DataLoader(g, seeds, sampler, batch_size=6, shuffle=True))
    face = _batches(lambda: bdgl.dataloading.DataLoader(g, seeds, sampler, batch_size=6, shuffle=True))
    assert len(ours) == len(face) == 3
    for (inp, out, blocks), (inp2, out2, blocks2) in zip(ours, face):
        assert inp.keys() == inp2.keys() and all(torch.equal(inp[k], inp2[k]) for k in inp)
        assert set(out) == {"user"} and torch.equal(out["user"], out2["user"])
        for a, b in zip(blocks, blocks2):
            assert isinstance(a, bdgl.DGLGraph)
            _same_typed_block(a, b)
        for nt in blocks[0].srctypes:
            ids = blocks[0].srcnodes[nt].data[NID]
            assert torch.equal(blocks[0].srcnodes[nt].data["feat"], g.nodes[nt].data["feat"][ids])
        last = blocks[-1].dstnodes["user"].data
        assert torch.equal(last["label"], g.nodes["user"].data["label"][last[NID]])


def test_typed_edge_seed_batches_equal_the_dgl_face():
    g = _typed_graph()
    sampler = bgl.as_edge_prediction_sampler(bgl.NeighborSampler([2, 2]), exclude="reverse_types",
                                             reverse_etypes={"buys": "bought_by", "bought_by": "buys"},
                                             negative_sampler=bgl.negative_sampler.Uniform(1))
    seeds = {"buys": torch.arange(0, 120, 3)}
    ours = _batches(lambda: bgl.DataLoader(g, seeds, sampler, batch_size=16, shuffle=True))
    face = _batches(lambda: bdgl.dataloading.DataLoader(g, seeds, sampler, batch_size=16, shuffle=True))
    assert len(ours) == len(face) == 3
    c = ("user", "buys", "item")
    for a, b in zip(ours, face):
        pair = a[1]
        assert isinstance(pair, bdgl.DGLGraph) and pair.canonical_etypes == g.canonical_etypes
        assert torch.equal(pair.edges[c].data[EID], b[1].edges[c].data[EID])
        s, d = pair.edges(etype=c)
        gs, gd = g.find_edges(pair.edges[c].data[EID], etype=c)  # the graph's own per-relation edge ids
        assert torch.equal(pair.nodes["user"].data[NID][s.long()], gs.long())
        assert torch.equal(pair.nodes["item"].data[NID][d.long()], gd.long())
        for nt in ("user", "item"):
            ids = pair.nodes[nt].data[NID]
            assert torch.equal(pair.nodes[nt].data["feat"], g.nodes[nt].data["feat"][ids])
        excluded = set(pair.edges[c].data[EID].tolist())
        for x, y in zip(a[3], b[3]):
            _same_typed_block(x, y)
            for cet in (c, ("item", "bought_by", "user")):
                assert not excluded & set(x.edges[cet].data[EID].tolist())


def test_block_kinds_for_a_bgl_dgl_graph(g):
    seeds, sampler = torch.arange(4), bgl.NeighborSampler([2])
    _, _, blocks = next(iter(bgl.DataLoader(g, seeds, sampler, batch_size=4, blocks="bgl")))
    assert isinstance(blocks[0], bgl.Block)
    with pytest.raises(ValueError, match="blocks='dgl' builds real DGL blocks.*bgl.dgl graph"):
        bgl.DataLoader(g, seeds, sampler, batch_size=4, blocks="dgl")


def test_a_replaced_feature_is_read_next_epoch():
    """DGL reads ``g.ndata`` as the epoch runs; the loader re-reads a replaced tensor at the next epoch."""
    g = _random_graph(seed=1, n=50, e=200)
    loader = bgl.DataLoader(g, torch.arange(10), bgl.NeighborSampler([2]), batch_size=10)
    next(iter(loader))
    g.ndata["feat"] = torch.full((50, 5), 3.0)
    input_nodes, _, blocks = next(iter(loader))
    assert torch.equal(blocks[0].srcdata["feat"], torch.full((input_nodes.shape[0], 5), 3.0))
