"""An in-memory ``DGLGraph`` as a :class:`GraphSource`.

Duck-typed (``g.edges()``, ``g.num_nodes()``, ``g.ndata``) so that this module
never imports dgl; only the DGL face (``bgl.dgl.real_dgl``) may.  Node data keys follow DGL's
builtin datasets: ``feat``, ``label``, ``train_mask``/``val_mask``/``test_mask``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import IngestError
from ..csc_build import array_chunks
from ..graph_source import GraphSource
from ..splits import mask_to_ids

MASKS = {"train": "train_mask", "val": "val_mask", "test": "test_mask"}


def _numpy(t) -> np.ndarray:
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)


# DGL's own edge-id field (set by subgraph/sampling calls): ids, not data worth storing.
DGL_EID = "_ID"


def edge_arrays(g: Any, edge_keys=None) -> dict[str, np.ndarray]:
    """``g.edata`` as numpy arrays in DGL edge-id order: every field (except ``dgl.EID``) or ``edge_keys``.

    Raises IngestError for a requested key that ``g.edata`` lacks.
    """
    edata = g.edata
    keys = [k for k in edata.keys() if k != DGL_EID] if edge_keys is None else list(edge_keys)
    missing = [k for k in keys if k not in edata]
    if missing:
        raise IngestError(f"DGLGraph has no edge data {missing}; g.edata has {sorted(edata.keys())}")
    return {k: _numpy(edata[k]) for k in keys}


def splits_of_masks(masks: dict, n: int, owner: str, field: str) -> dict | None:
    """``{split: ids}`` from the bool masks ``masks`` (``{"train_mask": [n], ...}``): None when there
    are none, IngestError when only some are there or one has the wrong shape (``field`` formats
    the mask's name in the message, ``owner`` names the input)."""
    if not masks:
        return None
    if len(masks) != len(MASKS):
        raise IngestError(f"{owner} has {list(masks)} but not all of {list(MASKS.values())}")
    splits = {}
    for split, key in MASKS.items():
        mask = _numpy(masks[key])
        if mask.shape != (n,):
            raise IngestError(f"{field.format(key)} has shape {mask.shape}, expected ({n},)")
        splits[split] = mask_to_ids(mask)
    return splits


def read_dgl_graph(g: Any, *, name: str = "dgl-graph", feat_key: str = "feat",
                   label_key: str = "label", edge_keys=None, node_keys=None) -> GraphSource:
    """Read a homogeneous DGLGraph; edges keep their direction unless symmetrized.

    ``edge_keys``: the ``g.edata`` fields stored as edge arrays (default: all but ``dgl.EID``).
    ``node_keys``: the ``g.ndata`` fields stored as node arrays (default: every 1-D integer one but
    the label and masks, e.g. node times; :mod:`.graph_node_arrays`).
    """
    from ..graph_node_arrays import node_arrays

    if len(getattr(g, "ntypes", ["_N"])) != 1 or len(getattr(g, "etypes", ["_E"])) != 1:
        raise IngestError(f"only homogeneous graphs can be ingested, got ntypes={g.ntypes} etypes={g.etypes}")
    n = int(g.num_nodes())
    src, dst = (_numpy(t).astype(np.int64) for t in g.edges())
    ndata = g.ndata
    feat = _numpy(ndata[feat_key]) if feat_key in ndata else None
    label = None
    if label_key in ndata:
        label = _numpy(ndata[label_key])
        if label.ndim == 2 and label.shape[1] == 1:
            label = label[:, 0]
        if label.ndim != 1:
            raise IngestError(f"ndata[{label_key!r}] must be [num_nodes] class ids, got shape {label.shape}")
        if label.dtype.kind == "f":
            # DGL datasets mark unlabelled nodes with NaN in float labels (e.g. ogbn-papers100M).
            label = np.where(np.isnan(label), -1, label).astype(np.int64)
    splits = splits_of_masks({k: ndata[k] for k in MASKS.values() if k in ndata}, n, "DGLGraph", "ndata[{!r}]")
    return GraphSource(
        name=name, num_nodes=n, edges=array_chunks(src, dst), num_edges_hint=int(src.size),
        feat=feat, label=label, splits=splits, edata=edge_arrays(g, edge_keys) or None, symmetrize_default=False,
        ndata=node_arrays(ndata, n, node_keys, (feat_key, label_key, *MASKS.values()), "g.ndata[{!r}]"),
        extra={"source": "DGLGraph", "format": "dgl"},
    )
