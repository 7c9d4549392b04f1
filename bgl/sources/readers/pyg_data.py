"""An in-memory PyG ``Data`` as a :class:`GraphSource` (``bgl.ingest(data, out_dir)``).

Duck-typed (``edge_index``, ``num_nodes``, ``x``, ``y``, masks, ``edge_attrs()``) so
the ingest path never imports ``torch_geometric``.  Edges keep PyG's direction
(``edge_index[0]`` source, ``edge_index[1]`` target: the store's CSC holds each
target's in-edges, PyG's message direction) and order; every edge-level tensor --
``edge_attr``, ``edge_weight`` or any other attribute with one row per edge -- becomes
a named edge array of the store (``meta.edata``), so ``prob=`` / ``weight_attr=`` and
``edge_attr`` work from the store, its partitions and its graph servers.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import IngestError
from ..csc_build import array_chunks
from .dgl_graph import MASKS, _numpy, splits_of_masks
from ..graph_source import GraphSource


def is_pyg_data(obj: Any) -> bool:
    """A homogeneous PyG ``Data`` (``edge_index`` and ``num_nodes``, no ``node_types``)."""
    return hasattr(obj, "edge_index") and hasattr(obj, "num_nodes") and not hasattr(obj, "node_types")


def pyg_edge_arrays(data: Any, edge_keys=None) -> dict[str, np.ndarray]:
    """Every edge-level tensor of ``data`` but ``edge_index`` (or ``edge_keys``), in edge order.

    PyG's ``Data.edge_attrs()`` names the edge-level attributes (those whose first dimension
    is the edge count); IngestError names a requested key that is missing or not one per edge.
    """
    num_edges = int(data.edge_index.shape[1])
    if edge_keys is None:
        keys = data.edge_attrs() if callable(getattr(data, "edge_attrs", None)) else ["edge_attr", "edge_weight"]
        keys = [k for k in keys if k != "edge_index" and getattr(data, k, None) is not None]
    else:
        keys = list(edge_keys)
    out = {}
    for key in keys:
        value = getattr(data, key, None)
        if value is None or not hasattr(value, "shape") or len(value.shape) < 1 or value.shape[0] != num_edges:
            what = "missing" if value is None else f"shape {tuple(getattr(value, 'shape', ()))}"
            raise IngestError(f"data.{key} must be a tensor with one row per edge ({num_edges}), got {what}")
        out[key] = np.ascontiguousarray(_numpy(value))
    return out


def pyg_node_fields(data: Any) -> dict[str, Any]:
    """``{name: tensor}`` of a ``Data``'s node-level attributes (PyG's ``node_attrs()``)."""
    keys = data.node_attrs() if callable(getattr(data, "node_attrs", None)) else []
    return {k: getattr(data, k) for k in keys if k != "edge_index" and getattr(data, k, None) is not None}


def read_pyg_data(data: Any, *, name: str = "pyg-data", edge_keys=None, node_keys=None) -> GraphSource:
    """Read a homogeneous PyG ``Data``: ``x`` as features, ``y`` as labels, ``train/val/test_mask``
    as the split, edge-level tensors as edge arrays (``edge_keys``: only those), and node-level
    ones as node arrays (``node_keys``; default: every 1-D integer one but ``y`` and the masks, e.g.
    node times a temporal loader's ``time_attr=`` names; :mod:`.graph_node_arrays`)."""
    from ..graph_node_arrays import node_arrays

    ei = getattr(data, "edge_index", None)
    if ei is None or len(ei.shape) != 2 or ei.shape[0] != 2:
        raise IngestError(f"data.edge_index must be an int tensor [2, E], got "
                          f"{None if ei is None else tuple(ei.shape)}")
    n = int(data.num_nodes)
    src, dst = (np.ascontiguousarray(_numpy(ei[i]).astype(np.int64)) for i in (0, 1))
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
        raise IngestError(f"data.edge_index holds node ids outside [0, {n})")
    x, y = getattr(data, "x", None), getattr(data, "y", None)
    feat = None if x is None else _numpy(x)
    if feat is not None and (feat.ndim != 2 or feat.shape[0] != n):
        raise IngestError(f"data.x must be [num_nodes={n}, F], got {feat.shape}")
    label = None if y is None else _numpy(y)
    if label is not None:
        if label.ndim == 2 and label.shape[1] == 1:
            label = label[:, 0]
        if label.shape != (n,) or label.dtype.kind not in "iu":
            raise IngestError(f"data.y must be [num_nodes={n}] integer class ids, got {label.shape} {label.dtype}")
    masks = {k: getattr(data, k) for k in MASKS.values() if getattr(data, k, None) is not None}
    splits = splits_of_masks(masks, n, "Data", "data.{}")
    return GraphSource(
        name=name, num_nodes=n, edges=array_chunks(src, dst), num_edges_hint=int(src.size),
        feat=feat, label=label, splits=splits, edata=pyg_edge_arrays(data, edge_keys) or None,
        ndata=node_arrays(pyg_node_fields(data), n, node_keys, ("x", "y", *MASKS.values()), "data.{}"),
        symmetrize_default=False, extra={"source": "torch_geometric.data.Data", "format": "pyg"},
    )
