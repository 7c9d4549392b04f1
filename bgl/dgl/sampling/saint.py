"""DGL's ``dgl.dataloading.SAINTSampler`` (Zeng et al., GraphSAINT): one random induced subgraph per batch.

Each call draws a node set and returns the subgraph it induces (:func:`bgl.dgl.transforms.node_subgraph`:
nodes in ascending id order, ``ndata[dgl.NID]`` / ``edata[dgl.EID]`` the graph's ids, the graph's fields at
them), whatever seeds the loader hands it; DGL's script loops ``DataLoader(g, torch.arange(num_iters),
sampler)`` for ``num_iters`` subgraphs an epoch.  The node set, as DGL 2.1's:

- ``mode="node"``: ``budget`` draws with replacement, node ``v`` with probability proportional to
  ``max(out_degree(v), 1)``; the distinct nodes drawn.
- ``mode="edge"``: ``budget`` edge draws with replacement, edge ``u -> v`` in proportion to
  ``1 / max(in_degree(v), 1) + 1 / max(out_degree(u), 1)``; the distinct ends of the edges drawn.
- ``mode="walk"``: ``budget = (num_roots, walk_length)``: random walks of ``walk_length`` steps from
  ``num_roots`` uniform roots (:func:`bgl.dgl.sampling.random_walk`); the distinct nodes visited.

With ``cache`` the node / edge probabilities are kept after the first call (for the graph of that call, as
DGL keeps them).  Draws come from torch's generator (``torch.manual_seed`` repeats them).
Cost per call: O(budget + the subgraph's edges), plus once O(nodes) or O(edges) for the probabilities.
"""
from __future__ import annotations

import torch

from bgl.dgl.base import DGLError
from bgl.sampler.multilayer import thread_generator
from bgl.dgl.dataloading import Sampler
from bgl.dgl.sampling.choice import choice


class SAINTSampler(Sampler):
    """GraphSAINT's node, edge or random-walk subgraph sampler (module doc).

    Parameters
    ----------
    mode : ``"node"``, ``"edge"`` or ``"walk"``
    budget : int draws (node, edge modes), or ``(num_roots, walk_length)`` (walk mode)
    cache : keep the draw probabilities between calls
    prefetch_ndata, prefetch_edata : names of node / edge fields the subgraph carries (it carries every field
        of the graph already, gathered on first read)
    output_device : where the subgraph is put (DGL's default ``"cpu"``)
    """

    def __init__(self, mode, budget, cache=True, prefetch_ndata=None, prefetch_edata=None, output_device="cpu"):
        super().__init__()
        draws = {"node": self.node_sampler, "edge": self.edge_sampler, "walk": self.walk_sampler}
        if mode not in draws:
            raise DGLError(f"Expect mode to be 'node', 'edge' or 'walk', got {mode}.")
        self.mode, self.budget, self.sampler = mode, budget, draws[mode]
        self.cache, self.prob = cache, None
        self.prefetch_ndata = prefetch_ndata or []
        self.prefetch_edata = prefetch_edata or []
        self.output_device = output_device

    def _probabilities(self, make):
        if self.cache and self.prob is not None:
            return self.prob
        prob = make()
        if self.cache:
            self.prob = prob
        return prob

    def node_sampler(self, g) -> torch.Tensor:
        """The distinct nodes of ``budget`` draws in proportion to their out-degrees (at least 1)."""
        prob = self._probabilities(lambda: g.out_degrees().float().clamp(min=1))
        return choice(prob, int(self.budget)).unique().to(g.idtype)

    def edge_sampler(self, g) -> torch.Tensor:
        """The distinct ends of ``budget`` edge draws in proportion to ``1/in_deg(dst) + 1/out_deg(src)``."""
        src, dst = g.edges()

        def make():
            in_deg = g.in_degrees().float().clamp(min=1)
            out_deg = g.out_degrees().float().clamp(min=1)
            prob = 1.0 / in_deg[dst.long()] + 1.0 / out_deg[src.long()]
            return prob / prob.sum()

        edges = choice(self._probabilities(make), int(self.budget)).unique()
        return torch.cat([src[edges], dst[edges]]).unique().to(g.idtype)

    def walk_sampler(self, g) -> torch.Tensor:
        """The distinct nodes of ``num_roots`` walks of ``walk_length`` steps from uniform roots."""
        from bgl.dgl.sampling.random_walks import pack_traces, random_walk

        num_roots, walk_length = self.budget
        roots = torch.randint(0, g.num_nodes(), (int(num_roots),), generator=thread_generator())
        traces, types = random_walk(g, roots, length=int(walk_length))
        return pack_traces(traces, types)[0].unique().to(g.idtype)

    def sample(self, g, indices):
        """The subgraph induced by one draw of nodes (``indices`` only counts the batches, as in DGL)."""
        from bgl.dgl.transforms import node_subgraph

        return node_subgraph(g, self.sampler(g), output_device=self.output_device)

