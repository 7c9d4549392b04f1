"""Heterogeneous graphs in: per-relation edges -> one fused CSC with relation ids (see :mod:`bgl.schema`).

Two uses of per-relation arrays:

* :func:`write_typed_store` writes a typed store (format version 2) atomically;
* :class:`TypedArrays` is a heterogeneous ``DGLGraph`` read in place for the
  loader: its fused CSC is built once, its per-type feature and label tensors
  are used as they are (read-only views), and the sampled edge ids are DGL's own
  per-relation edge ids.

:func:`fused_csc` is an in-memory build (a counting sort of all edges by
(destination, relation), the chunked builder's count and scatter kernels over one
bucket): 8 B per node of ``indptr``, 4-8 B per edge of ``indices``, 1 B per edge
of ``etype``, 8 B per edge of ``eids`` and, while it runs, 8 B per node of
cursors and 8 B per edge of the largest relation (its edge ids): no sort keys, no
concatenated copy of the edges.  It serves :class:`TypedArrays` (a graph already in memory, whose
per-relation edge ids the loader needs).  Stores are written by the chunked
builder instead (:mod:`bgl.sources.typed.source`, ~5 B per edge of working memory
beyond a bounded buffer), which gives the same bytes.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import numpy as np
import torch

from ..schema import GraphSchema
from ..store import id_dtype_for
from .typed.source import schema_of  # noqa: F401  (re-exported: per-relation arrays start here)

SPLIT_MASKS = {"train": "train_mask", "val": "val_mask", "test": "test_mask"}


def fused_csc(schema: GraphSchema, rel_edges: Sequence[tuple[np.ndarray, np.ndarray]]
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The fused in-edge CSC of per-relation edge lists.

    Parameters
    ----------
    schema : node types (with counts) and edge types; ``rel_edges[r]`` belongs to edge type ``r``
    rel_edges : (src, dst) int arrays of TYPE-LOCAL ids per relation

    Returns
    -------
    indptr int64 [N + 1]; indices [E] global source ids (int32 while ids fit); etype [E] relation
    ids (uint8/uint16); eids [E] (int32 while each relation's ids fit), each edge's position in its
    relation's list (DGL's edge id)

    Raises
    ------
    ValueError naming the relation and the id when an edge points past its type's node count.
    """
    from .typed import _csc_kernels as K

    checked = check_relation_ids(schema, rel_edges)  # ValueError naming a bad id; no kernel sees one
    offsets = np.asarray(schema.offsets, np.int64)
    counts = np.array([t.count for t in schema.node_types], np.int64)
    src_t, dst_t = schema.relation_ends()
    n = int(offsets[-1])
    rows = np.zeros(n, np.int64)
    for r, (s, d) in enumerate(checked):
        K.count_typed_rows(s, d, counts[src_t[r]], counts[dst_t[r]], offsets[dst_t[r]], rows)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(rows, out=indptr[1:])
    del rows
    e = int(indptr[-1])
    indices, etype = np.empty(e, id_dtype_for(n)), np.empty(e, schema.etype_dtype())
    # an edge's id within its relation: int32 while every relation's ids fit (4 B an edge held by the
    # loader for a DGLGraph's life; readers widen what they gather)
    eid_dtype = id_dtype_for(max((s.shape[0] for s, _ in checked), default=0))
    eids = np.empty(e, eid_dtype)
    cursor = indptr[:-1].copy()
    # Relations in ascending id, each in edge-id order: every row ends grouped by relation with each
    # relation's own order kept (a stable sort by (destination, relation)); an edge's id rides along.
    for r, (s, d) in enumerate(checked):
        K.scatter_typed_rows(s, d, offsets[src_t[r]], offsets[dst_t[r]], r, indptr, cursor, indices, etype,
                             0, n, np.arange(s.shape[0], dtype=eid_dtype), eids)
    return indptr, indices, etype, eids


def check_relation_ids(schema: GraphSchema, rel_edges: Sequence[tuple[np.ndarray, np.ndarray]]
                       ) -> list[tuple[np.ndarray, np.ndarray]]:
    """``rel_edges`` as int64 arrays, each id checked against its type's count (ValueError naming the
    relation, the end and the id otherwise)."""
    if len(rel_edges) != len(schema.edge_types):
        raise ValueError(f"{len(rel_edges)} edge lists for {len(schema.edge_types)} edge types")
    src_t, dst_t = schema.relation_ends()
    counts = np.array([t.count for t in schema.node_types], np.int64)
    out = []
    for r, (s, d) in enumerate(rel_edges):
        s = np.asarray(s, np.int64)
        d = np.asarray(d, np.int64)
        if s.shape != d.shape or s.ndim != 1:
            raise ValueError(f"edge type {schema.edge_types[r].canonical}: src and dst must be 1-D of one length, "
                             f"got {s.shape} and {d.shape}")
        for ids, t, end in ((s, src_t[r], "source"), (d, dst_t[r], "destination")):
            if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= counts[t]):
                bad = int(ids.min()) if int(ids.min()) < 0 else int(ids.max())
                raise ValueError(f"edge type {schema.edge_types[r].canonical}: {end} id {bad} outside node type "
                                 f"{schema.node_types[t].name!r}'s [0, {int(counts[t])})")
        out.append((s, d))
    return out


def write_typed_store(path, schema: GraphSchema, rel_edges: Sequence[tuple[np.ndarray, np.ndarray]], *,
                      feats: Optional[Mapping[str, np.ndarray]] = None,
                      labels: Optional[Mapping[str, np.ndarray]] = None,
                      splits: Optional[Mapping[str, Mapping[str, np.ndarray]]] = None,
                      name: str = "", extra: Optional[Mapping[str, Any]] = None, overwrite: bool = False,
                      add_reverse: bool = False, fill_bytes: Optional[int] = None,
                      ndata: Optional[Mapping[str, np.ndarray]] = None):
    """Write a typed graph store (format version 2) of in-memory per-relation edges atomically;
    returns the opened GraphStore.  ``ndata``: node arrays over global ids (:mod:`.graph_node_arrays`).

    ``rel_edges[r]`` is edge type ``r``'s (src, dst) TYPE-LOCAL ids; ``splits`` maps node type ->
    split name -> TYPE-LOCAL ids (DGL's per-type ids).  The CSC is built by the chunked builder
    (:func:`bgl.sources.typed.source.write_typed_source`), the bytes :func:`fused_csc` gives.
    ``add_reverse``: reverse relations as ``dgl.AddReverse()`` adds them (:func:`with_reverse`).
    """
    from .typed.source import arrays_source, node_data_schema, with_reverse, write_typed_source

    rel_edges = check_relation_ids(schema, rel_edges)  # ValueError before anything is written
    node_data_schema(schema, {k: np.asarray(v) for k, v in (feats or {}).items()},
                     {k: np.asarray(v) for k, v in (labels or {}).items()}, splits or {})
    src = arrays_source(schema, rel_edges, feats=feats, labels=labels, splits=splits, name=name, extra=extra)
    src.ndata = dict(ndata or {})
    if add_reverse:
        src = with_reverse(src)
    return write_typed_source(src, path, overwrite=overwrite, fill_bytes=fill_bytes)


class TypedArrays:
    """A heterogeneous in-memory graph (DGLGraph, PyG HeteroData) as the loader's graph, with
    GraphStore's typed read API.

    The fused CSC is built once (:func:`fused_csc`); ``type_feat`` / ``type_label`` are
    read-only numpy views of the caller's own tensors; ``edge_ids`` are each CSC position's
    id within its relation (DGL's per-relation edge ids, PyG's edge positions).  ``rel_edata``
    ``{name: [per-relation rows or None]}`` are the graph's edge arrays, fused into CSC order on
    first use by :meth:`edge_array` (:mod:`bgl.sources.typed.edata`).
    """

    node_offset = 0
    feat = None
    label = None
    feat_dim = 0
    num_classes = 0

    def __init__(self, schema: GraphSchema, rel_edges: Sequence[tuple[np.ndarray, np.ndarray]],
                 feats: Mapping[str, torch.Tensor], labels: Mapping[str, torch.Tensor], name: str = "arrays",
                 rel_edata: Optional[Mapping[str, Sequence[Optional[np.ndarray]]]] = None, fuse=None):
        # ``fuse``: fused_csc or a caller's keeper of its result (one per DGLGraph: bgl/loader/graph_info.py)
        self.indptr, self.indices, self.etype, self.edge_ids = (fuse or fused_csc)(schema, rel_edges)
        self.rel_edata = dict(rel_edata or {})
        self._fused: dict[str, np.ndarray] = {}
        self.type_feat = {nt: _view(t) for nt, t in feats.items()}
        self.type_label = {nt: _view(t.to(torch.int64)) for nt, t in labels.items()}
        from .typed.source import node_data_schema

        # each relation's count is its edge list's length (a bincount of etype widened 21M uint8 to int64)
        self.schema = node_data_schema(schema.with_counts(edge_counts=[int(s.shape[0]) for s, _ in rel_edges]),
            self.type_feat, self.type_label, {})
        self.type_splits: dict[str, dict[str, np.ndarray]] = {nt: {} for nt in schema.ntypes}
        self.path = name

    @classmethod
    def from_dglgraph(cls, g, feat_key: Optional[str] = "feat", label_key: Optional[str] = "label",
                      fuse=None) -> "TypedArrays":
        """A heterogeneous DGLGraph's arrays (``g.nodes[t].data[feat_key / label_key]`` per type); ``fuse``
        as in the constructor."""
        schema = schema_of({nt: g.num_nodes(nt) for nt in g.ntypes}, g.canonical_etypes)
        rel_edges = [tuple(t.cpu().numpy() for t in g.edges(etype=c, order="eid")) for c in g.canonical_etypes]
        feats = {nt: g.nodes[nt].data[feat_key] for nt in g.ntypes
                 if feat_key is not None and feat_key in g.nodes[nt].data}
        labels = {nt: g.nodes[nt].data[label_key] for nt in g.ntypes
                  if label_key is not None and label_key in g.nodes[nt].data}
        from .typed.edata import relation_edge_data

        return cls(schema, rel_edges, feats, labels, name="DGLGraph", rel_edata=relation_edge_data(g), fuse=fuse)

    def edge_dtypes(self) -> dict[str, str]:
        """``{name: dtype name}`` of the graph's edge arrays as :meth:`edge_array` gives them."""
        from .typed.edata import edge_specs

        return edge_specs(self.rel_edata)

    def edge_array(self, name: str) -> np.ndarray:
        """Edge array ``name`` in fused-CSC order ([num_edges, ...]; relations without it filled with 1,
        as DGL samples them uniformly); KeyError listing the names there are."""
        fused = self._fused.get(name)
        if fused is None:
            if name not in self.rel_edata:
                from ..schema import missing_edge_array

                raise missing_edge_array(f"graph {self.path}", name, self.rel_edata)
            from .typed.edata import fuse_edge_array

            fused = fuse_edge_array(name, self.rel_edata[name], self.etype, self.edge_ids,
                                    self.schema.canonical_etypes)
            self._fused[name] = fused
        return fused

    @property
    def num_nodes(self) -> int:
        return int(self.indptr.shape[0]) - 1

    @property
    def global_num_nodes(self) -> int:
        return self.num_nodes

    @property
    def num_edges(self) -> int:
        return int(self.indices.shape[0])

    @property
    def is_typed(self) -> bool:
        return True

    def in_degrees(self) -> np.ndarray:
        return np.diff(self.indptr)

    def __repr__(self) -> str:
        return f"TypedArrays(ntypes={self.schema.ntypes}, edges={self.num_edges})"


def _view(t: torch.Tensor) -> np.ndarray:
    arr = t.detach().cpu().contiguous().numpy()
    arr.flags.writeable = False
    return arr


def dglgraph_node_data(g, feat_key: str = "feat", label_key: str = "label"):
    """(feats, labels, splits) per node type of a heterogeneous DGLGraph, as numpy arrays.

    Splits come from ``train_mask`` / ``val_mask`` / ``test_mask`` node data where present.
    """
    feats, labels, splits = {}, {}, {}
    for nt in g.ntypes:
        data = g.nodes[nt].data
        if feat_key in data:
            feats[nt] = data[feat_key].detach().cpu().numpy()
        if label_key in data:
            labels[nt] = data[label_key].detach().cpu().numpy().astype(np.int64)
        named = {name: np.flatnonzero(data[mask].cpu().numpy()) for name, mask in SPLIT_MASKS.items() if mask in data}
        if named:
            splits[nt] = named
    return feats, labels, splits


def ingest_hetero_dglgraph(g, out_dir, *, overwrite: bool = False, feat_key: str = "feat",
                           label_key: str = "label", name: str = "dgl-heterograph", add_reverse: bool = False,
                           progress: bool = False, node_keys=None):
    """A heterogeneous DGLGraph as a typed store: every relation's edges as given (DGL's edge
    order within each row and relation), per-type ``feat``/``label``, splits from ``*_mask``,
    node fields every type has as node arrays (``node_keys``; default: the 1-D integer ones, e.g.
    node times: :mod:`.graph_node_arrays`); ``add_reverse`` adds reverse relations as
    ``dgl.AddReverse()(g)`` does."""
    from .graph_node_arrays import typed_node_arrays

    schema = schema_of({nt: g.num_nodes(nt) for nt in g.ntypes}, g.canonical_etypes)
    rel_edges = [tuple(t.cpu().numpy() for t in g.edges(etype=c, order="eid")) for c in g.canonical_etypes]
    feats, labels, splits = dglgraph_node_data(g, feat_key, label_key)
    ndata = typed_node_arrays({nt: dict(g.nodes[nt].data) for nt in g.ntypes}, {nt: g.num_nodes(nt) for nt in g.ntypes},
                              node_keys, (feat_key, label_key, *SPLIT_MASKS.values()),
                              "g.nodes[{ntype!r}].data[{!r}]")
    return write_typed_store(out_dir, schema, rel_edges, feats=feats, labels=labels, splits=splits, name=name,
                             extra={"source": "DGLGraph"}, overwrite=overwrite, add_reverse=add_reverse, ndata=ndata)


def hetero_data_node_data(data):
    """(feats, labels, splits) per node type of a PyG ``HeteroData``: ``x``, a 1-D integer ``y``,
    splits from ``train_mask`` / ``val_mask`` / ``test_mask``, as numpy arrays."""
    feats, labels, splits = {}, {}, {}
    for nt in data.node_types:
        store = data[nt]
        x, y = getattr(store, "x", None), getattr(store, "y", None)
        if x is not None:
            feats[nt] = x.detach().cpu().numpy()
        if y is not None and y.dim() == 1 and not torch.is_floating_point(y):
            labels[nt] = y.detach().cpu().numpy().astype(np.int64)
        named = {name: np.flatnonzero(getattr(store, mask).cpu().numpy()) for name, mask in SPLIT_MASKS.items()
                 if getattr(store, mask, None) is not None}
        if named:
            splits[nt] = named
    return feats, labels, splits


def ingest_hetero_data(data, out_dir, *, overwrite: bool = False, name: str = "pyg-heterodata",
                       add_reverse: bool = False, node_keys=None):
    """A PyG ``HeteroData`` as a typed store: node types in ``data.node_types`` order (the global ids
    ``bgl.pyg.NeighborLoader`` gives it in place), every ``edge_index`` as given, per-type ``x``/``y``,
    splits from ``*_mask``, node attributes every type has as node arrays (``node_keys``; default: the
    1-D integer ones, e.g. a node-level ``time_attr``: :mod:`.graph_node_arrays`); ``add_reverse`` as
    :func:`bgl.sources.typed.source.with_reverse`.

    Raises ValueError naming the edge type for an ``edge_index`` that is not [2, E] or points past
    a type's node count, and the type for ``x`` / ``y`` rows that are not its node count.
    """
    schema = schema_of({nt: int(data[nt].num_nodes) for nt in data.node_types}, [tuple(et) for et in data.edge_types])
    rel_edges = []
    for et in data.edge_types:
        ei = getattr(data[et], "edge_index", None)
        if ei is None or ei.dim() != 2 or ei.shape[0] != 2:
            raise ValueError(f"data[{et}].edge_index must be an int tensor [2, E]")
        rel_edges.append((ei[0].cpu().numpy(), ei[1].cpu().numpy()))
    feats, labels, splits = hetero_data_node_data(data)
    from .graph_node_arrays import typed_node_arrays
    from .readers.pyg_data import pyg_node_fields

    ndata = typed_node_arrays({nt: pyg_node_fields(data[nt]) for nt in data.node_types},
                              {nt: int(data[nt].num_nodes) for nt in data.node_types}, node_keys,
                              ("x", "y", *SPLIT_MASKS.values()), "data[{ntype!r}].{}")
    return write_typed_store(out_dir, schema, rel_edges, feats=feats, labels=labels, splits=splits, name=name,
                             extra={"source": "HeteroData"}, overwrite=overwrite, add_reverse=add_reverse,
                             ndata=ndata)
