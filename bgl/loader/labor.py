"""LABOR sampling in the loader: ``bgl.LaborSampler`` and DGL's ``LaborSampler`` settings.

DGL 2.1's ``dgl.dataloading.LaborSampler(fanouts, importance_sampling=0,
layer_dependency=False, batch_dependency=1, prefetch_*=...)`` keeps each edge
``t -> s`` when the source's one random variate ``r_t`` is below
``fanout / deg(s)`` (:mod:`bgl.sampler._labor_kernels`): the same per-edge
probability as neighbour sampling, far fewer distinct source rows per batch.
bgl keys ``r_t`` by ``(batch seed, global id of t)``, so graph servers, a
store and co-located reads give the same blocks.

``batch_dependency = b > 1``: batch ``i`` of an epoch blends the variates of
seeds ``g = i // b`` and ``g + 1`` of the epoch with weight ``(i % b) / b``, so
``b`` consecutive batches draw correlated variates (DGL's behaviour).
``importance_sampling = i != 0`` (LABOR-i; < 0: until convergence) and ``prob``
(weighted LABOR): the sources' importances are a fixed point over the whole
layer, so each layer's full neighbourhoods are sampled (``fanout=-1``, from the
store, the servers or co-located parts) and the pick runs where they meet
(:func:`bgl.sampler.multilayer._labor_importance_layer`); blocks then carry
DGL's ``edata["edge_weights"]`` for the message passing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from ..sampler.multilayer import Labor
from ..sampler.ops import layer_seed
from .sampler_options import NeighborSampler


@dataclass(frozen=True)
class LaborOptions:
    """What the sample stage needs to run LABOR (picklable)."""

    layer_dependency: bool = False
    batch_dependency: int = 1
    importance_sampling: int = 0
    prob: Optional[str] = None  # edge array LABOR weighs by (DGL's ``LaborSampler(prob=)``)

    def for_batch(self, sample_seed: int, index: int) -> tuple[int, Labor]:
        """``(seed, Labor)`` of batch ``index`` whose neighbour-sampling seed is ``sample_seed``.

        ``sample_seed - index`` is the epoch's base (the order stage derives batch seeds as
        ``base + index``), so batches of one epoch share the seed groups ``batch_dependency`` needs.
        """
        b, rounds = self.batch_dependency, self.importance_sampling
        if b <= 1:
            return sample_seed, Labor(self.layer_dependency, importance_sampling=rounds)
        base = int(sample_seed) - int(index)
        group = max(int(index), 0) // b
        return (layer_seed(base, 2 * group + 1),
                Labor(self.layer_dependency, layer_seed(base, 2 * group + 3), (max(int(index), 0) % b) / b, rounds))


def labor_options(fanouts: Sequence[int], importance_sampling=0, layer_dependency=False, batch_dependency=1,
                  prob=None) -> LaborOptions:
    """Checked :class:`LaborOptions`; ValueError naming an option bgl does not support."""
    if isinstance(importance_sampling, bool) or not isinstance(importance_sampling, int):
        raise ValueError(f"importance_sampling must be an int, got {importance_sampling!r}")
    if prob is not None and not isinstance(prob, str):
        raise TypeError(f"LaborSampler(prob=) must name an edge array (a str), got {type(prob).__name__}")
    if isinstance(batch_dependency, bool) or not isinstance(batch_dependency, int) or batch_dependency < 1:
        raise ValueError(f"batch_dependency must be an int >= 1, got {batch_dependency!r}")
    return LaborOptions(bool(layer_dependency), int(batch_dependency), int(importance_sampling), prob)


class LaborSampler(NeighborSampler):
    """LABOR sampler settings, DGL style (``bgl.LaborSampler([10, 10])``); see the module docstring.

    Parameters
    ----------
    fanouts : neighbours per layer in expectation, DGL order (``fanouts[-1]`` for the seeds); -1 = all
    layer_dependency : every layer uses the same variates (fewer distinct nodes)
    batch_dependency : consecutive batches draw correlated variates (more reuse across batches)
    importance_sampling : i > 0: LABOR-i (i rounds of importance updates); < 0: until convergence;
        0: LABOR-0.  Nonzero (or ``prob``): blocks carry ``edata["edge_weights"]``
    prob : edge array name to weigh by (weighted LABOR), as DGL's
    prefetch_node_feats, prefetch_labels, prefetch_edge_feats : as :class:`bgl.NeighborSampler`
    """

    def __init__(self, fanouts: Sequence[int], *, layer_dependency: bool = False, batch_dependency: int = 1,
                 importance_sampling: int = 0, prefetch_node_feats: Sequence[str] = ("feat",),
                 prefetch_labels: Sequence[str] = ("label",), prefetch_edge_feats: Sequence[str] = (),
                 output_device=None, prob: Optional[str] = None):
        super().__init__(fanouts, False, prefetch_node_feats, prefetch_labels, prefetch_edge_feats, output_device)
        self.options = labor_options(self.fanouts, importance_sampling, layer_dependency, batch_dependency, prob)

    def sample(self, g, seed_nodes, exclude_eids=None):
        raise NotImplementedError("bgl.LaborSampler samples inside bgl.DataLoader only; DGL's own loader "
                                  "takes dgl.dataloading.LaborSampler")

    def __repr__(self) -> str:
        o = self.options
        return (f"bgl.LaborSampler(fanouts={self.fanouts}, layer_dependency={o.layer_dependency}, "
                f"batch_dependency={o.batch_dependency}, importance_sampling={o.importance_sampling}, "
                f"prob={o.prob!r})")


def labor_of(graph_sampler) -> Optional[LaborOptions]:
    """The LABOR options of a ``bgl.LaborSampler`` or ``dgl.dataloading.LaborSampler``, else None."""
    if isinstance(graph_sampler, LaborSampler):
        return graph_sampler.options
    if type(graph_sampler).__name__ == "LaborSampler" and type(graph_sampler).__module__.startswith("dgl"):
        cnt = getattr(graph_sampler, "cnt", None)  # DGL keeps batch_dependency in cnt[1]
        return labor_options(list(graph_sampler.fanouts), int(graph_sampler.importance_sampling),
                             bool(graph_sampler.layer_dependency), int(cnt[1]) if cnt is not None else 1,
                             graph_sampler.prob)
    return None
