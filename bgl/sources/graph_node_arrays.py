"""An in-memory graph's own node fields as a store's node arrays (``ndata/<name>.npy``), at ingest.

``bgl.ingest(g, out)`` of a DGLGraph, a PyG ``Data``, a heterogeneous DGLGraph or a ``HeteroData`` keeps
``feat`` / ``label`` / the split masks as it always did; the node fields that a temporal sampler reads by
name (``node_timestamp_attr_name=``, PyG's node-level ``time_attr=``) would be lost, and the store would
sample without them what the graph samples with them.  So every other 1-D integer node field (node
times, in practice: ``g.ndata["timestamp"]``, ``data.time``) becomes a node array of the same name, or
exactly the fields ``node_keys=`` names (any ``[num_nodes, ...]`` bool, integer or float field; ``[]``:
none).  A typed graph's field becomes one array over global ids (types in the store's order) when every
node type has it, as node times are on a typed store (:mod:`.node_times`); by default a field on only
some types is left out, named in ``node_keys`` it is refused naming the types that lack it.

Cost: the field's bytes once more in the store (8 B a node for int64 times); a partition of the store
keeps a copy per part edge too (its in-edges' sources': :mod:`.node_arrays`), so the default takes only
the integer 1-D fields a sampler can filter by, not every float column.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional, Sequence

import numpy as np

from ..errors import IngestError

# What a reader already keeps (or what names ids, not data): never a node array by default.
_ID_FIELDS = ("_ID", "n_id")  # dgl.NID of a subgraph; PyG's n_id of a sampled Data


def _numpy(value) -> np.ndarray:
    return value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)


def _is_time_like(value, rows: int) -> bool:
    shape = tuple(getattr(value, "shape", ()))
    dtype = getattr(value, "dtype", None)
    if len(shape) != 1 or shape[0] != rows or dtype is None:
        return False
    dtype = _numpy(value[:0]).dtype
    return dtype.kind in "iu" and dtype != np.uint64


def node_arrays(fields: Mapping[str, Any], num_nodes: int, node_keys: Optional[Sequence[str]],
                taken: Iterable[str], owner: str) -> dict[str, np.ndarray]:
    """``{name: [num_nodes, ...] array}`` of a homogeneous graph's node ``fields`` (``g.ndata``, a
    ``Data``'s node attributes): ``node_keys``, or by default every 1-D integer field not in ``taken``
    (what the reader keeps otherwise) nor an id field.  IngestError naming a requested field that is
    missing or not one row per node (``owner`` formats its place, e.g. ``"g.ndata[{!r}]"``)."""
    if node_keys is None:
        skip = set(taken) | set(_ID_FIELDS)
        return {k: np.ascontiguousarray(_numpy(v)) for k, v in fields.items()
                if k not in skip and _is_time_like(v, num_nodes)}
    out = {}
    for key in _keys(node_keys):
        value = fields.get(key)
        shape = tuple(getattr(value, "shape", ()))
        if value is None or not shape or shape[0] != num_nodes:
            got = "missing" if value is None else f"shape {shape}"
            raise IngestError(f"node_keys: {owner.format(key)} must have one row per node ({num_nodes}), got {got}"
                              + ("" if value is not None else f"; there are {sorted(fields)}"))
        out[key] = np.ascontiguousarray(_numpy(value))
    return out


def typed_node_arrays(fields: Mapping[str, Mapping[str, Any]], counts: Mapping[str, int],
                      node_keys: Optional[Sequence[str]], taken: Iterable[str], owner: str) -> dict[str, np.ndarray]:
    """:func:`node_arrays` of a typed graph: ``fields[ntype]`` that type's node fields, ``counts`` the
    node types in the store's order; each array is the types' rows concatenated (global ids).  By
    default a field is kept when every type has it as a 1-D integer field (same dtype kind); a
    requested one every type must have (IngestError naming the types that lack it)."""
    ntypes = list(counts)
    if node_keys is None:
        skip = set(taken) | set(_ID_FIELDS)
        names = set.intersection(*(set(fields.get(t, {})) for t in ntypes)) - skip if ntypes else set()
        keys = sorted(k for k in names if all(_is_time_like(fields[t][k], counts[t]) for t in ntypes))
    else:
        keys = _keys(node_keys)
        for key in keys:
            lacking = [t for t in ntypes if key not in fields.get(t, {})]
            if lacking:
                raise IngestError(f"node_keys: {key!r} must be a node field of every node type (a store's node "
                                  f"array spans all types); {lacking} have none")
    out = {}
    for key in keys:
        parts = []
        for t in ntypes:
            parts.extend(node_arrays(fields[t], counts[t], [key], (), owner.replace("{ntype!r}", repr(t))).values())
        if len({(p.dtype, p.shape[1:]) for p in parts}) > 1:
            raise IngestError(f"node_keys: {key!r} has a different dtype or width per node type "
                              f"({[(str(p.dtype), list(p.shape[1:])) for p in parts]}); give it one")
        out[key] = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return out


def _keys(node_keys) -> list[str]:
    if isinstance(node_keys, str) or not all(isinstance(k, str) for k in node_keys):
        raise IngestError(f"node_keys must be a list of node field names, got {node_keys!r}")
    return list(node_keys)
