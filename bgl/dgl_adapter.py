"""The only module that imports DGL: bgl blocks -> ``dgl.Block`` and DGLGraph -> CSC arrays.

Everything else in bgl runs without DGL (the GPU machine has none).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from .blocks import Block


def _dgl():
    import dgl  # noqa: WPS433 - imported on use so `import bgl.dgl_adapter` fails only when used

    return dgl


def require_dgl():
    """The ``dgl`` module, imported now; ImportError when DGL is not installed.

    Lets other modules check for DGL early without importing it themselves.
    """
    return _dgl()


def to_dgl_block(block: Block):
    """A ``dgl.Block`` with the same edges (CSC order), ``dgl.NID`` on src/dst, ``dgl.EID`` and the
    block's node and edge data.

    ``srcdata``/``dstdata`` tensors of the bgl block are attached (shared, not
    copied), so ``blocks[0].srcdata['feat']`` and ``blocks[-1].dstdata['label']``
    work.  The node and edge frames are handed to the block at construction:
    four ``g.srcdata[k] = v`` assignments went through DGL's per-call checks
    and cost as much again as building the graph (0.12 vs 0.056 ms per block).
    """
    from dgl.frame import Frame

    dgl = _dgl()
    src = {dgl.NID: block.src_ids, **block.srcdata}
    dst = {dgl.NID: block.dst_ids, **block.dstdata}
    edges = {} if block.edge_ids is None else {dgl.EID: block.edge_ids}
    edges.update(block.edata)  # prefetch_edge_feats: blocks[i].edata[name]
    return _csc_block(block, [Frame(src, num_rows=block.num_src), Frame(dst, num_rows=block.num_dst)],
                      [Frame(edges, num_rows=block.num_edges)])


_ALL_FORMATS = ["coo", "csr", "csc"]


def _csc_block(block: Block, node_frames=None, edge_frames=None):
    """A ``dgl.Block`` over ``block``'s CSC arrays, shared without copies (empty data unless frames are given).

    Same graph as ``dgl.create_block({("_N", "_E", "_N"): ("csc", (indptr, indices, []))},
    num_src_nodes=..., num_dst_nodes=...)``, built straight from the unit-graph
    index: ``create_block``'s generic path (dict parsing, a ``max`` over the
    indices to check the node counts, a relation-graph wrapper) cost ~0.4 ms
    per block on R-MAT batches, a quarter of the loader's per-batch time.
    The sampler's local ids are < num_src by construction, so nothing is lost
    by skipping the check; ``indptr`` is still checked to match ``num_dst``.
    """
    from dgl import heterograph_index
    from dgl.heterograph import DGLBlock

    indptr, indices = block.indptr, block.indices
    if indptr.dtype != torch.int64 or indices.dtype != torch.int64:
        indptr, indices = indptr.to(torch.int64), indices.to(torch.int64)
    if indptr.shape[0] != block.num_dst + 1:
        raise ValueError(f"block indptr has {indptr.shape[0]} entries, expected num_dst + 1 = {block.num_dst + 1}")
    empty = torch.empty(0, dtype=torch.int64, device=indptr.device)
    # Two node types (SRC/_N, DST/_N) in one unit graph: exactly what a block is.
    gidx = heterograph_index.create_unitgraph_from_csr(2, block.num_src, block.num_dst, indptr, indices, empty,
                                                       _ALL_FORMATS, True)
    return DGLBlock(gidx, (["_N"], ["_N"]), ["_E"], node_frames=node_frames, edge_frames=edge_frames)


def to_dgl_blocks(blocks: Sequence[Block]) -> list:
    """:func:`to_dgl_block` for every layer."""
    return [to_dgl_block(b) for b in blocks]


def dglgraph_csc_tensors(g) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """In-edge CSC of a homogeneous DGLGraph as CPU tensors, without copies where DGL allows.

    ``adj_tensors('csc')`` builds the CSC format once and keeps it in the graph
    (DGL's own NeighborSampler does the same), then hands out views of it.
    Returns ``indptr`` int64 [num_nodes + 1] (an int32 graph's is widened: the
    sampler's row spans are int64), ``indices`` int32/int64 [num_edges]
    source ids in CSC order and ``eids`` [num_edges], the DGL edge id of each
    CSC position (what a block's ``edata[dgl.EID]`` must hold).
    """
    if len(g.ntypes) != 1 or len(g.etypes) != 1:
        raise ValueError(f"expected a homogeneous graph, got ntypes={g.ntypes} etypes={g.etypes}")
    indptr, indices, eids = g.adj_tensors("csc")
    return indptr.cpu().to(torch.int64), indices.cpu(), eids.cpu()


def dglgraph_to_csc(g) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """In-edge CSC of a homogeneous DGLGraph.

    Returns
    -------
    indptr : int64 [num_nodes + 1]; indices : int64 [num_edges] source node ids
    (in-neighbours of each node); eids : int64 [num_edges] DGL edge ids in CSC order
    """
    if len(g.ntypes) != 1 or len(g.etypes) != 1:
        raise ValueError(f"expected a homogeneous graph, got ntypes={g.ntypes} etypes={g.etypes}")
    indptr, indices, eids = g.adj_tensors("csc")
    return (indptr.cpu().numpy().astype(np.int64, copy=False),
            indices.cpu().numpy().astype(np.int64, copy=False),
            eids.cpu().numpy().astype(np.int64, copy=False))


def csc_to_dglgraph(indptr: np.ndarray, indices: np.ndarray, num_nodes: int | None = None):
    """A DGLGraph with edges ``indices[p] -> v`` for p in row v (inverse of :func:`dglgraph_to_csc`)."""
    dgl = _dgl()
    indptr = np.asarray(indptr, dtype=np.int64)
    n = indptr.shape[0] - 1 if num_nodes is None else num_nodes
    dst = np.repeat(np.arange(indptr.shape[0] - 1, dtype=np.int64), np.diff(indptr))
    src = np.asarray(indices, dtype=np.int64)
    return dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=n)
