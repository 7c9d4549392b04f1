"""The sampler's options, resolved once: bgl's sampler classes and what the loader reads from any sampler.

``bgl.NeighborSampler`` (and DGL's ``NeighborSampler`` / ``MultiLayerFullNeighborSampler`` /
``LaborSampler``, optionally wrapped by ``as_edge_prediction_sampler``) are settings objects:
:func:`resolve_sampler` turns whichever the user passed into one frozen :class:`SamplerOptions`
(fanouts, replacement, the feature and label names to prefetch, edge arrays to sample by or carry,
LABOR, link-prediction settings), checked before any process starts.  The stages read that
object and never ask again what kind of sampler it came from, so a new sampling option is a
field here and a case in :func:`resolve_sampler` (PyG's ``NodeLoader`` over one sampler
interface, torch's ``DataLoader`` resolving ``sampler`` / ``batch_sampler`` once: STYLE.md).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from .graph_info import is_dgl_object
from .edge_options import EdgeOptions, edge_names_of, edge_option


class NeighborSampler:
    """Neighbour sampler settings, DGL style (``bgl.NeighborSampler([10, 10])``).

    Parameters
    ----------
    fanouts : sequence of int
        Neighbours per layer, DGL order: ``fanouts[-1]`` is applied to the
        seeds (output layer); -1 takes all in-neighbours.
    replace : bool
        Sample with replacement.
    prefetch_node_feats : names under which ``blocks[0].srcdata`` receives
        the input features (the store has one feature array per node type), as DGL takes them:
        a list of names, or on a typed graph ``{ntype: [names]}``.  Default ``["feat"]``; over a DGL
        graph read in place, batched as DGL's or ``bgl.dgl``'s blocks, the default is gathered only when
        the model reads it, as DGL's loader reads a field its sampler did not name.
    prefetch_labels : names under which ``blocks[-1].dstdata`` receives labels (list or dict, likewise;
        default ``["label"]``, read as the default features are).
    prob : name of an edge array (weights): each neighbour is drawn with probability
        proportional to its edge's weight, never through a zero-weight edge (DGL's ``prob=``).
    mask : name of a bool edge array: only edges marked True may be drawn (DGL's ``mask=``;
        mutually exclusive with ``prob``).
    prefetch_edge_feats : edge arrays whose rows of the sampled edges each block
        gets in ``blocks[i].edata[name]``.
    """

    def __init__(self, fanouts: Sequence[int], replace: bool = False,
                 prefetch_node_feats: Optional[Sequence[str]] = None, prefetch_labels: Optional[Sequence[str]] = None,
                 prefetch_edge_feats: Sequence[str] = (), output_device=None, *, prob: Optional[str] = None,
                 mask: Optional[str] = None):
        self.fanouts = _check_fanouts(fanouts)
        self.replace = bool(replace)
        # (features named, labels named): a name left to its default is read on use from a DGL graph
        self.rows_named = (prefetch_node_feats is not None, prefetch_labels is not None)
        self.prefetch_node_feats = prefetch_form(("feat",) if prefetch_node_feats is None else prefetch_node_feats,
                                                 "prefetch_node_feats")
        self.prefetch_labels = prefetch_form(("label",) if prefetch_labels is None else prefetch_labels,
                                             "prefetch_labels")
        self.output_device = output_device
        self.prob = edge_option(prob, mask)
        self.mask = mask
        self.prefetch_edge_feats = edge_names_of(prefetch_edge_feats)

    def sample(self, g, seed_nodes, exclude_eids=None):
        """DGL's sampler interface over a DGLGraph: ``(input_nodes, output_nodes, dgl blocks)``.

        Lets DGL's own machinery drive this sampler (``dgl.dataloading.as_edge_prediction_sampler``
        checks for a ``sample(g, indices, exclude_eids)`` method; DGL's DataLoader calls it).
        Edges in ``exclude_eids`` (DGL edge ids) are never sampled; the prefetched node features
        and labels are attached as DGL's prefetch does.  ``bgl.DataLoader`` does not call this: it
        reads the settings and samples in its own pipeline.
        """
        from ..sampler import LocalSampler
        from .batch_frontend import batch_frontend
        from .graph_arrays import dglgraph_arrays

        blocks = LocalSampler(dglgraph_arrays(g, None, None)).sample_blocks(
            seed_nodes, self.fanouts, replace=self.replace, exclude=exclude_eids)
        first, last = blocks[0], blocks[-1]
        for key in prefetch_names(self.prefetch_node_feats):
            if key in g.ndata:
                first.srcdata[key] = g.ndata[key][first.src_ids.to(g.device)]
        for key in prefetch_names(self.prefetch_labels):
            if key in g.ndata:
                last.dstdata[key] = g.ndata[key][last.dst_ids.to(g.device)]
        frontend = batch_frontend(g, "dgl", True)  # DGL's DataLoader calls this: its blocks, built at the edge
        return first.src_ids, last.dst_ids, frontend.blocks(blocks, None, None, ("_N", "_E"), with_csr=False)

    def __repr__(self) -> str:
        weights = "" if self.prob is None else f", prob={self.prob!r}"
        return f"bgl.NeighborSampler(fanouts={self.fanouts}, replace={self.replace}{weights})"


class MultiLayerFullNeighborSampler(NeighborSampler):
    """Every in-neighbour at each of ``num_layers`` layers (DGL's ``MultiLayerFullNeighborSampler``):
    ``NeighborSampler([-1] * num_layers)``, the sampler DGL's examples run layer-wise inference with.

    ``edge_dir`` must be ``"in"`` (see :func:`_node_sampler_settings` for why out-edges are refused); the
    other arguments are :class:`NeighborSampler`'s (``replace`` does not apply: all are taken).
    """

    def __init__(self, num_layers: int, edge_dir: str = "in", **kwargs):
        if isinstance(num_layers, bool) or not isinstance(num_layers, (int, np.integer)) or num_layers < 1:
            raise ValueError(f"num_layers must be an int >= 1, got {num_layers!r}")
        if edge_dir != "in":
            raise ValueError(f"edge_dir={edge_dir!r} is not supported: sample the reversed graph with edge_dir='in'")
        super().__init__([-1] * int(num_layers), **kwargs)


MultiLayerNeighborSampler = NeighborSampler  # DGL's older name for the same class (DGL 2.1 keeps it)


def _check_fanouts(fanouts) -> list:
    """Validated fanouts: ints, or (a typed graph's) per-layer dicts {edge type: int}, checked
    against the graph's edge types when the loader knows them (:mod:`bgl.loader.typed`)."""
    if isinstance(fanouts, (int, np.integer)) or not hasattr(fanouts, "__len__") or len(fanouts) == 0:
        raise ValueError(f"fanouts must be a non-empty list of ints, got {fanouts!r}")
    if any(isinstance(f, dict) for f in fanouts):
        return [dict(f) if isinstance(f, dict) else f for f in fanouts]
    out = []
    for f in fanouts:
        if isinstance(f, bool) or not isinstance(f, (int, np.integer)) or f < -1 or f == 0:
            given = [v.item() if isinstance(v, np.generic) else v for v in fanouts]  # numpy 2 reprs name the type
            raise ValueError(f"each fanout must be an int >= 1 or -1 (all neighbours), "
                             f"got {given[len(out)]!r} in {given}")
        out.append(int(f))
    return out


def _node_sampler_settings(graph_sampler) -> tuple[list[int], bool, list[str], list[str], bool, tuple[bool, bool]]:
    """(fanouts, replace, feature keys, label keys, came from DGL, (features named, labels named)) of a
    supported sampler."""
    if isinstance(graph_sampler, NeighborSampler):  # bgl.LaborSampler is one too
        return (graph_sampler.fanouts, graph_sampler.replace, prefetch_names(graph_sampler.prefetch_node_feats),
                prefetch_names(graph_sampler.prefetch_labels), False, getattr(graph_sampler, "rows_named", (True, True)))
    name = type(graph_sampler).__name__
    if is_dgl_object(graph_sampler) and hasattr(graph_sampler, "fanouts") and name in (
            "NeighborSampler", "MultiLayerFullNeighborSampler", "LaborSampler"):
        if getattr(graph_sampler, "edge_dir", "in") != "in":
            # DGL 2.1's blocks from edge_dir='out' hold edges whose destination falls outside the
            # block's dst nodes, so no message passing is defined on them.
            raise ValueError(
                f"edge_dir={graph_sampler.edge_dir!r} is not supported: DGL 2.1's blocks from out-edge sampling "
                "have edges whose destinations are not dst nodes of the block; to aggregate over "
                "out-neighbours, sample the reversed graph with edge_dir='in' (bgl.DataLoader(dgl.reverse(g, "
                "copy_ndata=True, copy_edata=True), ...))")
        feats = prefetch_names(prefetch_form(graph_sampler.prefetch_node_feats, "prefetch_node_feats"))
        labels = prefetch_names(prefetch_form(graph_sampler.prefetch_labels, "prefetch_labels"))
        # DGL exposes every ndata field lazily even without prefetch (bgl does too for a
        # DGLGraph: TransferStage); a store has one feature and one label array, offered
        # under the usual names.
        return (_check_fanouts(list(graph_sampler.fanouts)), bool(getattr(graph_sampler, "replace", False)),
                list(feats) or ["feat"], list(labels) or ["label"], True, (bool(feats), bool(labels)))
    raise TypeError(
        f"unsupported graph_sampler {type(graph_sampler).__module__}.{name}; use bgl.NeighborSampler, "
        f"bgl.LaborSampler or dgl.dataloading.NeighborSampler / MultiLayerFullNeighborSampler / LaborSampler")


def _edge_options(graph_sampler) -> EdgeOptions:
    """The :class:`~bgl.loader.edge_options.EdgeOptions` of a sampler :func:`_node_sampler_settings` accepts."""
    if isinstance(graph_sampler, NeighborSampler):  # bgl's (a bgl.LaborSampler has no prob / mask)
        return EdgeOptions(graph_sampler.prob, graph_sampler.prefetch_edge_feats, graph_sampler.mask is not None)
    if type(graph_sampler).__name__ == "LaborSampler":  # DGL's: its prob is refused by labor_of
        return EdgeOptions(None, edge_names_of(getattr(graph_sampler, "prefetch_edge_feats", None)))
    # DGL keeps ``prob or mask`` in ``prob`` (it refuses both at construction)
    return EdgeOptions(edge_option(getattr(graph_sampler, "prob", None), None),
                       edge_names_of(getattr(graph_sampler, "prefetch_edge_feats", None)))


def prefetch_form(value, what: str):
    """A ``prefetch_*`` argument in DGL's forms, kept as given: a list of names, or on a typed graph
    ``{ntype: [names]}`` (DGL's heterogeneous form); a single name is a list of one.  TypeError
    for anything else, naming the argument."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        out = {}
        for ntype, names in value.items():
            names = [names] if isinstance(names, str) else list(names or [])
            if not isinstance(ntype, str) or not all(isinstance(n, str) for n in names):
                raise TypeError(f"{what} must map node type names to field names, got {dict(value)!r}")
            out[ntype] = names
        return out
    names = list(value)
    if not all(isinstance(n, str) for n in names):
        raise TypeError(f"{what} must be field names (str), or {{ntype: [names]}}, got {names!r}")
    return names


def prefetch_names(form) -> list[str]:
    """The field names of a :func:`prefetch_form`: the list itself, or a dict's names over all its
    types (sorted).  A store holds one feature array per node type, served under each name; a
    DGLGraph's fields are read by name."""
    if isinstance(form, dict):
        return sorted({n for names in form.values() for n in names})
    return list(form)


def prefetch_types(form) -> tuple[str, ...]:
    """The node types a dict :func:`prefetch_form` names (checked against the graph's), else ()."""
    return tuple(form) if isinstance(form, dict) else ()


@dataclass(frozen=True)
class SamplerOptions:
    """Everything the loader reads from its ``graph_sampler``, resolved once (:func:`resolve_sampler`).

    ``fanouts`` in DGL order (the last applies to the seeds): ints, or a typed graph's per-layer
    ``{etype: int}``; ``feat_keys`` / ``label_keys`` the names under which rows and labels are
    attached; ``rows_named`` whether the sampler named them (else they are the defaults, which a DGL
    graph read in place serves on use: :meth:`gathered_keys`); ``named_types`` the node types a dict
    form of ``prefetch_*`` named; ``link`` the edge-prediction settings
    (:class:`~bgl.loader.edge_prediction.EdgeSettings`), None for node seeds.
    """

    node_sampler: Any
    fanouts: tuple
    replace: bool
    feat_keys: tuple[str, ...]
    label_keys: tuple[str, ...]
    named_types: tuple[str, ...]
    edge: EdgeOptions
    labor: Any  # bgl.loader.labor_options.LaborOptions | None
    link: Any  # bgl.loader.edge_prediction.EdgeSettings | None
    from_dgl: bool
    temporal: Any = None  # bgl.loader.temporal_sampler.TemporalOptions | None
    rows_named: tuple[bool, bool] = (True, True)

    @property
    def edge_keys(self) -> list[str]:
        """Edge arrays each block carries (``prefetch_edge_feats``)."""
        return list(self.edge.edge_feats)

    def gathered_keys(self, served_on_use: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(feature names, label names) the pipeline gathers: the first feature name and the label names,
        or, where the graph serves its fields on use (a DGL graph read in place), only those the sampler
        named.  DGL's loader gathers no field its sampler did not name; bgl gathering its default names
        there would hold a batch of rows per batch in flight that a script indexing the features itself
        (layer-wise inference: ``h[input_nodes]``) never reads."""
        feats, labels = self.feat_keys[:1], self.label_keys
        if served_on_use:
            feats, labels = (feats if self.rows_named[0] else ()), (labels if self.rows_named[1] else ())
        return feats, labels

    @property
    def dict_prefetch(self) -> bool:
        """True when ``prefetch_node_feats`` was given as DGL's ``{ntype: [names]}``."""
        return isinstance(getattr(self.node_sampler, "prefetch_node_feats", None), dict)


def resolve_sampler(graph_sampler) -> SamplerOptions:
    """The :class:`SamplerOptions` of bgl's or DGL's node sampler, or of either wrapped for link
    prediction; TypeError / ValueError naming an unsupported sampler or option."""
    from .edge_prediction import edge_settings, is_edge_prediction_sampler
    from .labor_options import labor_of

    link = edge_settings(graph_sampler) if is_edge_prediction_sampler(graph_sampler) else None
    node_sampler = graph_sampler if link is None else link.sampler
    fanouts, replace, feat_keys, label_keys, from_dgl, rows_named = _node_sampler_settings(node_sampler)
    options, labor = _edge_options(node_sampler), labor_of(node_sampler)
    if labor is not None and labor.prob is not None:  # checked against the graph as prob= is
        options = dataclasses.replace(options, prob=labor.prob)
    if link is not None and (options.prob is not None or labor is not None):
        raise ValueError("link prediction samples uniformly around the excluded edges; weighted (prob= / "
                         "mask=) and LABOR sampling do not combine with it")
    # A bgl.TemporalNeighborSampler (bgl/loader/temporal_sampler.py) says its own options.
    temporal = node_sampler.temporal_options() if hasattr(node_sampler, "temporal_options") else None
    named = set()
    for what in ("prefetch_node_feats", "prefetch_labels"):
        named.update(prefetch_types(prefetch_form(getattr(node_sampler, what, None), what)))
    return SamplerOptions(node_sampler=node_sampler, fanouts=tuple(fanouts), replace=replace,
                          feat_keys=tuple(feat_keys), label_keys=tuple(label_keys), named_types=tuple(sorted(named)),
                          edge=options, labor=labor, link=link, from_dgl=from_dgl or (link is not None and link.from_dgl),
                          temporal=temporal, rows_named=rows_named)
