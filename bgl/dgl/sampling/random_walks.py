"""``dgl.sampling.random_walk`` and the samplers built on it (``RandomWalkNeighborSampler``,
``PinSAGESampler``: PinSAGE's importance neighbours, DGL's recommendation example) on ``bgl.dgl`` graphs.

A walk follows out-edges along a metapath (a homogeneous graph: ``length`` steps of its one relation),
each step a uniform draw among the node's out-edges or one in proportion to an edge weight (``prob``);
before each step a walk ends with probability ``restart_prob`` (one float, or one per step: DGL 2.1's
"before each transition", so with ``[0, p]`` a walk ends before its second step); a node without
out-edges ends it.  As DGL's: ``traces`` int64 ``[walks, steps + 1]`` (the
seeds first, -1 after a walk ends), ``types`` the node type of each position, and with
``return_eids`` the edges taken (``[walks, steps]``).  Each step is one numba pass over the walks
(:func:`bgl.sampler._walk_kernels.walk_step`) on the relation's cached CSR; draws are a pure function
of a seed from torch's generator, the walk and the step (``torch.manual_seed`` repeats them; DGL's own
RNG draws other walks of the same distribution).

Cost: the traces (8 B per walk and step, twice with the edges), plus once per graph structure each
relation's CSR (:mod:`bgl.dgl.relation`) and, with ``prob``, its weights in CSR order once per version of
the weight tensor (:func:`bgl.dgl.sampling.neighbors.ordered_weights`, shared with ``sample_neighbors(edge_dir="out")``).
"""
from __future__ import annotations

import numpy as np
import torch

from bgl.dgl.base import DGLError
from bgl.dgl.heterograph import DGLGraph
from bgl.dgl.sampling.neighbors import ordered_weights, rank_in_row
from bgl.sampler.multilayer import draw_seed


def random_walk(g: DGLGraph, nodes, *, metapath=None, length=None, prob=None, restart_prob=None,
                return_eids: bool = False):
    """Walks from each of ``nodes`` (module doc): ``(traces, types)``, or ``(traces, eids, types)``."""
    if metapath is None:
        if len(g.canonical_etypes) > 1 or len(g.ntypes) > 1:
            raise DGLError("metapath not specified and the graph is not homogeneous.")
        if length is None:
            raise ValueError("Please specify either the metapath or the random walk length.")
        path = [g.canonical_etypes[0]] * int(length)
    else:
        path = [g.to_canonical_etype(etype) for etype in metapath]
    for a, b in zip(path, path[1:]):
        if a[2] != b[0]:
            raise DGLError(f"metapath is not a path: {a} ends at {a[2]!r}, {b} starts at {b[0]!r}.")
    steps = len(path)
    restart = _restart_per_step(restart_prob, steps)
    start = path[0][0] if path else g.ntypes[0]
    seeds = torch.as_tensor(nodes).view(-1)
    if seeds.dtype == torch.bool or seeds.is_floating_point():
        raise DGLError(f"nodes must be integer node ids, got {seeds.dtype}.")
    seeds = seeds.cpu().to(torch.int64)
    if seeds.numel() and (int(seeds.min()) < 0 or int(seeds.max()) >= g.num_nodes(start)):
        raise DGLError(f"Seed node ID exceeds the maximum number of nodes of type {start!r} ({g.num_nodes(start)}).")
    from bgl.sampler._walk_kernels import walk_step

    traces = np.empty((seeds.shape[0], steps + 1), np.int64)
    eids = np.empty((seeds.shape[0], steps), np.int64)
    traces[:, 0] = seeds.numpy()
    curr = seeds.numpy().copy()
    call_seed = np.uint64(draw_seed())
    for step, cet in enumerate(path):
        csr = g._rels[cet].csr()
        indptr, indices = csr.indptr.cpu().numpy(), csr.indices.cpu().numpy()
        positions = csr.eids.cpu().numpy() if csr.eids is not None else np.empty(0, indices.dtype)
        weights = ordered_weights(g, cet, "out", prob, positions if csr.eids is not None else None)
        walk_step(indptr, indices, positions, csr.eids is not None, weights if weights is not None else _NO_WEIGHTS,
                  weights is not None, curr, call_seed, np.int64(step), np.float64(restart[step]), traces, eids)
    types = torch.tensor([g.get_ntype_id(start)] + [g.get_ntype_id(c[2]) for c in path], dtype=torch.int64)
    out_traces, out_eids = torch.from_numpy(traces).to(g.idtype), torch.from_numpy(eids).to(g.idtype)
    return (out_traces, out_eids, types) if return_eids else (out_traces, types)


_NO_WEIGHTS = np.empty(0, np.float64)


def _restart_per_step(restart_prob, steps: int) -> np.ndarray:
    if restart_prob is None:
        return np.zeros(steps, np.float64)
    if torch.is_tensor(restart_prob):
        values = restart_prob.detach().cpu().to(torch.float64).view(-1).numpy()
        if values.shape[0] < steps:
            raise DGLError(f"restart_prob has {values.shape[0]} entries for {steps} steps.")
        return values[:steps]
    if isinstance(restart_prob, float):
        return np.full(steps, restart_prob, np.float64)
    raise TypeError("restart_prob should be float or Tensor.")


def pack_traces(traces: torch.Tensor, types: torch.Tensor):
    """DGL's ``pack_traces``: ``(concat_vids, concat_types, lengths, offsets)`` of each trace without its -1s."""
    keep = traces != -1
    lengths = keep.sum(1)
    offsets = torch.cumsum(lengths, 0) - lengths
    concat_types = types.view(1, -1).expand_as(traces)[keep]
    return traces[keep], concat_types, lengths, offsets


def select_top_neighbours(src: torch.Tensor, dst: torch.Tensor, per_node: int, k: int):
    """For each run of ``per_node`` visits ``src`` of one node ``dst``: the ``k`` most visited nodes (ties: the
    larger id first, -1 never), as ``(src, dst, counts)`` (DGL's ``SelectPinSageNeighbors``)."""
    groups = torch.arange(src.shape[0] // per_node).repeat_interleave(per_node)
    valid = src != -1
    if not bool(valid.any()):
        empty = src.new_empty(0)
        return empty, empty, empty
    span = int(src.max()) + 1
    pairs, counts = torch.unique(groups[valid] * span + src[valid], return_counts=True)
    group, node = pairs // span, pairs % span
    order = torch.sort(node, descending=True, stable=True).indices  # ties: the larger id first
    order = order[torch.sort(counts[order], descending=True, stable=True).indices]
    order = order[torch.sort(group[order], stable=True).indices]
    group, node, counts = group[order], node[order], counts[order]
    top = rank_in_row(group) < k
    return node[top], dst[group[top] * per_node], counts[top]


class RandomWalkNeighborSampler:
    """DGL's ``RandomWalkNeighborSampler``: ``num_random_walks`` walks of ``num_traversals`` metapath rounds from
    each seed (ending after a round with ``termination_prob``); the ``num_neighbors`` nodes each seed's walks
    reach most often at the rounds' ends become its in-neighbours in a graph over the metapath's node type,
    ``edata[weight_column]`` the visit counts."""

    def __init__(self, G: DGLGraph, num_traversals: int, termination_prob: float, num_random_walks: int,
                 num_neighbors: int, metapath=None, weight_column: str = "weights"):
        self.G, self.weight_column = G, weight_column
        self.num_random_walks, self.num_neighbors, self.num_traversals = num_random_walks, num_neighbors, num_traversals
        if metapath is None:
            if len(G.ntypes) > 1 or len(G.etypes) > 1:
                raise ValueError("Metapath must be specified if the graph is homogeneous.")
            metapath = [G.canonical_etypes[0]]
        start, end = G.to_canonical_etype(metapath[0])[0], G.to_canonical_etype(metapath[-1])[-1]
        if start != end:
            raise ValueError("The metapath must start and end at the same node type.")
        self.ntype, self.metapath_hops, self.metapath = start, len(metapath), metapath
        self.full_metapath = list(metapath) * num_traversals
        restart = torch.zeros(self.metapath_hops * num_traversals, dtype=torch.float32)
        restart[self.metapath_hops::self.metapath_hops] = termination_prob
        self.restart_prob = restart

    def __call__(self, seed_nodes) -> DGLGraph:
        from bgl.dgl.convert import heterograph

        seeds = torch.as_tensor(seed_nodes).view(-1).repeat_interleave(self.num_random_walks)
        paths, _ = random_walk(self.G, seeds, metapath=self.full_metapath, restart_prob=self.restart_prob)
        src = paths[:, self.metapath_hops::self.metapath_hops].reshape(-1).long()
        dst = paths[:, 0].long().repeat_interleave(self.num_traversals)
        src, dst, counts = select_top_neighbours(src, dst, self.num_random_walks * self.num_traversals,
                                                 self.num_neighbors)
        graph = heterograph({(self.ntype, "_E", self.ntype): (src, dst)}, {self.ntype: self.G.num_nodes(self.ntype)},
                            idtype=self.G.idtype)
        graph.edata[self.weight_column] = counts.to(self.G.idtype)
        return graph


class PinSAGESampler(RandomWalkNeighborSampler):
    """DGL's ``PinSAGESampler``: :class:`RandomWalkNeighborSampler` over ``ntype -> other_type -> ntype`` (the
    first relation each way), PinSAGE's item-user-item walks."""

    def __init__(self, G: DGLGraph, ntype: str, other_type: str, num_traversals: int, termination_prob: float,
                 num_random_walks: int, num_neighbors: int, weight_column: str = "weights"):
        forward = [c for c in G.canonical_etypes if c[0] == ntype and c[2] == other_type]
        backward = [c for c in G.canonical_etypes if c[0] == other_type and c[2] == ntype]
        if not forward or not backward:
            raise DGLError(f"PinSAGESampler needs relations {ntype!r} -> {other_type!r} and back.")
        super().__init__(G, num_traversals, termination_prob, num_random_walks, num_neighbors,
                         metapath=[forward[0], backward[0]], weight_column=weight_column)
