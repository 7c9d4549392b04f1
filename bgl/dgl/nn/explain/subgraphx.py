"""``SubgraphX`` and ``HeteroSubgraphX`` (Yuan et al., ICML 2021) as DGL 2.1 has them.

A Monte Carlo tree search over connected subgraphs: a tree node's children drop one of its ``num_child``
highest- (``high2low``) or lowest-degree nodes and keep the largest weakly connected component of the rest; a
child's reward is its Shapley value for ``target_class``, estimated from ``shapley_steps`` random coalitions of
the nodes within ``num_hops - 1`` hops (features outside the coalition zeroed).  The best subgraph of at most
``node_min`` nodes is the explanation.

Randomness is numpy's global generator (``np.random.permutation`` per coalition, as DGL's), so with the same
``np.random.seed`` and model the search visits DGL's subgraphs and returns DGL's nodes.  The components come
from a label propagation over all dropped nodes at once (``O(num_child x E)`` per step, a diameter's worth of
steps) instead of DGL's networkx graphs.  Cost per tree node: ``2 x shapley_steps`` forward passes of the model.

DGL 2.1's ``HeteroSubgraphX`` quirks are kept so that its results agree: the Shapley value is
``v(coalition) - v(coalition + subgraph)`` (DGL writes the subgraph into the wrong mask), and the final choice
counts a subgraph's node *types* against ``node_min``; its components list each type's nodes in the iteration
order of a Python set of their ids (ascending where the ids are below the set's table size, as on small graphs).
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from bgl.dgl.base import NID
from bgl.dgl.transforms import node_subgraph

__all__ = ["SubgraphX", "HeteroSubgraphX"]


class MCTSNode:
    """A search tree node: the graph's ``nodes`` it keeps (ids, or ``{ntype: ids}``) and its statistics."""

    def __init__(self, nodes):
        self.nodes = nodes
        self.num_visit = 0
        self.total_reward = 0.0
        self.immediate_reward = 0.0
        self.children = []

    def __repr__(self):
        return str(self.nodes)


def _largest_components(num_nodes: int, src, dst, removed):
    """bool ``[k, num_nodes]``: row ``r`` marks the largest weakly connected component once node
    ``removed[r]`` and its edges are gone (ties: the component with the smallest node id, networkx's first)."""
    k = removed.shape[0]
    rows = torch.arange(k, device=src.device)
    keep = (src[None, :] != removed[:, None]) & (dst[None, :] != removed[:, None])
    r, e = keep.nonzero(as_tuple=True)
    s, d = r * num_nodes + src[e], r * num_nodes + dst[e]
    label = torch.arange(k * num_nodes, device=src.device)
    while True:  # min-label propagation with pointer jumping: a few passes over the k x E edges
        low = torch.minimum(label[s], label[d])
        new = label.scatter_reduce(0, s, low, "amin").scatter_reduce(0, d, low, "amin")
        new = new[new]
        if torch.equal(new, label):
            break
        label = new
    alive = torch.ones(k, num_nodes, dtype=torch.bool, device=src.device)
    alive[rows, removed] = False
    sizes = torch.bincount(label[alive.view(-1)], minlength=k * num_nodes).view(k, num_nodes)
    best = sizes.argmax(dim=1) + rows * num_nodes
    return (label.view(k, num_nodes) == best[:, None]) & alive, keep.sum(dim=1)


class _Search(nn.Module):
    """The tree search both explainers share (DGL's arguments and ``mcts_rollout``)."""

    def __init__(self, model, num_hops, coef=10.0, high2low=True, num_child=12, num_rollouts=20, node_min=3,
                 shapley_steps=100, log=False):
        super().__init__()
        self.num_hops = num_hops
        self.coef = coef
        self.high2low = high2low
        self.num_child = num_child
        self.num_rollouts = num_rollouts
        self.node_min = node_min
        self.shapley_steps = shapley_steps
        self.log = log
        self.model = model

    def _child(self, key, nodes, children: dict) -> None:
        """Book the tree node of ``nodes`` (one per distinct ``key``) and make it a child."""
        node = self.mcts_node_maps.get(key)
        if node is None:
            node = self.mcts_node_maps[key] = MCTSNode(nodes)
        children.setdefault(key, node)

    def _score_children(self, mcts_node, children: dict):
        mcts_node.children = list(children.values())
        for child in mcts_node.children:
            if child.immediate_reward == 0:  # DGL's test: a Shapley value of exactly 0 is estimated again
                child.immediate_reward = self.shapley(child.nodes)
        return mcts_node.children

    def _value(self, feat):
        with torch.no_grad():
            return self.model(self.graph, feat, **self.kwargs).softmax(dim=-1)[:, self.target_class]

    @staticmethod
    def _coalition(space, split_point):
        """One random coalition: the part of ``space`` before ``split_point`` in a permutation of it."""
        permuted = np.random.permutation(space)
        return permuted[:int(np.flatnonzero(permuted == split_point)[0])]

    def mcts_rollout(self, mcts_node):
        """One rollout from ``mcts_node`` down to a leaf; returns the leaf's reward."""
        if self._size(mcts_node.nodes) <= self.node_min:
            return mcts_node.immediate_reward
        children = self.get_mcts_children(mcts_node)
        visits = math.sqrt(sum(c.num_visit for c in children))
        chosen = max(children, key=lambda c: c.total_reward / max(c.num_visit, 1)
                     + self.coef * c.immediate_reward * visits / (1 + c.num_visit))
        reward = self.mcts_rollout(chosen)
        chosen.num_visit += 1
        chosen.total_reward += reward
        return reward

    def _search(self, graph, feat, target_class, kwargs, root, root_key):
        self.model.eval()
        if not graph.num_nodes() > self.node_min:
            raise AssertionError(f"The number of nodes in the graph {graph.num_nodes()} should be bigger than "
                                 f"{self.node_min}.")
        self.graph, self.feat, self.target_class, self.kwargs = graph, feat, target_class, kwargs
        self.mcts_node_maps = {root_key: MCTSNode(root)}
        bar = None
        if self.log:
            from tqdm.auto import tqdm

            bar = tqdm(total=self.num_rollouts, desc="Rollouts")
        for _ in range(self.num_rollouts):
            self.mcts_rollout(self.mcts_node_maps[root_key])
            if bar is not None:
                bar.set_postfix(subgraphs=len(self.mcts_node_maps))
                bar.update(1)
        if bar is not None:
            bar.close()
        best, best_reward = None, float("-inf")
        for node in self.mcts_node_maps.values():
            if len(node.nodes) <= self.node_min and node.immediate_reward > best_reward:
                best, best_reward = node, node.immediate_reward
        return best.nodes


class SubgraphX(_Search):
    """DGL's ``SubgraphX`` for a graph classifier over a one-type graph (module doc).

    Parameters
    ----------
    model : ``forward(graph, feat, **kwargs)`` -> logits ``[B, C]``
    num_hops : the model's layer count; coef : exploration weight; high2low : expand high-degree nodes first;
    num_child : children per tree node; num_rollouts : rollouts; node_min : a leaf's largest size;
    shapley_steps : coalitions per Shapley value; log : a tqdm progress bar of the rollouts
    """

    @staticmethod
    def _size(nodes):
        return len(nodes)

    def shapley(self, subgraph_nodes):
        """Monte Carlo Shapley value (float) of the nodes ``subgraph_nodes`` for ``target_class``."""
        num_nodes = self.graph.num_nodes()
        subgraph_nodes = subgraph_nodes.tolist()
        region = subgraph_nodes
        for _ in range(self.num_hops - 1):  # DGL's Python sets: their order decides the coalitions drawn
            ids = torch.tensor(region, dtype=self.graph.idtype)
            in_nbrs, _ = self.graph.in_edges(ids)
            _, out_nbrs = self.graph.out_edges(ids)
            region = list(set(region + torch.cat([in_nbrs, out_nbrs]).tolist()))
        space = list(set(region) - set(subgraph_nodes)) + [num_nodes]
        region = torch.as_tensor(region, dtype=torch.long)
        inside = torch.as_tensor(subgraph_nodes, dtype=torch.long)
        contributions = []
        for _ in range(self.shapley_steps):
            exclude = torch.ones(num_nodes)
            exclude[region] = 0.0
            exclude[torch.as_tensor(self._coalition(space, num_nodes), dtype=torch.long)] = 1.0
            include = exclude.clone()
            include[inside] = 1.0
            device = self.feat.device
            excluded = self._value(self.feat * exclude.unsqueeze(1).to(device))
            contributions.append(self._value(self.feat * include.unsqueeze(1).to(device)) - excluded)
        return torch.cat(contributions).mean().item()

    def get_mcts_children(self, mcts_node):
        """The children of ``mcts_node`` (built and scored on the first call)."""
        if len(mcts_node.children) > 0:
            return mcts_node.children
        subg = node_subgraph(self.graph, mcts_node.nodes)
        degrees = subg.out_degrees() + subg.in_degrees()
        chosen = torch.topk(degrees, min(subg.num_nodes(), self.num_child), largest=self.high2low).indices
        src, dst = subg.edges()
        kept, _ = _largest_components(subg.num_nodes(), src.long(), dst.long(), chosen.long())
        children = {}
        for row in kept:  # one per dropped node
            nodes = subg.ndata[NID][row].sort().values
            self._child(tuple(nodes.tolist()), nodes, children)
        return self._score_children(mcts_node, children)

    def explain_graph(self, graph, feat, target_class, **kwargs):
        """The most important subgraph of ``graph`` (features ``feat [N, D]``) for ``target_class``: its node ids
        (``graph.idtype``, ascending).  AssertionError unless ``graph`` has more than ``node_min`` nodes."""
        root = graph.nodes()
        return self._search(graph, feat, target_class, kwargs, root, tuple(root.tolist()))


def _key(nodes: dict):
    return tuple((str(nt), tuple(ids.tolist())) for nt, ids in nodes.items())


class HeteroSubgraphX(_Search):
    """DGL's ``HeteroSubgraphX``: :class:`SubgraphX` over a typed graph (``feat`` a ``{ntype: [N_t, D_t]}``
    dict; nodes ``{ntype: ids}``); a child whose graph has no edge left is one node drawn with
    ``np.random.choice``, as DGL's.  Same arguments."""

    @staticmethod
    def _size(nodes):
        return sum(len(ids) for ids in nodes.values())

    def shapley(self, subgraph_nodes):
        """Monte Carlo Shapley value (float) of ``subgraph_nodes`` (``{ntype: ids}``), DGL's sign (module doc)."""
        graph = self.graph
        regions = {nt: ids.tolist() for nt, ids in subgraph_nodes.items()}
        for _ in range(self.num_hops - 1):
            for cet in graph.canonical_etypes:
                stype, _, dtype = cet
                if stype not in regions or dtype not in regions:
                    continue
                in_nbrs, _ = graph.in_edges(torch.tensor(regions[dtype], dtype=graph.idtype), etype=cet)
                _, out_nbrs = graph.out_edges(torch.tensor(regions[stype], dtype=graph.idtype), etype=cet)
                regions[stype] = list(set(regions[stype] + in_nbrs.tolist()))
                regions[dtype] = list(set(regions[dtype] + out_nbrs.tolist()))
        split_point = graph.num_nodes()
        spaces = {nt: list(set(regions[nt]) - set(ids.tolist())) + [split_point] for nt, ids in subgraph_nodes.items()}
        contributions = []
        for _ in range(self.shapley_steps):
            picked = {nt: self._coalition(space, split_point) for nt, space in spaces.items()}
            exclude = {nt: torch.ones(graph.num_nodes(nt)) for nt in graph.ntypes}
            for nt, region in regions.items():
                exclude[nt][torch.as_tensor(region, dtype=torch.long)] = 0.0
            for nt, ids in picked.items():
                exclude[nt][torch.as_tensor(ids, dtype=torch.long)] = 1.0
            include = {nt: m.clone() for nt, m in exclude.items()}
            for nt, ids in subgraph_nodes.items():
                exclude[nt][ids] = 1.0  # DGL 2.1's mask (module doc)
            feats = [{nt: self.feat[nt] * m[nt].unsqueeze(1).to(self.feat[nt].device) for nt in graph.ntypes}
                     for m in (exclude, include)]
            excluded = self._value(feats[0])
            contributions.append(self._value(feats[1]) - excluded)
        return torch.cat(contributions).mean().item()

    def get_mcts_children(self, mcts_node):
        """The children of ``mcts_node`` (built and scored on the first call)."""
        if len(mcts_node.children) > 0:
            return mcts_node.children
        subg = node_subgraph(self.graph, mcts_node.nodes)
        ntypes = subg.ntypes
        degrees = {nt: torch.zeros(subg.num_nodes(nt)) for nt in ntypes}
        for cet in subg.canonical_etypes:
            degrees[cet[0]] += subg.out_degrees(etype=cet)
            degrees[cet[2]] += subg.in_degrees(etype=cet)
        counts = torch.tensor([subg.num_nodes(nt) for nt in ntypes])
        offsets = torch.cumsum(counts, 0) - counts
        kind = torch.repeat_interleave(torch.arange(len(ntypes)), counts)
        chosen = torch.topk(torch.cat([degrees[nt] for nt in ntypes]), min(subg.num_nodes(), self.num_child),
                            largest=self.high2low).indices
        ends = [torch.cat([subg.edges(etype=cet)[i].long() + offsets[ntypes.index(cet[2 * i])]
                           for cet in subg.canonical_etypes]) for i in (0, 1)]
        kept, edges_left = _largest_components(subg.num_nodes(), ends[0], ends[1], chosen)
        children = {}
        for removed, row, left in zip(chosen.tolist(), kept, edges_left.tolist()):  # one per dropped node
            if left > 0:
                # DGL's order: a Python set of the ids in the homogeneous graph without the dropped node
                ids = row.nonzero().view(-1)
                ids = torch.tensor(list(set((ids - (ids > removed).long()).tolist())), dtype=torch.long)
                ids = ids + (ids >= removed).long()
                nodes = {nt: subg.ndata[NID][nt][ids[kind[ids] == t] - offsets[t]] for t, nt in enumerate(ntypes)}
            else:
                t = int(kind[removed])
                left_types = [nt for i, (nt, n) in enumerate(zip(ntypes, counts.tolist())) if n - (i == t) > 0]
                nt = str(np.random.choice(left_types))
                local = torch.arange(subg.num_nodes(nt))
                if nt == ntypes[t]:
                    local = local[local != removed - offsets[t]]
                nodes = {nt: torch.tensor([subg.ndata[NID][nt][np.random.choice(local.numpy())]])}
            self._child(_key(nodes), nodes, children)
        return self._score_children(mcts_node, children)

    def explain_graph(self, graph, feat, target_class, **kwargs):
        """The most important subgraph of ``graph`` (features ``{ntype: [N_t, D_t]}``) for ``target_class``:
        ``{ntype: ids}``.  AssertionError unless ``graph`` has more than ``node_min`` nodes."""
        root = {nt: graph.nodes(nt) for nt in graph.ntypes}
        return self._search(graph, feat, target_class, kwargs, root, _key(root))
