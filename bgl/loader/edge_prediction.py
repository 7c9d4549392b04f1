"""Link prediction's settings: DGL's ``as_edge_prediction_sampler`` and what the loader reads from it.

``bgl.as_edge_prediction_sampler(sampler, exclude=, reverse_eids=, negative_sampler=)``
has DGL 2.1's signature and returns an :class:`EdgePredictionSampler`, a settings
object like DGL's; ``bgl.DataLoader`` also accepts DGL's own wrapper (around a DGL
or a bgl ``NeighborSampler``) and DGL's negative samplers, whose settings it reads
(:func:`edge_settings`).  Nothing here samples: the edges flow through the same
order -> sample -> fetch -> transfer stages as node seeds (:mod:`bgl.loader.seeds.edges`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .. import negative_sampler as neg

EXCLUDES = (None, "self", "reverse_id", "reverse_types")  # reverse_types: typed graphs


def _check_exclude_mode(exclude, reverse_eids, reverse_etypes) -> None:
    """DGL's exclusion modes, or a callable (:mod:`bgl.loader.seeds.typed_callables`)."""
    if callable(exclude):
        return
    if exclude not in EXCLUDES:
        raise ValueError(f"exclude must be one of {EXCLUDES} or a callable, got {exclude!r}")
    if exclude == "reverse_id" and reverse_eids is None:
        raise ValueError("exclude='reverse_id' needs reverse_eids (the reverse edge id of every edge)")
    if exclude == "reverse_types" and not reverse_etypes:
        raise ValueError("exclude='reverse_types' needs reverse_etypes, a dict {etype: reverse etype}")


class EdgePredictionSampler:
    """Settings of an edge-prediction sampler (DGL 2.1's ``EdgePredictionSampler`` arguments).

    Parameters
    ----------
    sampler : bgl.NeighborSampler | dgl.dataloading.NeighborSampler
        Samples the blocks around the endpoints of each batch's edges.
    exclude : None | ``"self"`` | ``"reverse_id"`` | ``"reverse_types"`` | callable
        Edges never sampled into a batch's blocks: none, the batch's seed edges, or those
        and their reverses ``reverse_eids[eids]`` (or, on a typed graph, the edges of the same
        ids of the reverse edge types ``reverse_etypes``: :mod:`bgl.loader.seeds.typed_edges`);
        or DGL's callable ``eids -> eids to exclude`` (``{etype: eids} -> {etype: eids}`` on a typed graph).
    reverse_eids : int tensor/array [num_edges] (a typed graph's ``{etype: ids}``), for ``"reverse_id"``
    reverse_etypes : ``{etype: reverse etype}``, for ``"reverse_types"``
    negative_sampler : ``bgl.negative_sampler.*`` or ``dgl.dataloading.negative_sampler.*``, optional;
        or a callable ``(g, eids) -> (src, dst)`` (``(g, {etype: eids}) -> {etype: (src, dst)}`` on a
        typed graph; DGL's contract)
    prefetch_labels : accepted for DGL's signature (edge labels are not stored by bgl)
    """

    def __init__(self, sampler, exclude=None, reverse_eids=None, reverse_etypes=None, negative_sampler=None,
                 prefetch_labels=None):
        _check_exclude_mode(exclude, reverse_eids, reverse_etypes)
        if prefetch_labels:
            raise ValueError(f"prefetch_labels={prefetch_labels!r}: bgl stores carry no edge labels")
        self.sampler = sampler
        self.exclude = exclude
        self.reverse_eids = reverse_eids
        self.reverse_etypes = reverse_etypes
        self.negative_sampler = negative_sampler
        self.prefetch_labels = []
        self.output_device = getattr(sampler, "output_device", None)

    def __repr__(self) -> str:
        return (f"bgl.EdgePredictionSampler({self.sampler!r}, exclude={self.exclude!r}, "
                f"negative_sampler={self.negative_sampler!r})")


def as_edge_prediction_sampler(sampler, exclude=None, reverse_eids=None, reverse_etypes=None,
                               negative_sampler=None, prefetch_labels=None) -> EdgePredictionSampler:
    """DGL's ``as_edge_prediction_sampler``: wrap a node sampler for link prediction (see
    :class:`EdgePredictionSampler`)."""
    return EdgePredictionSampler(sampler, exclude=exclude, reverse_eids=reverse_eids,
                                 reverse_etypes=reverse_etypes, negative_sampler=negative_sampler,
                                 prefetch_labels=prefetch_labels)


@dataclass(frozen=True)
class EdgeSettings:
    """What the loader reads from an edge-prediction sampler (bgl's or DGL's)."""

    sampler: Any  # the wrapped node sampler
    exclude: Optional[str]
    reverse_eids: Optional[Any]
    negative: Optional[Any]  # a bgl negative sampler
    from_dgl: bool
    # PyG's seeds: node pairs given directly (int64 [2, n]) rather than edge ids of the graph;
    # the loader's indices are then positions into them
    pairs: Optional[np.ndarray] = None
    node_order: str = "first"  # node seeds in DGL's first-appearance order, or PyG's "sorted"
    reverse_etypes: Optional[Any] = None  # {etype: reverse etype}, for "reverse_types" (typed graphs)
    pair_etype: Optional[Any] = None  # PyG on a HeteroData: the edge type of the given pairs


def is_edge_prediction_sampler(graph_sampler) -> bool:
    """True for bgl's or DGL's edge-prediction wrapper."""
    if isinstance(graph_sampler, EdgePredictionSampler):
        return True
    return type(graph_sampler).__name__ == "EdgePredictionSampler" and hasattr(graph_sampler, "sampler")


def edge_settings(graph_sampler) -> EdgeSettings:
    """The settings of bgl's or DGL's ``EdgePredictionSampler``, DGL's negative sampler turned
    into bgl's equivalent (so negatives are seeded like the rest of the pipeline).

    Raises
    ------
    ValueError, TypeError
        an unknown ``exclude``, ``reverse_id`` without reverse ids, or an unsupported negative sampler.
    """
    from .graph_info import is_dgl_object

    exclude = graph_sampler.exclude
    _check_exclude_mode(exclude, graph_sampler.reverse_eids, getattr(graph_sampler, "reverse_etypes", None))
    return EdgeSettings(graph_sampler.sampler, exclude, graph_sampler.reverse_eids,
                        bgl_negative_sampler(graph_sampler.negative_sampler), is_dgl_object(graph_sampler),
                        getattr(graph_sampler, "pairs", None), getattr(graph_sampler, "node_order", "first"),
                        getattr(graph_sampler, "reverse_etypes", None), getattr(graph_sampler, "pair_etype", None))


def bgl_negative_sampler(sampler):
    """bgl's negative sampler for ``sampler`` (bgl's own, or DGL's ``PerSourceUniform`` /
    ``Uniform`` / ``GlobalUniform`` with the same settings); any other callable is a user's sampler
    with DGL's contract (:class:`~bgl.loader.seeds.typed_callables.UserNegatives`); None stays None."""
    if sampler is None or hasattr(sampler, "sample_pairs"):  # bgl's own (or a pair sampler of bgl.pyg)
        return sampler
    name = type(sampler).__name__
    if type(sampler).__module__.startswith("dgl.") and hasattr(sampler, "k"):
        if name in ("PerSourceUniform", "Uniform"):
            return neg.PerSourceUniform(sampler.k)
        if name == "GlobalUniform":
            return neg.GlobalUniform(sampler.k, exclude_self_loops=sampler.exclude_self_loops,
                                     replace=sampler.replace)
    if callable(sampler):
        from .seeds.typed_callables import UserNegatives

        return UserNegatives(sampler)
    raise TypeError(f"unsupported negative_sampler {type(sampler).__module__}.{name}; use "
                    "bgl.negative_sampler.Uniform / PerSourceUniform / GlobalUniform or DGL's")


def torch_rng_user(link: Optional[EdgeSettings]) -> Optional[str]:
    """The name of the user's callable negative sampler of ``link`` (drawn under torch's global RNG:
    :func:`bgl.loader.loader_options.choose_pipeline` says why that matters), or None."""
    from .seeds.typed_callables import UserNegatives

    negative = None if link is None else link.negative
    if not isinstance(negative, UserNegatives):
        return None
    fn = getattr(negative.fn, "func", negative.fn)  # a functools.partial's function
    return getattr(fn, "__name__", type(fn).__name__)


def check_reverse_eids(reverse_eids, num_edges: int) -> np.ndarray:
    """``reverse_eids`` as int64 [num_edges] with every id in ``[0, num_edges)``."""
    from .arguments import as_int_array

    rev = as_int_array(reverse_eids, "reverse_eids")
    if rev.shape[0] != num_edges:
        raise ValueError(f"reverse_eids must have one entry per edge of the graph ({num_edges}), "
                         f"got {rev.shape[0]}")
    if rev.size and (int(rev.min()) < 0 or int(rev.max()) >= num_edges):
        bad = int(rev.min()) if int(rev.min()) < 0 else int(rev.max())
        raise ValueError(f"reverse_eids contains edge id {bad}, outside [0, {num_edges})")
    return rev


def resolve_edge_seeds(indices, info, settings: EdgeSettings):
    """The :class:`~bgl.loader.seeds.edges.EdgeSeeds` of a link-prediction loader, every argument
    checked before anything starts: edge ids (integers, in range, no duplicates), ``reverse_eids``,
    and a graph that negatives can be drawn from.  Over graph servers the endpoints are read from
    the partition dir's part stores (a partition's edge ids: :func:`~bgl.loader.seeds.edges.partition_endpoints`).

    ``info`` is the loader's :class:`~bgl.loader.graph_info.GraphInfo` (a frontend graph's endpoints come
    from its own edge ids, through ``info.reader``; a callable negative sampler is called with
    ``info.graph``).  A user's callables are the typed path's with one edge type
    (:func:`~bgl.loader.seeds.typed_callables.checked_callables`): each called once here, its output checked.
    """
    from .arguments import check_ids
    from .seeds.edges import EdgeSeeds, partition_endpoints, store_endpoints

    book = None
    if settings.exclude == "reverse_types":
        raise ValueError("exclude='reverse_types' pairs edge types; this graph has one: use exclude='reverse_id' "
                         "with reverse_eids (bgl.reverse_edge_ids)")
    if settings.pairs is not None:  # PyG: seeds are given node pairs, indices are positions into them
        return _pair_seeds(indices, info, settings)
    if info.store is not None:
        num_edges = int(info.store.num_edges)
    elif info.partition_dir is not None:
        from ..partition.format import open_partition

        book = open_partition(info.partition_dir)
        num_edges = int(book.num_edges)
    else:
        raise ValueError("link prediction over graph servers reads seed-edge endpoints from the partition "
                         "dir: pass it as graph (with BGL_SERVERS set) or set BGL_PARTITION")
    eids = check_ids(indices, num_edges, kind="edge")
    negative = settings.negative
    if negative is not None and info.num_nodes < 2:
        raise ValueError(f"negative sampling needs a graph with at least 2 nodes, got {info.num_nodes}")
    if info.reader is not None:  # a frontend's graph: its own edge ids
        src, dst = info.reader.find_edges(info.graph, eids)
    elif book is not None:
        src, dst = partition_endpoints(book, eids)
    elif getattr(info.store, "edge_ids", None) is not None:
        # in-memory arrays name each edge by the graph's own id (edge_ids[p] at CSC position p), as the
        # sampler does when it excludes and reports edges: seeds are ids too, looked up by position
        from ..sampler.exclusion import edge_positions

        src, dst = store_endpoints(info.store, edge_positions(info.store.edge_ids)[eids])
    else:
        src, dst = store_endpoints(info.store, eids)
    reverse, exclude, schema = None, settings.exclude, None
    if exclude == "reverse_id":
        reverse = check_reverse_eids(settings.reverse_eids, num_edges)
    if callable(exclude) or getattr(negative, "draw", None) is not None:  # the typed path's, with one edge type
        from ..schema import GraphSchema
        from .seeds.typed_callables import checked_callables

        schema = GraphSchema.homogeneous(int(info.num_nodes), num_edges)
        exclude, negative = checked_callables(schema, eids, np.zeros(eids.shape[0], np.int64), exclude, negative,
                                              info, typed=False)
    return EdgeSeeds(eids=eids, src=src, dst=dst, num_nodes=int(info.num_nodes), exclude=exclude,
                     reverse_eids=reverse, negative=negative, schema=schema)


def _pair_seeds(indices, info, settings: EdgeSettings):
    """EdgeSeeds over given node pairs (PyG's ``edge_label_index``): nothing to look up or exclude."""
    from .arguments import check_ids
    from .seeds.edges import EdgeSeeds

    src, dst = (np.ascontiguousarray(a, dtype=np.int64) for a in settings.pairs)
    positions = check_ids(indices, src.shape[0], kind="edge")
    if settings.negative is not None and info.num_nodes < 2:
        raise ValueError(f"negative sampling needs a graph with at least 2 nodes, got {info.num_nodes}")
    return EdgeSeeds(eids=positions, src=src[positions], dst=dst[positions], num_nodes=int(info.num_nodes),
                     negative=settings.negative, node_order=settings.node_order)
