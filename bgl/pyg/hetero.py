"""``bgl.pyg.NeighborLoader`` over a PyG ``HeteroData``: PyG's heterogeneous batches from bgl's typed pipeline.

``NeighborLoader(hetero_data, num_neighbors={edge_type: [n_hop1, n_hop2]} | [n1, n2],
input_nodes=("paper", ids | mask | None), batch_size=...)`` as PyG's, backed by the same
typed sampler as ``bgl.DataLoader`` (:mod:`bgl.loader.typed`).  Each batch is a
``HeteroData`` laid out as PyG's:

* ``batch[t].n_id``: type-local ids of every sampled node of type ``t``, the seeds first
  (input type), then in the order hops reached them;
* ``batch[input_type].batch_size``: the number of seeds;
* ``batch[edge_type].edge_index`` int64 [2, E]: (source, target) positions in
  ``batch[src_type].n_id`` / ``batch[dst_type].n_id``; each node's in-edges are sampled
  once, at the hop that reached it;
* ``batch[edge_type].e_id``: the sampled edges' positions in ``data[edge_type].edge_index``;
* ``batch[t].x`` per type with features (from bgl's pipeline and cache); every other node-level
  attribute of ``data[t]`` (``y``, ``train_mask``, ...) at ``batch[t].n_id``, every edge-level one
  at ``e_id``, and graph-level attributes as they are, as PyG's ``filter_hetero_data``
  (:mod:`bgl.pyg.fields`); ``batch[input_type].input_id``: the seeds' positions in
  ``input_nodes`` (their ids for ``None`` or a mask), as PyG's.

The ``HeteroData``'s ``x`` and ``y`` are read in place (views); its ``edge_index_dict`` is
sorted once into the fused CSC (:func:`bgl.sources.hetero.fused_csc`).  PyG's extra arguments
get the same answers as on a ``Data`` (:mod:`bgl.pyg.options`).
"""
from __future__ import annotations

from typing import Any, Iterator

import numpy as np
import torch

from ..blocks import type_layout
from ..sources.hetero import TypedArrays, schema_of
from ..loader.arguments import owned_ids
from ..loader.pipeline.epoch_iterator import TimedEpochs
from ..loader.state.position import DelegatedState
from .fields import graph_fields, store_fields
from .options import pyg_options


def is_hetero_data(obj: Any) -> bool:
    """True for a PyG ``HeteroData`` (duck-typed: ``node_types``, ``edge_types``, ``edge_index_dict``)."""
    return hasattr(obj, "node_types") and hasattr(obj, "edge_types") and hasattr(obj, "edge_index_dict")


def hetero_data_arrays(data) -> TypedArrays:
    """A ``HeteroData`` as typed arrays: node types in ``data.node_types`` order, edges as given.

    Raises ValueError naming the edge type for an ``edge_index`` pointing past a type's node count.
    """
    counts = {nt: int(data[nt].num_nodes) for nt in data.node_types}
    schema = schema_of(counts, [tuple(et) for et in data.edge_types])
    rel_edges = []
    for et in data.edge_types:
        ei = data[et].edge_index
        if ei is None or ei.dim() != 2 or ei.shape[0] != 2:
            raise ValueError(f"data[{et}].edge_index must be an int tensor [2, E]")
        rel_edges.append((ei[0].cpu().numpy(), ei[1].cpu().numpy()))
    feats = {nt: data[nt].x for nt in data.node_types if getattr(data[nt], "x", None) is not None}
    labels = {nt: data[nt].y for nt in data.node_types
              if getattr(data[nt], "y", None) is not None and data[nt].y.dim() == 1
              and not torch.is_floating_point(data[nt].y)}
    for nt, x in feats.items():
        if x.dim() != 2:
            raise ValueError(f"data[{nt!r}].x must be [num_nodes, F], got {list(x.shape)}")
    return TypedArrays(schema, rel_edges, feats, labels, name="pyg-heterodata")


def hetero_fields(data) -> tuple[dict, dict, Any]:
    """({node type: its node fields}, {edge type: its edge fields}, graph-level fields) a batch takes
    from a ``HeteroData`` (:mod:`~bgl.pyg.fields`); ``x`` comes from the pipeline."""
    nodes = {nt: store_fields(data, data[nt], "node", skip=("x",)) for nt in data.node_types}
    edges = {tuple(et): store_fields(data, data[et], "edge") for et in data.edge_types}
    return nodes, edges, graph_fields(data._global_store, set())


def canonical_edge_type(etype, edge_types) -> tuple:
    """The canonical ``(src, rel, dst)`` of ``edge_types`` that one of PyG's edge-type forms names.

    As ``HeteroData`` resolves them: the triple itself, a ``(src, dst)`` pair when exactly one relation
    joins those node types (PyG's recommender examples write ``('user', 'movie')``), or a relation name
    used by one edge type.  Where PyG would silently keep an ambiguous form, ValueError names the
    candidates; an unknown form's ValueError lists the graph's edge types.
    """
    edge_types = [tuple(e) for e in edge_types]
    if isinstance(etype, (tuple, list)) and len(etype) == 3:
        if tuple(etype) in edge_types:
            return tuple(etype)
        raise ValueError(f"unknown edge type {tuple(etype)}; the graph has {edge_types}")
    if isinstance(etype, (tuple, list)) and len(etype) == 2:
        matches = [e for e in edge_types if (e[0], e[2]) == tuple(etype)]
        form = f"(src, dst) edge type {tuple(etype)}"
    elif isinstance(etype, str):
        matches = [e for e in edge_types if e[1] == etype]
        form = f"relation name {etype!r}"
    else:
        raise TypeError(f"an edge type is (src, rel, dst), (src, dst) or a relation name, got {etype!r}")
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise ValueError(f"unknown edge type: no edge type has the {form}; the graph has {edge_types}")
    raise ValueError(f"the {form} is ambiguous: it could be any of {matches}; pass one of them")


def pyg_layer_fanouts(num_neighbors, edge_types) -> list:
    """PyG's per-edge-type hop lists as DGL-order layer dicts (``[-1]`` applies to the seeds).

    As PyG: a dict must name every edge type (all lists one length); a list applies to all.  A key may
    be any form :func:`canonical_edge_type` resolves.
    """
    if not isinstance(num_neighbors, dict):
        return list(reversed([{et: int(n) for et in edge_types} for n in num_neighbors]))
    given, unknown = {}, []
    for key, hops in num_neighbors.items():
        canon = tuple(key) if isinstance(key, tuple) and len(key) == 3 else canonical_edge_type(key, edge_types)
        if canon in given:
            raise ValueError(f"num_neighbors names edge type {canon} twice (once as {key!r})")
        given[canon] = list(hops)
        if canon not in edge_types:
            unknown.append(canon)
    if unknown:
        raise ValueError(f"num_neighbors names edge types {unknown}, which the data does not have; it has {edge_types}")
    missing = [et for et in edge_types if et not in given]
    if missing:
        raise ValueError(f"num_neighbors must name every edge type (as PyG requires); missing {missing}")
    lengths = {len(v) for v in given.values()}
    if len(lengths) != 1:
        raise ValueError(f"num_neighbors lists must all have one length, got {sorted(lengths)}")
    hops = lengths.pop()
    return list(reversed([{et: int(given[et][h]) for et in edge_types} for h in range(hops)]))


def typed_blocks_to_pyg(blocks, schema) -> dict:
    """PyG's heterogeneous layout of one batch of typed bgl blocks (``blocks[-1]`` holds the seeds)."""
    first = blocks[0]
    local, members, _ = type_layout(first)
    n_id = {nt: first.src_ids[idx] - int(schema.node_type(nt).offset) for nt, idx in members.items()}
    pieces = {canon: [] for canon in schema.canonical_etypes}
    eids = {canon: [] for canon in schema.canonical_etypes}
    num_layers = len(blocks)
    for hop in range(1, num_layers + 1):
        b = blocks[num_layers - hop]
        lo = blocks[num_layers - hop + 1].num_dst if hop > 1 else 0
        hi = b.num_dst
        a, e = int(b.indptr[lo]), int(b.indptr[hi])
        deg = (b.indptr[lo + 1:hi + 1] - b.indptr[lo:hi]).numpy()
        dst_pos = torch.from_numpy(np.repeat(np.arange(lo, hi, dtype=np.int64), deg))
        src_pos = b.indices[a:e]
        et = b.etypes[a:e]
        for r, canon in enumerate(schema.canonical_etypes):
            sel = (et == r).nonzero().flatten()
            if sel.numel():
                pieces[canon].append(torch.stack([local[src_pos[sel]], local[dst_pos[sel]]]))
                if b.edge_ids is not None:  # the fused CSC's edge ids are positions in the relation's list
                    eids[canon].append(b.edge_ids[a:e][sel])
    empty = torch.empty(0, dtype=torch.int64)
    edge_index = {c: torch.cat(p, 1) if p else empty.view(2, 0) for c, p in pieces.items()}
    out = {"n_id": n_id, "edge_index": edge_index}
    if blocks[0].edge_ids is not None:
        out["e_id"] = {c: torch.cat(p) if p else empty for c, p in eids.items()}
    return out


def hetero_batch(blocks, schema, fields) -> tuple[Any, dict]:
    """PyG's ``HeteroData`` of typed blocks (per type ``n_id``, ``x`` and the input's node fields; per
    relation ``edge_index``, ``e_id`` and edge fields; graph-level fields) and its layout, for the node and
    the link loader alike; ``fields`` is :func:`hetero_fields` of the input."""
    from torch_geometric.data import HeteroData

    node_fields, edge_fields, graph = fields
    layout = typed_blocks_to_pyg(blocks, schema)
    batch = HeteroData(**graph.take(None))
    feats = blocks[0].srcdata.get("feat", {})
    for nt, ids in layout["n_id"].items():
        batch[nt].n_id = ids
        if nt in feats:
            batch[nt].x = feats[nt]
        for key, value in node_fields[nt].take(ids).items():
            batch[nt][key] = value
    e_id = layout.get("e_id", {})
    for canon, ei in layout["edge_index"].items():
        batch[canon].edge_index = ei
        if canon in e_id:
            batch[canon].e_id = e_id[canon]
        for key, value in edge_fields[canon].take(e_id.get(canon)).items():
            batch[canon][key] = value
    return batch, layout


class HeteroNeighborLoader(TimedEpochs, DelegatedState):
    """PyG's ``NeighborLoader`` over a ``HeteroData`` (see the module docstring)."""

    def __init__(self, data, num_neighbors, input_nodes=None, replace: bool = False, batch_size: int = 1,
                 shuffle: bool = False, drop_last: bool = False, num_workers: int = 0, **kwargs):
        from ..loader.sampler_options import NeighborSampler
        from ..loader.dataloader import DataLoader
        from .fields import SeedPositions

        self.options = pyg_options(kwargs, "NeighborLoader")
        self.data = data
        arrays = hetero_data_arrays(data)
        self.schema = arrays.schema
        self.input_type, ids, by_id = self._input(input_nodes, self.schema)
        self._input_id = SeedPositions(ids, by_id, self.options.input_id)
        self._fields = hetero_fields(data)
        sampler = NeighborSampler(pyg_layer_fanouts(num_neighbors, self.schema.canonical_etypes), replace=replace)
        self.batch_size = int(batch_size)
        self.dataset = range(int(ids.shape[0]))
        self._loader = DataLoader(arrays, {self.input_type: ids}, sampler, batch_size=batch_size, shuffle=shuffle,
                                  drop_last=drop_last, num_workers=num_workers, blocks="bgl", **kwargs)

    @staticmethod
    def _input(input_nodes, schema) -> tuple[str, torch.Tensor, bool]:
        """(input type, seed ids, whether PyG numbers them by node id: all nodes or a mask)."""
        if isinstance(input_nodes, str):
            input_nodes = (input_nodes, None)
        if not isinstance(input_nodes, tuple) or len(input_nodes) != 2:
            raise ValueError("input_nodes of a HeteroData must be (node_type, ids | mask | None), "
                             f"got {input_nodes!r}")
        nt, ids = input_nodes
        count = schema.node_type(nt).count  # ValueError naming an unknown type
        if ids is None:
            return nt, torch.arange(count), True
        ids = owned_ids(ids)
        if ids.dtype == torch.bool:
            if ids.shape[0] != count:
                raise ValueError(f"input_nodes mask for {nt!r} has {ids.shape[0]} entries for {count} nodes")
            return nt, ids.nonzero().flatten(), True
        return nt, ids, False

    def __len__(self) -> int:
        return len(self._loader)

    def _epoch_batches(self) -> Iterator[Any]:
        for _, _, blocks in self._loader:
            batch, layout = hetero_batch(blocks, self.schema, self._fields)
            bs = int(blocks[-1].num_dst)
            batch[self.input_type].batch_size = bs
            batch[self.input_type].input_id = self._input_id(layout["n_id"][self.input_type][:bs])
            yield self.options.finish(batch)

    def close(self) -> None:
        self._loader.close()
