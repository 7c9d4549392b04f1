"""A ``bgl.dgl`` graph as ``bgl.DataLoader``'s graph: read in place, batches as ``bgl.dgl`` graphs.

The core loader reads a frontend's graph only through the edge's choice
(:mod:`bgl.dgl.frontend_choice`); for a ``bgl.dgl.DGLGraph`` that choice is this module's two
objects, the second DGL face beside real DGL's (:mod:`bgl.dgl.real_dgl`):

* :class:`BglGraphReader` hands the core the graph's own arrays: a homogeneous graph's cached
  in-edge CSC (``indices`` and the CSC's edge ids are the graph's tensors, zero copy; an int32
  ``indptr`` is widened, 8 B a node), its ``ndata`` feature and label tensors (zero copy) and its
  ``edata`` (:func:`graph_arrays`); a typed graph is read by the core's
  :meth:`bgl.sources.hetero.TypedArrays.from_dglgraph` (per-type features are views);
* :class:`BglBatchFrontend` turns each batch's core :class:`~bgl.blocks.Block` s into ``bgl.dgl``
  blocks (:func:`bgl.dgl.block_from_bgl`, index tensors shared) and pair graphs into ``bgl.dgl``
  graphs, and gives them the graph's fields as DGL's loader does: every ``ndata`` field into
  ``blocks[0].srcdata``, ``blocks[-1].dstdata`` and the pair graphs' ``ndata``, every ``edata``
  field into each block's ``edata``, each as rows ``NID`` / ``EID`` gathered when first read
  (:class:`bgl.dgl.frames.RowsOnRead`, as DGL's lazy columns).

``bgl.DataLoader(g, ...)`` and ``bgl.dgl.dataloading.DataLoader(g, ...)`` are then one code path.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np
import torch

from ..loader.graph_arrays import GraphArrays

NID = EID = "_ID"


def is_bgl_dgl_graph(obj: Any) -> bool:
    """True for a ``bgl.dgl.DGLGraph`` (not a block)."""
    from .heterograph import DGLGraph

    return isinstance(obj, DGLGraph) and not obj.is_block


def csc_tensors(g) -> tuple[torch.Tensor, torch.Tensor, Optional[torch.Tensor]]:
    """``(indptr int64 [n + 1], indices [E], eids [E] or None)``: the in-edge CSC a homogeneous
    ``bgl.dgl`` graph caches (built on first use, kept in the graph), on the CPU; ``eids`` is
    None when CSC positions are the edge ids.  ``indices`` and ``eids`` are the graph's tensors."""
    csc = g._relation(None).csc()
    indptr = csc.indptr.cpu()
    if indptr.dtype != torch.int64:
        indptr = indptr.to(torch.int64)  # the sampler's row spans are int64
    return indptr, csc.indices.cpu(), None if csc.eids is None else csc.eids.cpu()


def graph_arrays(g, feat_key: Optional[str], label_key: Optional[str]) -> GraphArrays:
    """A homogeneous ``bgl.dgl`` graph as the core loader's graph, sharing its tensors (module doc).

    ``ndata[feat_key]`` serves as the features when it is a 2-D float tensor, ``ndata[label_key]``
    as the labels when it is 1-D integer; any other field is attached per batch instead.
    """
    indptr, indices, eids = csc_tensors(g)
    feat = label = None
    num_classes = 0
    ndata = g.ndata
    if feat_key in ndata:
        value = ndata[feat_key].detach().cpu()
        if value.dim() == 2 and value.is_floating_point():
            feat = value if value.is_contiguous() else value.contiguous()
    if label_key in ndata:
        value = ndata[label_key].detach().cpu()
        if value.dim() == 1 and not value.is_floating_point() and value.dtype != torch.bool:
            label = value if value.dtype == torch.int64 and value.is_contiguous() else value.to(torch.int64).contiguous()
            num_classes = int(label.max()) + 1 if label.numel() else 0
    edata = {k: v.detach().cpu() for k, v in g.edata.items() if k != EID}
    return GraphArrays(indptr, indices, feat, label, num_classes=num_classes, name="bgl.dgl graph",
                       edge_ids=eids, edata=edata)


class BglGraphReader:
    """The core's :class:`~bgl.loader.batch_frontend.GraphReader` for a one-type ``bgl.dgl`` graph (no state)."""

    def arrays(self, graph, feat_key: Optional[str], label_key: Optional[str]) -> GraphArrays:
        """:func:`graph_arrays`."""
        return graph_arrays(graph, feat_key, label_key)

    def find_edges(self, graph, eids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(src, dst)`` int64 of the graph's edges ``eids`` (its own edge ids)."""
        src, dst = graph.find_edges(torch.from_numpy(np.asarray(eids, dtype=np.int64)))
        return src.cpu().numpy().astype(np.int64), dst.cpu().numpy().astype(np.int64)

    def type_names(self, graph) -> tuple[str, str]:
        """(node type, edge type) of a one-type graph."""
        return str(graph.ntypes[0]), str(graph.etypes[0])

    def structure(self, graph) -> tuple:
        """The graph's relation objects (its in-place edits, :mod:`bgl.dgl.mutation`, replace them) and its
        node and edge counts."""
        return tuple(id(rel) for rel in graph._rels.values()), graph.num_nodes(), graph.num_edges()


class BglBatchFrontend:
    """:class:`bgl.loader.batch_frontend.BatchFrontend` building ``bgl.dgl`` blocks and pair graphs.

    ``graph``: the ``bgl.dgl`` graph the loader reads in place, whose other fields each batch gets
    (module doc); None (a store, graph servers): the batch's own fields only.  The graph stays in the
    trainer's process: a pickled copy (a stage process) drops it, as the transfer stage drops its own.
    """

    name = "bgl.dgl"

    def __init__(self, graph=None):
        self.graph = graph

    def blocks(self, blocks: list, schema, graph, type_names: tuple[str, str], with_csr: bool) -> list:
        """``bgl.dgl`` blocks of one batch's core blocks (typed ones carry ``schema``), with the graph's
        node fields on the first block's sources and the last one's destinations, its edge fields on each."""
        from .convert import block_from_bgl

        out = [block_from_bgl(b) for b in blocks]
        if self.graph is not None:
            attach_block_fields(self.graph, out)
        return out

    def pair_graph(self, pair, graph=None) -> Any:
        """A ``bgl.dgl`` graph of a bgl pair graph; ``graph`` (the graph read in place, given for the positive
        pair graph only) adds its node fields and, by ``EID``, its edge fields, read on use: DGL's positive pair
        graph is an edge subgraph of the graph, its negative one carries only ``NID``."""
        from .convert import graph_from_pair

        out = graph_from_pair(pair)
        if graph is not None:
            _fill(out.ndata, graph.ndata)
            _fill(out.edata, graph.edata)  # nothing without EID (_fill reads the ids under "_ID")
        return out

    def typed_pair_graph(self, edges: dict, node_ids: dict, edge_ids: Optional[dict], graph=None) -> Any:
        """A ``bgl.dgl`` heterograph of a typed batch's pairs: every edge type of the graph, every node type's
        batch nodes, ``NID`` per node type, ``EID`` per edge type on the positive one, as DGL's
        ``EdgePredictionSampler`` makes it (its tensors shared); the positive one (``edge_ids`` given) with
        this frontend's graph's other node and edge fields, read on use, as DGL's positive pair graph (an
        edge subgraph) has them (``graph``: the same graph, where the caller has it)."""
        from .convert import heterograph

        g = heterograph(dict(edges), num_nodes_dict={nt: int(ids.shape[0]) for nt, ids in node_ids.items()})
        for nt, ids in node_ids.items():
            g.nodes[nt].data[NID] = ids
        for c, ids in (edge_ids or {}).items():
            g.edges[c].data[EID] = ids
        source = graph if graph is not None else self.graph
        if source is not None and edge_ids is not None:
            for nt in g.ntypes:
                _fill(g.nodes[nt].data, source.nodes[nt].data)
            for c in g.canonical_etypes:
                _fill(g.edges[c].data, source.edges[c].data)  # nothing where the type has no EID
        return g

    def __getstate__(self) -> dict:
        return {"graph": None}

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.graph is self.graph

    def __hash__(self) -> int:
        return hash((type(self), id(self.graph)))


def attach_block_fields(g, blocks: list) -> None:
    """Every ``ndata`` / ``edata`` field of ``g`` the ``bgl.dgl`` blocks do not carry yet, as rows
    ``NID`` / ``EID`` read on first use (module doc: which sides get them)."""
    first, last = blocks[0], blocks[-1]
    for nt in first.srctypes:
        _fill(first.srcnodes[nt].data, g.nodes[nt].data)
    for nt in last.dsttypes:
        _fill(last.dstnodes[nt].data, g.nodes[nt].data)
    for b in blocks:
        for cet in b.canonical_etypes:
            target = b.edges[cet].data
            if EID in target:
                _fill(target, g.edges[cet].data)


def _fill(target, source) -> None:
    """Each field of ``source`` (a graph's one-type data view) that ``target`` (a batch's) lacks, as
    rows ``target[NID]`` read when first used (:class:`bgl.dgl.frames.RowsOnRead`, as DGL's loader
    gives its blocks the graph's fields): a field the model never reads is never gathered."""
    ids = target[NID] if NID in target else None
    if ids is None:
        return
    frame = target.single_frame()
    for key, column in source.items():
        if key not in target:
            frame.set_rows_on_read(key, column, ids)
