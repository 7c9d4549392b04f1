"""LABOR's options, read from bgl's or DGL's ``LaborSampler`` (see :mod:`bgl.loader.labor`).

A leaf of the loader's sampler options (:mod:`bgl.loader.sampler_options` reads :func:`labor_of`):
it imports no sampler class, so the sampler classes can import it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from ..sampler.multilayer import Labor
from ..sampler.ops import layer_seed


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


def labor_of(graph_sampler) -> Optional[LaborOptions]:
    """The LABOR options of a ``bgl.LaborSampler`` or ``dgl.dataloading.LaborSampler``, else None."""
    if isinstance(getattr(graph_sampler, "options", None), LaborOptions):  # bgl.LaborSampler's
        return graph_sampler.options
    if type(graph_sampler).__name__ == "LaborSampler" and type(graph_sampler).__module__.startswith("dgl"):
        cnt = getattr(graph_sampler, "cnt", None)  # DGL keeps batch_dependency in cnt[1]
        return labor_options(list(graph_sampler.fanouts), int(graph_sampler.importance_sampling),
                             bool(graph_sampler.layer_dependency), int(cnt[1]) if cnt is not None else 1,
                             graph_sampler.prob)
    return None
