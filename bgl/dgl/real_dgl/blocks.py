"""bgl blocks -> ``dgl.Block`` (typed: heterogeneous blocks) and pair graphs -> ``DGLGraph``, on real DGL.

Part of the DGL face (:mod:`bgl.dgl.real_dgl`): DGL is imported inside the functions, so importing this
module needs no DGL; the core (:mod:`bgl.loader`) reaches it only through the batch frontend the edge
hands it (:mod:`bgl.loader.batch_frontend`).  Was ``bgl/dgl_adapter.py`` (still importable under that name).
"""
from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from ...blocks import Block


def _dgl():
    import dgl  # noqa: WPS433 - imported on use so importing this module needs no DGL

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
    dgl = _dgl()
    src = {dgl.NID: block.src_ids, **block.srcdata}
    dst = {dgl.NID: block.dst_ids, **block.dstdata}
    edges = {**block.edata} if block.edge_ids is None else {dgl.EID: block.edge_ids, **block.edata}
    if graph is not None:
        _add_lazy_fields(src, graph.ndata, block.src_ids)
        _add_lazy_fields(dst, graph.ndata, block.dst_ids)
        if block.edge_ids is not None:
            _add_lazy_fields(edges, graph.edata, block.edge_ids)
    return _csc_block(block, [frame_of(src, block.num_src), frame_of(dst, block.num_dst)],
                      [frame_of(edges, block.num_edges)], type_names=type_names)


def _add_lazy_fields(frame: dict, fields, ids: torch.Tensor) -> None:
    """Add each of ``fields`` (a DGLGraph's ndata/edata) not already in ``frame`` as rows ``ids``, read on use."""
    from dgl.frame import Column

    for key in fields.keys():
        if key in frame:
            continue
        storage = fields[key]
        index = ids if ids.device == storage.device else ids.to(storage.device)
        frame[key] = Column(storage, None, index, ids.device if ids.device != storage.device else None)


def frame_of(fields: dict, num_rows: int):
    """A DGL ``Frame`` of ``fields`` (``{name: tensor, or a lazy Column made for this frame}``), ``num_rows`` rows.

    ``Frame(fields)`` clones every ``Column`` it is handed, so that two frames never share one, and
    asks every column its length: a block's lazy columns (:func:`_add_lazy_fields`, made afresh for
    each frame) were built twice, ~46 ``Column`` objects a batch on PubMed's five ``ndata`` fields, a
    third of the DGL objects' Python cost in the trainer's thread.  Here the Columns are taken as
    they are (each is this frame's own) and only the tensors' row counts are checked (a lazy
    column's index is the frame's ids, its length by construction).
    """
    from dgl.frame import Column, Frame

    columns = {}
    for key, value in fields.items():
        if not isinstance(value, Column):
            if value.shape[0] != num_rows:
                raise ValueError(f"field {key!r} has {value.shape[0]} rows, the frame {num_rows}")
            value = Column(value)
        columns[key] = value
    frame = Frame(None, num_rows)
    frame._columns = columns
    return frame


ALL_FORMATS = ["coo", "csr", "csc"]


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
    eids = _positions(indices.shape[0], indptr.device)
    # Two node types (SRC/ntype, DST/ntype) in one unit graph: exactly what a block is.
    gidx = heterograph_index.create_unitgraph_from_csr(2, block.num_src, block.num_dst, indptr, indices, eids,
                                                       ALL_FORMATS, True)
    ntype, etype = type_names
    return DGLBlock(gidx, ([ntype], [ntype]), [etype], node_frames=node_frames, edge_frames=edge_frames)


def to_dgl_blocks(blocks: Sequence[Block], graph=None, type_names: tuple[str, str] = ("_N", "_E")) -> list:
    """:func:`to_dgl_block` for every layer."""
    return [to_dgl_block(b, graph, type_names) for b in blocks]


def to_dgl_hetero_block(block: Block, schema, graph=None):
    """A heterogeneous ``dgl.Block`` from a typed bgl block (global ids, ``etypes`` per edge).

    Node type ``t``'s src (dst) nodes are the block's src (dst) nodes of that type, in
    order, so each type's dst nodes lead its src nodes, as DGL requires; ``dgl.NID`` holds
    type-local ids and ``dgl.EID`` each relation's edge ids.  Per-type ``srcdata``/``dstdata``
    (``{key: {ntype: rows}}``) are attached.  Each relation is a CSC (its edges keep the
    block's CSC order, so their dst positions never decrease), with a real edge-id array, as
    the untyped blocks are: no COO -> CSC conversion in the model.  ``graph`` (the heterogeneous
    DGLGraph the block was sampled from in place) adds each type's and relation's other
    ``ndata``/``edata`` fields as lazy columns, as DGL's loader gives them (read on first use).
    The block's ``edata`` rows (``prefetch_edge_feats`` of a store or servers, aligned with its
    edges) go to every relation, each its own rows: ``edata[name]`` is DGL's ``{canonical etype: rows}``.

    The same graph as ``dgl.create_block`` of one CSC per relation with every node type's
    src and dst counts (types, relations and their order, edges, frames), built straight
    from the heterograph index as :func:`_csc_block` builds the untyped one:
    ``create_block``'s generic path (per-relation wrapper graphs, a ``max`` over each
    relation's indices, per-field frame assignments) cost ~2.5 ms of a ~3 ms block on Cora's
    paper-word batches.  Two numba passes (:mod:`bgl.loader._typed_block_kernels`, O(num_src +
    num_edges)) split the block by type and relation (the first one's result comes with the block,
    ``block.type_split``, where the loader split the same ids for ``input_nodes``); the metagraph is built once per schema.
    Cost per block beyond DGL's index: 8 B per src node (type-local ids) and 24 B per edge
    (relation-local indices, CSC positions, edge ids), plus 8 B per (relation, dst node).
    """
    from dgl import heterograph_index

    dgl = _dgl()
    if block.schema is None:
        block.schema = schema
    skeleton = _hetero_skeleton(tuple(schema.ntypes), tuple(schema.canonical_etypes))
    parts = _typed_block_parts(block, schema, skeleton)
    device = block.src_ids.device
    # One host-to-device copy per array; each relation and type takes a view of it.
    rel_indptr, rel_indices, type_ids, edge_ids = (torch.from_numpy(a).to(device) for a in parts.arrays)
    unit_eids = _positions(max(parts.rel_edges, default=0), device)
    # prefetch_edge_feats rows, in relation order (one gather per array); with the graph, only on the
    # relations that have the field, as DGL's blocks carry it
    edata = {k: v[torch.from_numpy(parts.rel_pos).to(v.device)] for k, v in block.edata.items()}
    rel_graphs, edge_frames = [], []
    for r in skeleton.rel_order:
        lo, n = parts.edge_start[r], parts.rel_edges[r]
        csc = rel_indptr[parts.indptr_start[r]:parts.indptr_start[r + 1]]
        rel_graphs.append(heterograph_index.create_unitgraph_from_csr(
            2, parts.num_src[skeleton.rel_src_type[r]], csc.shape[0] - 1, csc, rel_indices[lo:lo + n],
            unit_eids[:n], ALL_FORMATS, True))
        fields = {dgl.EID: edge_ids[lo:lo + n]}
        rel_data = None if graph is None else graph.edges[tuple(schema.canonical_etypes[r])].data
        # LABOR's edge_weights are the sampler's own, on every relation; a graph's arrays where it has them
        fields.update((k, v[lo:lo + n]) for k, v in edata.items()
                      if rel_data is None or k in rel_data or k == "edge_weights")
        if graph is not None:
            _add_lazy_fields(fields, rel_data, fields[dgl.EID])
        edge_frames.append(frame_of(fields, n))
    src_frames, dst_frames = [], []
    for nt, t in zip(skeleton.ntypes, skeleton.type_order):
        n_src, n_dst, lo = parts.num_src[t], parts.num_dst[t], parts.type_start[t]
        ids = type_ids[lo:lo + n_src]
        src, dst = _type_fields(dgl.NID, ids, block.srcdata, nt), _type_fields(dgl.NID, ids[:n_dst], block.dstdata, nt)
        if graph is not None:
            fields = graph.nodes[nt].data  # a view DGL builds per call (~15 us)
            _add_lazy_fields(src, fields, ids)
            _add_lazy_fields(dst, fields, ids[:n_dst])
        src_frames.append(frame_of(src, n_src))
        dst_frames.append(frame_of(dst, n_dst))
    counts = [parts.num_src[t] for t in skeleton.type_order] + [parts.num_dst[t] for t in skeleton.type_order]
    return skeleton.block(heterograph_index.create_heterograph_from_relations(
        skeleton.metagraph, rel_graphs, int64_index(counts)), src_frames + dst_frames, edge_frames)


@dataclass
class _TypedBlockParts:
    """A typed block split by type and relation (schema order), as NumPy arrays and Python ints.

    ``arrays`` = (relation indptrs back to back, relation indices back to back, type-local ids type
    after type, edge ids in relation order); relation ``r`` owns ``indptr_start[r]:indptr_start[r+1]``
    of the first and ``rel_edges[r]`` entries from ``edge_start[r]`` of the others; type ``t`` owns
    ``num_src[t]`` type-local ids from ``type_start[t]``, of which the first ``num_dst[t]`` are dst nodes.
    ``rel_pos``: each relation-order edge's position in the block (where its ``edata`` rows are).
    """

    arrays: tuple
    indptr_start: list
    edge_start: list
    rel_edges: list
    type_start: list
    num_src: list
    num_dst: list
    rel_pos: np.ndarray = None


def _typed_block_parts(block: Block, schema, skeleton) -> _TypedBlockParts:
    """Split ``block`` with the two numba passes; ValueError naming the first bad node, edge or row."""
    from ...loader._typed_block_kernels import relation_csc, type_positions

    if block.etypes is None:
        raise ValueError("a typed block needs etypes (the relation id of each edge)")
    indptr = block.indptr.cpu().numpy()
    if indptr[0] != 0 or indptr[-1] != block.num_edges:
        raise ValueError(f"block indptr must run from 0 to num_edges = {block.num_edges}, "
                         f"got {int(indptr[0])} .. {int(indptr[-1])}")
    split = block.type_split  # the loader's split of the same ids for input_nodes (bgl.loader.typed)
    if split is not None and split.of is block.src_ids:
        src_type, local, num_src, num_dst, type_ids = (split.src_type, split.local, split.num_src, split.num_dst,
                                                       split.type_ids)
    else:
        src_type, local, num_src, num_dst, type_ids, bad = type_positions(
            block.src_ids.cpu().numpy(), block.num_dst, schema.offsets)
        if bad >= 0:
            raise ValueError(f"block src node {bad} has global id {int(block.src_ids[bad])}, outside the "
                             f"schema's [0, {schema.num_nodes})")
    own_ids = _NO_IDS if block.edge_ids is None else np.ascontiguousarray(block.edge_ids.cpu().numpy())
    edge_ids = np.empty(own_ids.shape[0], own_ids.dtype)  # the ids in relation order (relation_csc fills it)
    rel_indptr, rel_indices, rel_pos, indptr_start, edge_start, bad_edge, bad_row = relation_csc(
        indptr, block.indices.cpu().numpy(), block.etypes.cpu().numpy(), src_type, local, num_dst,
        skeleton.rel_src_type, skeleton.rel_dst_type, own_ids, edge_ids)
    if bad_row >= 0:
        raise ValueError(f"block indptr decreases or passes num_edges at dst row {bad_row}")
    if bad_edge >= 0:
        raise ValueError(f"block edge {bad_edge} (relation id {int(block.etypes[bad_edge])}) does not "
                         f"join nodes of its relation's types; relations {schema.canonical_etypes}")
    if block.edge_ids is None:
        edge_ids = rel_pos
    return _TypedBlockParts((rel_indptr, rel_indices, type_ids, edge_ids), indptr_start.tolist(),
                            edge_start.tolist(), np.diff(edge_start).tolist(),
                            [0] + np.cumsum(num_src).tolist(), num_src.tolist(), num_dst.tolist(), rel_pos)


_NO_IDS = np.empty(0, np.int64)  # a block without edge ids: relation_csc fills none


def _type_fields(nid_key, ids, data: dict, ntype: str) -> dict:
    """``{dgl.NID: ids, key: rows}`` of one node type from a typed block's ``{key: {ntype: rows}}``."""
    fields = {nid_key: ids}
    for key, per_type in data.items():
        if ntype in per_type:
            fields[key] = per_type[ntype]
    return fields


def int64_index(values: list):
    """DGL's int64 index of a short list of ints (what the heterograph index takes for node counts)."""
    from dgl import utils

    return utils.toindex(values, "int64")


def with_index_and_frames(template, gidx, node_frames: list, edge_frames: list):
    """A shallow copy of ``template`` (a ``DGLGraph`` or ``DGLBlock``) over heterograph index ``gidx``
    with these frames.

    The type names and maps a DGL graph derives from its metagraph depend on the schema only, and
    deriving them on every construction costs ~0.19 ms (a quarter of a small typed block): typed
    blocks and pair graphs copy a template of their schema instead, as DGL's own
    ``DGLGraph.to``/``formats``/``clone`` do.
    """
    out = copy.copy(template)
    out._graph = gidx
    out._node_frames = node_frames
    out._edge_frames = edge_frames
    return out


@dataclass(frozen=True)
class _HeteroSkeleton:
    """What every heterogeneous block of one schema shares: DGL's type and relation order, the metagraph,
    and an empty ``DGLBlock`` whose type bookkeeping each block copies.

    DGL sorts node types and canonical edge types (``create_block``'s deterministic order);
    ``type_order[i]`` / ``rel_order[i]`` is the schema index of DGL's i-th type / relation.
    """

    ntypes: list
    etypes: list
    type_order: tuple
    rel_order: tuple
    rel_src_type: np.ndarray
    rel_dst_type: np.ndarray
    metagraph: object
    template: object

    def block(self, gidx, node_frames: list, edge_frames: list):
        """A ``DGLBlock`` over heterograph index ``gidx`` with these frames (DGL's order: src types, dst types).

        ``DGLBlock(gidx, ...)`` derives the canonical edge types and type maps from the metagraph on
        every call (~0.19 ms, a quarter of a Cora paper-word block); they depend on the schema only,
        so each block is a shallow copy of the template with its own index and frames -- what DGL's
        own ``DGLGraph.to``/``formats``/``clone`` do.
        """
        return with_index_and_frames(self.template, gidx, node_frames, edge_frames)


@functools.lru_cache(maxsize=16)
def _hetero_skeleton(ntypes: tuple, canonical_etypes: tuple) -> _HeteroSkeleton:
    from dgl import graph_index, heterograph_index
    from dgl.heterograph import DGLBlock

    type_order = tuple(sorted(range(len(ntypes)), key=lambda t: ntypes[t]))
    rel_order = tuple(sorted(range(len(canonical_etypes)), key=lambda r: canonical_etypes[r]))
    sorted_pos = {ntypes[t]: i for i, t in enumerate(type_order)}
    type_id = {nt: t for t, nt in enumerate(ntypes)}
    rel_src = np.array([type_id[c[0]] for c in canonical_etypes], np.int64)
    rel_dst = np.array([type_id[c[2]] for c in canonical_etypes], np.int64)
    # Metagraph nodes: DGL's sorted src types, then the same types again as dst types.
    meta_src = [sorted_pos[canonical_etypes[r][0]] for r in rel_order]
    meta_dst = [len(ntypes) + sorted_pos[canonical_etypes[r][2]] for r in rel_order]
    metagraph = graph_index.from_coo(2 * len(ntypes), meta_src, meta_dst, True)
    names = [ntypes[t] for t in type_order]
    etypes = [canonical_etypes[r][1] for r in rel_order]
    empty = torch.zeros(1, dtype=torch.int64)
    no_edges = torch.zeros(0, dtype=torch.int64)
    empty_rels = [heterograph_index.create_unitgraph_from_csr(2, 0, 0, empty, no_edges, no_edges, ALL_FORMATS, True)
                  for _ in rel_order]
    template = DGLBlock(heterograph_index.create_heterograph_from_relations(
        metagraph, empty_rels, int64_index([0] * (2 * len(ntypes)))), (names, names), etypes)
    return _HeteroSkeleton(names, etypes, type_order, rel_order, rel_src, rel_dst, metagraph, template)


def to_dgl_pair_graph(pair, graph=None):
    """A ``dgl.DGLGraph`` of a bgl :class:`~bgl.loader.seeds.edges.PairGraph`: the same edges over
    ``num_nodes()`` nodes, its ``ndata`` (``dgl.NID`` and input features) and (positive pairs)
    ``edata[dgl.EID]``, as DGL's ``EdgePredictionSampler`` builds them with ``compact_graphs``;
    ``graph`` (the DGLGraph sampled in place, for the positive pairs) adds its other ``ndata`` /
    ``edata`` fields as lazy columns, as DGL's positive pair graph (an edge subgraph) has them.

    The same graph as ``dgl.graph((src, dst), num_nodes=n)`` with those fields assigned (one node
    type ``_N``, one edge type ``_E``, COO built, every format allowed), made straight from the
    unit-graph index with its frames handed over at construction, as :func:`_csc_block` does for
    blocks: ``dgl.graph``'s generic path (argument parsing, two ``max`` over the ids to check
    ``num_nodes``, a device move) plus the per-key ``ndata`` checks cost 0.6 ms per pair graph,
    1.2 ms of a 9 ms Cora link-prediction batch.  Local ids come from the batch's compaction,
    so they are below ``num_nodes`` by construction and nothing is lost by skipping the check.
    """
    from dgl import heterograph_index
    from dgl.heterograph import DGLGraph

    dgl = _dgl()
    src, dst = pair.edges()
    if src.dtype != torch.int64 or dst.dtype != torch.int64:
        src, dst = src.to(torch.int64), dst.to(torch.int64)
    n = pair.num_nodes()
    gidx = heterograph_index.create_unitgraph_from_coo(1, n, n, src.contiguous(), dst.contiguous(), ALL_FORMATS)
    nodes = {dgl.NID if key == "_ID" else key: value for key, value in pair.ndata.items()}
    edges = {dgl.EID: pair.edata["_ID"]} if "_ID" in pair.edata else {}
    if graph is not None:
        _add_lazy_fields(nodes, graph.ndata, nodes[dgl.NID])
        if dgl.EID in edges:
            _add_lazy_fields(edges, graph.edata, edges[dgl.EID])
    return DGLGraph(gidx, ["_N"], ["_E"], node_frames=[frame_of(nodes, n)],
                    edge_frames=[frame_of(edges, int(src.shape[0]))])


def _positions(n: int, device) -> torch.Tensor:
    """int64 [n] ``0..n-1`` on ``device``, filled by NumPy on the host: ``torch.arange`` splits a long
    range over torch's intra-op threads, which spin when the box is busy (3 ms a call for a typed
    batch's ~10^5 edge ids in a profile taken under load, against ~0.05 ms serial)."""
    out = torch.from_numpy(np.arange(n, dtype=np.int64))
    return out if torch.device(device).type == "cpu" else out.to(device)
