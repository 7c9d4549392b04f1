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

On a typed graph (fanouts per relation, as DGL's heterograph ``LaborSampler``) each relation's span
of a row is kept by LABOR-0 with one variate per source node (:mod:`bgl.sampler.typed.sampling`); LABOR-i and
``prob`` solve one problem per relation over that relation's in-edges of the layer, as DGL samples a
heterograph (:func:`bgl.sampler.multilayer._typed_labor_importance_layer`).
"""
from __future__ import annotations

from typing import Optional, Sequence

from .labor_options import labor_options
from .sampler_options import NeighborSampler


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
    prefetch_node_feats : as :class:`bgl.NeighborSampler`
    prefetch_labels : as :class:`bgl.NeighborSampler`
    prefetch_edge_feats : as :class:`bgl.NeighborSampler`
    """

    def __init__(self, fanouts: Sequence[int], *, layer_dependency: bool = False, batch_dependency: int = 1,
                 importance_sampling: int = 0, prefetch_node_feats: Optional[Sequence[str]] = None,
                 prefetch_labels: Optional[Sequence[str]] = None, prefetch_edge_feats: Sequence[str] = (),
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
