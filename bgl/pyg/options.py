"""PyG loader arguments beyond the sampled structure: one place decides which are honoured, ignored or refused.

Every ``bgl.pyg`` loader -- ``NeighborLoader`` on a ``Data``, a ``HeteroData``, a store, a partition
or graph servers, and ``LinkNeighborLoader`` -- passes the keyword arguments it does not name
through :func:`pyg_options` before it builds anything, so an argument gets the same answer whatever
the input: honoured (``transform``), accepted and ignored where it only tunes PyG's own workers
(``filter_per_worker``, ``is_sorted``, ...), or refused with one ``ValueError`` naming it and what to
do instead.  The temporal arguments reach here only where they cannot be honoured (a ``HeteroData``, or
``input_time`` / ``edge_label_time`` / ``disjoint`` without ``time_attr``): the homogeneous loaders
with ``time_attr=`` take them out first (:mod:`bgl.pyg.temporal_loader`).  Without this a ``HeteroData`` loader handed PyG's arguments to ``bgl.DataLoader``,
which knew none of them (``TypeError: bgl.DataLoader got unexpected keyword arguments``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

# PyG's temporal arguments and their defaults: honoured by the homogeneous loaders with time_attr=
# (bgl.pyg.temporal_loader, which takes them out first); here only what is left is refused.
TEMPORAL_ARGS = {"time_attr": None, "input_time": None, "edge_label_time": None, "temporal_strategy": "uniform",
                 "disjoint": False}
_NEEDS_TIME = "it comes with temporal sampling (time_attr=, PyG's rule); give time_attr= too, or drop it"
_TEMPORAL_TODO = {
    "time_attr": "this loader samples without time; bgl.pyg.NeighborLoader / LinkNeighborLoader take time_attr= "
                 "(Data, HeteroData, store, servers), bgl.DataLoader takes seed_time= with a TemporalNeighborSampler",
    "input_time": _NEEDS_TIME, "edge_label_time": _NEEDS_TIME, "temporal_strategy": _NEEDS_TIME,
    "disjoint": "bgl samples disjoint subgraphs for temporal sampling only (time_attr=); drop it",
}
# PyG arguments bgl cannot honour: (their default, what to do instead).  The default is accepted.
_REFUSED = {
    **{name: (TEMPORAL_ARGS[name], todo) for name, todo in _TEMPORAL_TODO.items()},
    "subgraph_type": ("directional", "bgl samples directional subgraphs only; drop it"),
    "directed": (True, "bgl samples directional subgraphs only; drop it"),
    "transform_sampler_output": (None, "bgl produces no SamplerOutput; change each batch with transform= instead"),
    "neighbor_sampler": (None, "bgl samples with its own sampler; give num_neighbors=, replace=, weight_attr= instead"),
    "custom_cls": (None, "it applies to (FeatureStore, GraphStore) input, which bgl does not take; drop it"),
}
# PyG / torch DataLoader arguments that only tune PyG's own worker processes, meaningless for bgl's
# pipeline (it filters each batch where its fetch stage runs): accepted and ignored.
IGNORED = frozenset({"is_sorted", "filter_per_worker", "persistent_workers", "pin_memory", "prefetch_factor",
                     "timeout", "worker_init_fn", "collate_fn", "generator", "multiprocessing_context"})


@dataclass(frozen=True)
class PygOptions:
    """What a PyG loader honours of PyG's extra arguments.

    transform : None or a callable applied to every batch (``Data`` / ``HeteroData``) before it is
        yielded, as PyG's loaders apply it
    input_id : None or the user's numbering of the loader's input (PyG's ``input_id=``)
    """

    transform: Optional[Callable[[Any], Any]] = None
    input_id: Any = None

    def finish(self, batch: Any) -> Any:
        """``batch`` after the user's ``transform``."""
        return batch if self.transform is None else self.transform(batch)


def pyg_options(kwargs: dict, loader: str) -> PygOptions:
    """Take PyG's extra arguments out of ``kwargs`` (what remains is for ``bgl.DataLoader``).

    Raises
    ------
    ValueError
        an argument bgl cannot honour given a non-default value, naming it and what to do.
    TypeError
        ``transform`` that is not callable.
    """
    for name, (default, todo) in _REFUSED.items():
        if name not in kwargs:
            continue
        value = kwargs.pop(name)
        given = value is not None if default is None else getattr(value, "value", value) != default
        if given:  # (PyG's SubgraphType enum compares by its value)
            raise ValueError(f"bgl.pyg.{loader} does not support {name}= (got {_short(value)}): {todo}")
    for name in IGNORED & set(kwargs):
        kwargs.pop(name)
    transform = kwargs.pop("transform", None)
    if transform is not None and not callable(transform):
        raise TypeError(f"transform must be callable (it is applied to each batch), got {type(transform).__name__}")
    return PygOptions(transform, kwargs.pop("input_id", None))


def _short(value: Any) -> str:
    """A value for an error line: a tensor by its shape, not its contents."""
    shape = getattr(value, "shape", None)
    if shape is not None:
        return f"a {type(value).__name__} of shape {list(shape)}"
    return repr(value)
