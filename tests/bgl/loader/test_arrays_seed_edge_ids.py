"""The core loader over in-memory arrays whose edges carry their own ids (``GraphArrays(edge_ids=)``,
what a DGL-style graph hands it): link prediction's seed edge ids are those ids, as for a DGLGraph
(not CSC positions): the pair graph's ``_ID`` are the seeds, its endpoints the edges' own, and the
excluded seed edges never appear in a block.  Both lanes (no DGL)."""
from __future__ import annotations

import numpy as np
import torch

import bgl
from bgl.loader.graph_arrays import GraphArrays


def arrays_with_shuffled_ids(seed: int = 0, n: int = 60, e: int = 400):
    """(arrays, src, dst): edges in insertion order src[i] -> dst[i], laid out in CSC order by dst."""
    gen = torch.Generator().manual_seed(seed)
    src, dst = torch.randint(0, n, (e,), generator=gen), torch.randint(0, n, (e,), generator=gen)
    order = torch.sort(dst, stable=True).indices  # CSC position p holds edge order[p]
    indptr = torch.zeros(n + 1, dtype=torch.int64)
    indptr[1:] = torch.cumsum(torch.bincount(dst, minlength=n), 0)
    return GraphArrays(indptr, src[order].contiguous(), edge_ids=order), src, dst


def test_seed_edge_ids_name_the_graphs_edges():
    arrays, src, dst = arrays_with_shuffled_ids()
    assert not np.array_equal(arrays.edge_ids, np.arange(400))
    seeds = torch.tensor([0, 1, 2, 399, 200, 57, 13, 350])
    sampler = bgl.as_edge_prediction_sampler(bgl.MultiLayerFullNeighborSampler(1), exclude="self")
    seen = []
    for _, pair, blocks in bgl.DataLoader(arrays, seeds, sampler, batch_size=3):
        eids = pair.edata["_ID"]
        ps, pd = pair.edges()
        assert torch.equal(pair.ndata["_ID"][ps.long()], src[eids])
        assert torch.equal(pair.ndata["_ID"][pd.long()], dst[eids])
        block = blocks[0]
        bs = block.src_ids[block.indices.long()]
        bd = torch.repeat_interleave(block.dst_ids, block.indptr[1:] - block.indptr[:-1])
        assert torch.equal(bs, src[block.edge_ids]) and torch.equal(bd, dst[block.edge_ids])
        assert not np.intersect1d(eids.numpy(), block.edge_ids.numpy()).size
        seen.append(eids)
    assert sorted(torch.cat(seen).tolist()) == sorted(seeds.tolist())
