"""``bgl.dgl.sampling``: DGL 2.1's ``dgl.sampling`` on ``bgl.dgl`` graphs.

One module per family, each a thin layer over numba kernels of bgl's sampler (:mod:`bgl.sampler`):

- :mod:`.neighbors`: ``sample_neighbors``, ``select_topk`` (per-seed neighbour draws; frontiers)
- :mod:`.random_walks`: ``random_walk``, ``pack_traces``, ``RandomWalkNeighborSampler``, ``PinSAGESampler``
- :mod:`.node2vec`: ``node2vec_random_walk`` (the biased second-order walk)
- :mod:`.negative`: ``global_uniform_negative_sampling``
- :mod:`.labors`: ``sample_labors`` (LABOR frontiers)
- :mod:`.etype_neighbors`: ``sample_etype_neighbors`` (per-type fanouts on a homogenized graph)
- :mod:`.biased`: ``sample_neighbors_biased`` over a graph sorted by ``dgl.sort_csr_by_tag`` / ``sort_csc_by_tag``

The subgraph samplers of ``dgl.dataloading`` (``SAINTSampler`` in :mod:`.saint`, ``ClusterGCNSampler`` in
:mod:`.cluster_gcn`) live here too: they are samplers of whole subgraphs, read by
:mod:`bgl.dgl.dataloading` on first use.  A ``dgl.sampling`` name not built here is refused on first use
with one line (no stand-in).
"""
from __future__ import annotations

from bgl.dgl.base import not_built

from .biased import sample_neighbors_biased
from .etype_neighbors import sample_etype_neighbors
from .labors import sample_labors
from .negative import global_uniform_negative_sampling
from .neighbors import sample_neighbors, select_topk
from .node2vec import node2vec_random_walk
from .random_walks import PinSAGESampler, RandomWalkNeighborSampler, pack_traces, random_walk

__all__ = ["sample_neighbors", "select_topk", "random_walk", "pack_traces", "RandomWalkNeighborSampler",
           "PinSAGESampler", "node2vec_random_walk", "global_uniform_negative_sampling", "sample_labors",
           "sample_etype_neighbors", "sample_neighbors_biased"]


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise not_built(f"dgl.sampling.{name}", f"{', '.join(__all__)} are built; see docs/from-dgl.md", attribute=True)
