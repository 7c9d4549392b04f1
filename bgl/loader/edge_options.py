"""What a sampler asks of the graph's edge arrays, checked before anything starts.

DGL's ``NeighborSampler(prob="w")`` / ``mask="m"`` and ``prefetch_edge_feats``
name edge data of the graph (``g.edata``; a store's ``edata/``; the servers'
parts).  :func:`bgl.loader.sampler_options.resolve_sampler` reads them off a sampler,
:func:`check_edge_options` checks them against the graph the loader resolved, so a missing name, a mask
that is not bool or a negative/NaN/infinite weight fails at construction with
a message naming it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional


@dataclass(frozen=True)
class EdgeOptions:
    """What a sampler asks of the graph's edge arrays: the weights (or mask) to sample by and
    the edge features each block carries (``prefetch_edge_feats``)."""

    prob: Optional[str] = None
    edge_feats: tuple[str, ...] = ()
    is_mask: bool = False  # ``prob`` came as ``mask=``: the edge array must be bool


def edge_option(prob, mask) -> Optional[str]:
    """The edge array a sampler draws by: ``prob`` or ``mask`` (DGL: mutually exclusive)."""
    if prob is not None and mask is not None:
        raise ValueError(f"prob={prob!r} and mask={mask!r} are mutually exclusive (DGL's rule); multiply the "
                         "weights by the mask into one edge array instead")
    name = prob if prob is not None else mask
    if name is not None and not isinstance(name, str):
        raise TypeError(f"prob / mask must name an edge array (a str), got {type(name).__name__}; store the "
                        "weights in g.edata / the store's edge data and pass the name")
    return name


def edge_names_of(names) -> tuple[str, ...]:
    if names is None:
        return ()
    if isinstance(names, dict):  # DGL's {etype: [names]}: a store's edge array covers every relation
        names = [n for v in names.values() for n in ([v] if isinstance(v, str) else v)]
        names = list(dict.fromkeys(names))
    if isinstance(names, str):
        names = [names]
    out = tuple(names)
    if not all(isinstance(n, str) for n in out):
        raise TypeError(f"prefetch_edge_feats must be edge array names (str), got {list(out)!r}")
    return out


def check_edge_options(options: EdgeOptions, info: Any, labor=None, typed: bool = False) -> None:
    """Every edge array the sampler names exists in the graph (and weights are valid, for a
    local graph), before any stage starts; ValueError naming the array and what there is.

    A ``typed`` graph draws each relation by the weights too (one edge array over its fused CSC,
    :mod:`bgl.sampler.typed.sampling`), and by LABOR-0, LABOR-i or weighted LABOR relation by relation
    (:func:`bgl.sampler.multilayer.sample_typed_blocks`).
    """
    names = ([options.prob] if options.prob else []) + list(options.edge_feats)
    if not names:
        return
    have = info.edge_names
    if options.is_mask and info.edge_dtypes.get(options.prob, "bool") != "bool":
        raise ValueError(f"mask={options.prob!r} must name a bool edge array, got dtype "
                         f"{info.edge_dtypes[options.prob]} (use prob= for weights)")
    for name in names:
        if have is not None and name not in have:
            what = "prob / mask" if name == options.prob else "prefetch_edge_feats"
            raise ValueError(f"{what} names edge data {name!r}, which the graph does not have; it has "
                             f"{sorted(have) or 'no edge data'}")
    if options.prob and info.store is not None:
        from ..sampler.ops import check_weights

        checked = getattr(info.store, "check_raw_weights", None)  # a DGLGraph's: once per graph (graph_derivations.py)
        if checked is not None:
            checked(options.prob)
            return
        # a DGLGraph's own edge order, so a bad weight is named by its DGL edge id
        raw = getattr(info.store, "raw_edge_array", info.store.edge_array)
        check_weights(raw(options.prob), info.store.num_edges, options.prob)

