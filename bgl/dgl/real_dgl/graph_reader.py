"""A DGLGraph read in place, on real DGL: its arrays (CSC, features, labels, edge data), edge endpoints
and type names, and back.

Part of the DGL face (:mod:`bgl.dgl.real_dgl`).  The core never calls a DGLGraph's structure API itself:
:class:`DGLGraphReader` is the graph reader the edge (:mod:`bgl.dgl.frontend_choice`) hands the loader
for a DGLGraph (:class:`bgl.loader.batch_frontend.GraphReader`).  Was part of ``bgl/dgl_adapter.py``.
"""
from __future__ import annotations

import functools
import weakref
from typing import Any, Optional

import numpy as np
import torch

from ...loader.graph_arrays import GraphArrays, int64_labels
from ...loader.graph_derivations import derivations_of
from .blocks import _dgl


def graph_type_names(g) -> tuple[str, str]:
    """(node type, edge type) of a one-type DGLGraph, e.g. ``("user", "follows")``."""
    return str(g.ntypes[0]), str(g.etypes[0])


def dglgraph_csc_tensors(g) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """In-edge CSC of a homogeneous DGLGraph as CPU tensors, without copies where DGL allows.

    ``adj_tensors('csc')`` builds the CSC format once and keeps it in the graph
    (DGL's own NeighborSampler does the same), then hands out views of it.
    Returns ``indptr`` int64 [num_nodes + 1] (an int32 graph's is widened: the
    sampler's row spans are int64), ``indices`` int32/int64 [num_edges]
    source ids in CSC order and ``eids`` [num_edges], the DGL edge id of each
    CSC position (what a block's ``edata[dgl.EID]`` must hold).

    The result is kept per graph index (:func:`_kept_csc`): every loader over the graph reads it.
    """
    if len(g.ntypes) != 1 or len(g.etypes) != 1:
        raise ValueError(f"expected a homogeneous graph, got ntypes={g.ntypes} etypes={g.etypes}")
    return _kept_csc(g)


# A CPU graph index's CSC as the loader reads it, kept while the index lives.  DGL's adj_tensors is a
# call into its C library that wraps three arrays as new tensors: 0.06 ms in a tight loop, 0.14 ms
# of a ~1.3 ms construction when a loader is built between batches (cold caches), against DGL's whole
# constructor at 0.2-0.3 ms.  Held by the index's id with a weak reference to it (DGL's index objects
# cannot be hashed), dropped when the index goes: DGL replaces a graph's index on every edit of its
# nodes or edges, and the tensors do not hold the index.  Cost: the views share DGL's own CSC; only an
# int32 graph's widened indptr is a copy (8 B a node).  No lock: a dict's get, set and pop are atomic,
# two threads reading one graph at once both read it (either result is right), and the weak
# reference's callback, which the collector may run inside any allocation, must not wait on anything.
_CSC_BY_INDEX: dict[int, tuple[weakref.ref, tuple]] = {}


def _kept_csc(g) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    index = getattr(g, "_graph", None)
    key = id(index)
    held = _CSC_BY_INDEX.get(key)
    if held is not None and held[0]() is index:
        return held[1]
    indptr, indices, eids = g.adj_tensors("csc")
    csc = (indptr.cpu().to(torch.int64), indices.cpu(), eids.cpu())
    if indices.device.type == "cpu":  # a device graph's host copies are not kept
        try:
            entry = (weakref.ref(index, functools.partial(_forget_csc, key)), csc)
        except TypeError:  # not weakly referenceable: read every time
            return csc
        _CSC_BY_INDEX[key] = entry
    return csc


def _forget_csc(key: int, ref: weakref.ref) -> None:
    held = _CSC_BY_INDEX.get(key)
    if held is not None and held[0] is ref:
        _CSC_BY_INDEX.pop(key, None)


def _cpu(t: torch.Tensor) -> torch.Tensor:
    return t.detach().cpu()


def dglgraph_arrays(g: Any, feat_key: Optional[str], label_key: Optional[str]) -> GraphArrays:
    """The arrays of a homogeneous DGLGraph as a :class:`GraphArrays`, sharing its memory.

    Keeps the graph's exact edges (duplicates and self-loops too).  Raises
    ValueError for a feature array that is not 2-D or labels that are not 1-D.
    ``g`` is not modified (DGL caches its CSC format, as its own sampler does).
    """
    indptr, indices, edge_ids = dglgraph_csc_tensors(g)
    feat = label = None
    num_classes = 0
    ndata = g.ndata  # a view DGL builds per access
    if feat_key is not None and feat_key in ndata:
        feat = _cpu(ndata[feat_key])
        if feat.dim() != 2:
            raise ValueError(f"g.ndata[{feat_key!r}] must be 2-D [num_nodes, dim], got shape {tuple(feat.shape)}")
        if not feat.is_contiguous():
            feat = feat.contiguous()  # rows are gathered from a zero-copy view (row_buffers.py); a strided one has none
    derivations = derivations_of(g)
    if label_key is not None and label_key in ndata:
        label, num_classes = int64_labels(ndata[label_key], label_key, derivations)
    # the user's tensors themselves (a CPU tensor's detach() is a new object each call): the
    # derivations know a tensor by its identity
    edata = {k: v if v.device.type == "cpu" and not v.requires_grad else _cpu(v)
             for k, v in g.edata.items() if k != "_ID"}  # "_ID" = dgl.EID, not data
    return GraphArrays(indptr, indices, feat, label, num_classes=num_classes, name="DGLGraph", edge_ids=edge_ids,
                       edata=edata, derivations=derivations)


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


def find_edges(g, eids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(src, dst)`` int64 of a DGLGraph's edges ``eids`` (its own edge ids)."""
    src, dst = g.find_edges(torch.from_numpy(np.asarray(eids, dtype=np.int64)).to(g.idtype))
    return src.cpu().numpy().astype(np.int64), dst.cpu().numpy().astype(np.int64)


class DGLGraphReader:
    """The core's :class:`~bgl.loader.batch_frontend.GraphReader` for a one-type DGLGraph (no state:
    pickles by name into stage processes)."""

    def arrays(self, graph, feat_key: Optional[str], label_key: Optional[str]) -> GraphArrays:
        """:func:`dglgraph_arrays`."""
        return dglgraph_arrays(graph, feat_key, label_key)

    def find_edges(self, graph, eids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:func:`find_edges`."""
        return find_edges(graph, eids)

    def type_names(self, graph) -> tuple[str, str]:
        """:func:`graph_type_names`."""
        return graph_type_names(graph)

    def structure(self, graph) -> tuple:
        """The DGLGraph's graph index (DGL's in-place edits replace it) and its node and edge counts."""
        return id(getattr(graph, "_graph", None)), graph.num_nodes(), graph.num_edges()
