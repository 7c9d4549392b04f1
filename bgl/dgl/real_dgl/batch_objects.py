"""The DGL objects a batch hands the trainer besides its blocks: typed pair graphs, and each block's CSR.

Kept beside :mod:`bgl.dgl.real_dgl.blocks` (which builds the blocks themselves) and importing DGL only inside
its functions, as that module does, so a loader without DGL never loads it.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional

import torch

from .blocks import ALL_FORMATS, _add_lazy_fields, frame_of, int64_index, with_index_and_frames


def dgl_blocks(blocks, schema, graph, type_names: tuple[str, str], with_csr: bool) -> list:
    """``dgl.Block`` s of bgl blocks (typed when ``schema`` is given:
    :func:`~bgl.dgl.real_dgl.blocks.to_dgl_hetero_block`, else :func:`~bgl.dgl.real_dgl.blocks.to_dgl_blocks`),
    with each block's CSR built when ``with_csr``."""
    from .blocks import to_dgl_blocks, to_dgl_hetero_block

    if schema is not None:
        out = [to_dgl_hetero_block(b, schema, graph) for b in blocks]
    else:
        out = to_dgl_blocks(blocks, graph, type_names)
    if with_csr:
        build_backward_csr(out)
    return out


def build_backward_csr(blocks) -> None:
    """Build every relation's CSR of each DGL block (DGL keeps it in the block).

    A block comes as a CSC (:mod:`bgl.dgl.real_dgl.blocks`), which the forward pass's message passing reads;
    its backward reads the CSR.  COO is left to DGL, built only by a model that asks for it (16 B per
    edge a batch would otherwise hold in the thread pipeline's queue).

    One call of DGL's C function per relation, the one ``adj_tensors("csr")`` makes: ``adj_tensors`` then
    wraps the three arrays as tensors through DLPack and reads each one's shape through ctypes, for
    nothing here (0.36 against 0.15 ms a Cora paper-word batch of 2 blocks x 3 relations), and this runs
    in the producer thread holding the GIL, which the trainer waits for (bench/results/hetero.md).
    """
    from dgl.heterograph_index import _CAPI_DGLHeteroGetAdj

    for b in blocks:
        index = b._graph
        for etype_id in range(len(b.canonical_etypes)):
            _CAPI_DGLHeteroGetAdj(index, etype_id, False, "csr")


def to_dgl_hetero_pair_graph(edges: dict, node_ids: dict, edge_ids: Optional[dict] = None, graph=None):
    """A heterogeneous ``dgl.DGLGraph`` of a typed batch's pairs, as DGL's ``EdgePredictionSampler``
    makes it: ``edges`` ``{canonical etype: (src, dst)}`` per-type local ids for EVERY edge type of the
    graph (empty where unused), ``node_ids`` ``{ntype: type-local ids}`` as ``ndata[dgl.NID]``,
    ``edge_ids`` ``{canonical etype: ids}`` as ``edata[dgl.EID]`` (positive pairs).  ``graph`` (the
    heterogeneous DGLGraph sampled in place; positive pairs) adds its other node fields by ``NID`` and
    edge fields by ``EID`` as lazy columns, as DGL's positive pair graph (an edge subgraph) carries them.

    The same graph as ``dgl.heterograph(edges, num_nodes_dict=...)`` with those fields assigned (DGL's
    sorted types and relations, COO built, every format allowed), made straight from the heterograph
    index with its frames handed over at construction, as :func:`to_dgl_hetero_block` builds blocks:
    ``dgl.heterograph``'s generic path (argument parsing, a ``max`` over each relation's ids, a
    metagraph per call, a device move) plus the per-type field checks cost ~0.75 ms per pair graph,
    1.5 ms of a ~10 ms typed batch on the sasrec user-item graph.  The local ids come from the
    batch's compaction, so they are below the node counts by construction.
    """
    import dgl
    from dgl import heterograph_index

    skeleton = _pair_skeleton(tuple(node_ids), tuple(edges))
    counts = {nt: int(ids.shape[0]) for nt, ids in node_ids.items()}
    rel_graphs, edge_frames = [], []
    for c in skeleton.relations:
        s, d = edges[c]
        if s.dtype != torch.int64 or d.dtype != torch.int64:
            s, d = s.to(torch.int64), d.to(torch.int64)
        rel_graphs.append(heterograph_index.create_unitgraph_from_coo(
            1 if c[0] == c[2] else 2, counts[c[0]], counts[c[2]], s.contiguous(), d.contiguous(), ALL_FORMATS))
        ids = None if edge_ids is None else edge_ids.get(c)
        fields = {} if ids is None else {dgl.EID: ids}
        if graph is not None and ids is not None:
            _add_lazy_fields(fields, graph.edges[c].data, ids)
        edge_frames.append(frame_of(fields, int(s.shape[0])))
    node_frames = []
    for nt in skeleton.ntypes:
        fields = {dgl.NID: node_ids[nt]}
        if graph is not None:
            _add_lazy_fields(fields, graph.nodes[nt].data, node_ids[nt])
        node_frames.append(frame_of(fields, counts[nt]))
    gidx = heterograph_index.create_heterograph_from_relations(
        skeleton.metagraph, rel_graphs, int64_index([counts[nt] for nt in skeleton.ntypes]))
    return with_index_and_frames(skeleton.template, gidx, node_frames, edge_frames)


@dataclass(frozen=True)
class _PairSkeleton:
    """DGL's node type and relation order of a typed pair graph, its metagraph, and an empty ``DGLGraph``
    whose type bookkeeping each pair graph copies (as :class:`_HeteroSkeleton` does for blocks)."""

    ntypes: list
    relations: list
    metagraph: object
    template: object


@functools.lru_cache(maxsize=16)
def _pair_skeleton(ntypes: tuple, canonical_etypes: tuple) -> _PairSkeleton:
    from dgl import heterograph_index
    from dgl.heterograph import DGLGraph

    metagraph, names, etypes, relations = heterograph_index.create_metagraph_index(ntypes, canonical_etypes)
    no_edges = torch.zeros(0, dtype=torch.int64)
    empty_rels = [heterograph_index.create_unitgraph_from_coo(1 if c[0] == c[2] else 2, 0, 0, no_edges, no_edges,
                                                              ALL_FORMATS) for c in relations]
    template = DGLGraph(heterograph_index.create_heterograph_from_relations(
        metagraph, empty_rels, int64_index([0] * len(names))), names, etypes)
    return _PairSkeleton(names, relations, metagraph, template)
