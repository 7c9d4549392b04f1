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


def to_dgl_block(block: Block, graph=None, type_names: tuple[str, str] = ("_N", "_E")):
    """A ``dgl.Block`` with the same edges (CSC order), ``dgl.NID`` on src/dst, ``dgl.EID`` and the
    block's node and edge data.

    ``srcdata``/``dstdata``/``edata`` tensors of the bgl block are attached (shared, not
    copied), so ``blocks[0].srcdata['feat']`` and ``blocks[-1].dstdata['label']``
    work.  The node and edge frames are handed to the block at construction:
    four ``g.srcdata[k] = v`` assignments went through DGL's per-call checks
    and cost as much again as building the graph (0.12 vs 0.056 ms per block).

    ``graph`` (the DGLGraph the block was sampled from) adds every other field of its
    ``ndata`` to ``srcdata``/``dstdata`` and of its ``edata`` to ``edata``, as DGL's own
    loader does: lazy columns (DGL's copy-on-read ``Column``), so a field the model never
    reads costs no gather.  ``type_names`` = (node type, edge type) of a one-type graph.
    """
    from dgl.frame import Frame

    dgl = _dgl()
    src = {dgl.NID: block.src_ids, **block.srcdata}
    dst = {dgl.NID: block.dst_ids, **block.dstdata}
    edges = {**block.edata} if block.edge_ids is None else {dgl.EID: block.edge_ids, **block.edata}
    if graph is not None:
        _add_lazy_fields(src, graph.ndata, block.src_ids)
        _add_lazy_fields(dst, graph.ndata, block.dst_ids)
        if block.edge_ids is not None:
            _add_lazy_fields(edges, graph.edata, block.edge_ids)
    return _csc_block(block, [Frame(src, num_rows=block.num_src), Frame(dst, num_rows=block.num_dst)],
                      [Frame(edges, num_rows=block.num_edges)], type_names=type_names)


def _add_lazy_fields(frame: dict, fields, ids: torch.Tensor) -> None:
    """Add each of ``fields`` (a DGLGraph's ndata/edata) not already in ``frame`` as rows ``ids``, read on use."""
    from dgl.frame import Column

    for key in fields.keys():
        if key in frame:
            continue
        storage = fields[key]
        index = ids if ids.device == storage.device else ids.to(storage.device)
        frame[key] = Column(storage, None, index, ids.device if ids.device != storage.device else None)


def graph_type_names(g) -> tuple[str, str]:
    """(node type, edge type) of a one-type DGLGraph, e.g. ``("user", "follows")``."""
    return str(g.ntypes[0]), str(g.etypes[0])


_ALL_FORMATS = ["coo", "csr", "csc"]


def _csc_block(block: Block, node_frames=None, edge_frames=None, type_names=("_N", "_E")):
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
    # The CSC's edge-id array must be real: DGL's CPU SpMM/SDDMM kernels (libxsmm, used by
    # GATConv/GATv2Conv's backward) refuse a CSR without one ("Check notnull: edges").
    # Edge i of a block is CSC position i, as in the blocks DGL's own sampler makes.
    eids = torch.arange(indices.shape[0], dtype=torch.int64, device=indptr.device)
    # Two node types (SRC/ntype, DST/ntype) in one unit graph: exactly what a block is.
    gidx = heterograph_index.create_unitgraph_from_csr(2, block.num_src, block.num_dst, indptr, indices, eids,
                                                       _ALL_FORMATS, True)
    ntype, etype = type_names
    return DGLBlock(gidx, ([ntype], [ntype]), [etype], node_frames=node_frames, edge_frames=edge_frames)


def to_dgl_blocks(blocks: Sequence[Block], graph=None, type_names: tuple[str, str] = ("_N", "_E")) -> list:
    """:func:`to_dgl_block` for every layer."""
    return [to_dgl_block(b, graph, type_names) for b in blocks]


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


def to_dgl_hetero_block(block: Block, schema):
    """A heterogeneous ``dgl.Block`` from a typed bgl block (global ids, ``etypes`` per edge).

    Node type ``t``'s src (dst) nodes are the block's src (dst) nodes of that type, in
    order, so each type's dst nodes lead its src nodes, as DGL requires; ``dgl.NID`` holds
    type-local ids and ``dgl.EID`` each relation's edge ids.  Per-type ``srcdata``/``dstdata``
    (``{key: {ntype: rows}}``) are attached.  Each relation is handed to DGL as a CSC (its
    edges keep the block's CSC order, so their dst positions never decrease), with a real
    edge-id array, as the untyped blocks are: no COO -> CSC conversion in the model.
    """
    from .blocks import type_layout

    dgl = _dgl()
    if block.schema is None:
        block.schema = schema
    local_t, members, num_dst = type_layout(block)
    local = local_t.cpu().numpy()
    indptr, indices = block.indptr.cpu().numpy(), block.indices.cpu().numpy()
    etypes = block.etypes.cpu().numpy()
    src = block.src_ids.cpu().numpy()
    edge_ids = None if block.edge_ids is None else block.edge_ids.cpu().numpy()
    dst_of_edge = np.repeat(np.arange(block.num_dst, dtype=np.int64), np.diff(indptr))
    by_rel = np.argsort(etypes, kind="stable")  # relation after relation, CSC order inside each
    bounds = np.searchsorted(etypes[by_rel], np.arange(len(schema.edge_types) + 1))
    device = block.src_ids.device
    data, eids = {}, {}
    for r, canon in enumerate(schema.canonical_etypes):
        sel = by_rel[bounds[r]:bounds[r + 1]]
        nd = num_dst[canon[2]]
        rel_indptr = np.zeros(nd + 1, np.int64)
        np.cumsum(np.bincount(local[dst_of_edge[sel]], minlength=nd), out=rel_indptr[1:])
        data[canon] = ("csc", (torch.from_numpy(rel_indptr).to(device), torch.from_numpy(local[indices[sel]]).to(device),
                               torch.arange(sel.shape[0], dtype=torch.int64, device=device)))
        eids[canon] = torch.from_numpy(sel if edge_ids is None else edge_ids[sel]).to(device)
    out = dgl.create_block(data, num_src_nodes={nt: int(m.shape[0]) for nt, m in members.items()},
                           num_dst_nodes=num_dst, device=device)
    offsets = schema.offsets
    for t, nt in enumerate(schema.ntypes):
        ids = torch.from_numpy(src[members[nt].cpu().numpy()] - offsets[t]).to(device)
        out.srcnodes[nt].data[dgl.NID] = ids
        out.dstnodes[nt].data[dgl.NID] = ids[: num_dst[nt]]
    for key, per_type in block.srcdata.items():
        for nt, rows in per_type.items():
            out.srcnodes[nt].data[key] = rows
    for key, per_type in block.dstdata.items():
        for nt, rows in per_type.items():
            out.dstnodes[nt].data[key] = rows
    for canon, e in eids.items():
        out.edges[canon].data[dgl.EID] = e
    return out


def to_dgl_pair_graph(pair):
    """A ``dgl.DGLGraph`` of a bgl :class:`~bgl.loader.edge_seeds.PairGraph`: the same edges over
    ``num_nodes()`` nodes, its ``ndata`` (``dgl.NID`` and input features) and (positive pairs)
    ``edata[dgl.EID]``, as DGL's ``EdgePredictionSampler`` builds them with ``compact_graphs``.

    The same graph as ``dgl.graph((src, dst), num_nodes=n)`` with those fields assigned (one node
    type ``_N``, one edge type ``_E``, COO built, every format allowed), made straight from the
    unit-graph index with its frames handed over at construction, as :func:`_csc_block` does for
    blocks: ``dgl.graph``'s generic path (argument parsing, two ``max`` over the ids to check
    ``num_nodes``, a device move) plus the per-key ``ndata`` checks cost 0.6 ms per pair graph,
    1.2 ms of a 9 ms Cora link-prediction batch.  Local ids come from the batch's compaction,
    so they are below ``num_nodes`` by construction and nothing is lost by skipping the check.
    """
    from dgl import heterograph_index
    from dgl.frame import Frame
    from dgl.heterograph import DGLGraph

    dgl = _dgl()
    src, dst = pair.edges()
    if src.dtype != torch.int64 or dst.dtype != torch.int64:
        src, dst = src.to(torch.int64), dst.to(torch.int64)
    n = pair.num_nodes()
    gidx = heterograph_index.create_unitgraph_from_coo(1, n, n, src.contiguous(), dst.contiguous(), _ALL_FORMATS)
    nodes = {dgl.NID if key == "_ID" else key: value for key, value in pair.ndata.items()}
    edges = {dgl.EID: pair.edata["_ID"]} if "_ID" in pair.edata else {}
    return DGLGraph(gidx, ["_N"], ["_E"], node_frames=[Frame(nodes, num_rows=n)],
                    edge_frames=[Frame(edges, num_rows=int(src.shape[0]))])


def find_edges(g, eids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(src, dst)`` int64 of a DGLGraph's edges ``eids`` (its own edge ids)."""
    src, dst = g.find_edges(torch.from_numpy(np.asarray(eids, dtype=np.int64)).to(g.idtype))
    return src.cpu().numpy().astype(np.int64), dst.cpu().numpy().astype(np.int64)
