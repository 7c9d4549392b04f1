"""Edge arrays of an in-memory typed graph over its fused CSC (:class:`~bgl.sources.hetero.TypedArrays`).

A heterogeneous DGLGraph keeps edge data per relation (``g.edges[etype].data[name]``, rows
in that relation's edge-id order), and any relation may lack a name.  The samplers read one
array in CSC order (:mod:`bgl.schema`, "Edge arrays"), as a typed store's ``edata/`` holds
it; :func:`fuse_edge_array` builds it with one gather: CSC position ``p`` of relation
``etype[p]`` and per-relation id ``edge_ids[p]`` is row ``starts[etype[p]] + edge_ids[p]`` of
the relations' arrays concatenated.  A relation without the array gets ``fill`` (1 = True):
DGL's ``sample_neighbors(prob=name)`` draws such a relation uniformly, which weights that are
all equal do.  Cost: the fused array, ``itemsize * width`` bytes per edge, built on first use.
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy as np


def relation_edge_data(g) -> dict[str, list[Optional[np.ndarray]]]:
    """``{name: [per-relation rows or None]}`` of a heterogeneous DGLGraph, in ``g.canonical_etypes``
    order: read-only numpy views of its own tensors (nothing copied)."""
    out: dict[str, list[Optional[np.ndarray]]] = {}
    etypes = list(g.canonical_etypes)
    for r, c in enumerate(etypes):
        for name, t in g.edges[c].data.items():
            if not isinstance(name, str) or name.startswith("_"):  # DGL's own (_ID, _TYPE): never user data
                continue
            arr = t.detach().cpu().contiguous().numpy()
            arr.flags.writeable = False
            out.setdefault(name, [None] * len(etypes))[r] = arr
    return out


def fused_dtype(name: str, per_rel: Sequence[Optional[np.ndarray]], canonical_etypes) -> np.dtype:
    """The dtype of the fused array (bool when every relation's is bool); ValueError naming a
    relation whose rows are not bool / integer / float or whose row shape differs from the others'."""
    have = [(c, a) for c, a in zip(canonical_etypes, per_rel) if a is not None]
    for c, a in have:
        if a.dtype.kind not in "biuf":
            raise ValueError(f"edge data {name!r} of {c} must be bool, integer or float, got dtype {a.dtype}")
        if a.shape[1:] != have[0][1].shape[1:]:
            raise ValueError(f"edge data {name!r} has rows of shape {a.shape[1:]} on {c} but "
                             f"{have[0][1].shape[1:]} on {have[0][0]}; one array needs one row shape")
    return np.result_type(*[a.dtype for _, a in have])


def fuse_edge_array(name: str, per_rel: Sequence[Optional[np.ndarray]], etype: np.ndarray, edge_ids: np.ndarray,
                    canonical_etypes, fill=1) -> np.ndarray:
    """``name``'s rows in fused-CSC order ([E, ...]); ValueError naming the relation whose array
    does not have one row per edge of it."""
    counts = np.bincount(np.asarray(etype, np.int64), minlength=len(canonical_etypes))
    dtype = fused_dtype(name, per_rel, canonical_etypes)
    width = next(a.shape[1:] for a in per_rel if a is not None)
    parts = []
    for c, a, n in zip(canonical_etypes, per_rel, counts.tolist()):
        if a is None:
            a = np.full((n,) + width, fill, dtype)
        elif a.shape[0] != n:
            raise ValueError(f"edge data {name!r} of {c} has {a.shape[0]} rows for {n} edges")
        parts.append(a.astype(dtype, copy=False))
    starts = np.zeros(len(parts), np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    return np.concatenate(parts)[starts[np.asarray(etype, np.int64)] + edge_ids]


def edge_specs(rel_data: Mapping[str, Sequence[Optional[np.ndarray]]]) -> dict[str, str]:
    """``{name: dtype name}`` of each edge array (what the loader checks ``mask=`` against), checking
    nothing else: a field that cannot be fused (row shapes differing by relation) is refused by
    :func:`fuse_edge_array` only when a sampler names it."""
    return {name: np.result_type(*[a.dtype for a in arrays if a is not None]).name
            for name, arrays in rel_data.items()}
