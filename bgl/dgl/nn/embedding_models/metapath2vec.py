"""DGL's ``dgl.nn.MetaPath2Vec`` (Dong et al.): skip-gram over metapath-guided walks of a typed graph.

Nodes are numbered as ``dgl.to_homogeneous`` numbers them (type by type, in the graph's type order), one
embedding table over all of them.  As DGL's, a walk that ends early (-1 in its trace) reads as the last
node of that position's type, and the window pairs are DGL's: for position ``i``, the positions of
``trace[max(i - w, 0) : i + w]`` whose index *within that slice* differs from ``i``.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .deepwalk import _ids


def metapath_window_pairs(length: int, window_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(centre position, context position) int64 of the pairs DGL's ``MetaPath2Vec.sample`` makes in a trace of
    ``length`` nodes, in its order (module doc)."""
    centre, context = [], []
    for i in range(length):  # over a trace's positions (a metapath's length), not the graph
        start = max(i - window_size, 0)
        span = torch.arange(start, min(i + window_size, length))
        span = span[span - start != i]
        centre.append(torch.full_like(span, i))
        context.append(span)
    return torch.cat(centre), torch.cat(context)


class MetaPath2Vec(nn.Module):
    """metapath2vec's node embeddings (DGL 2.1's module, same parameters, defaults and loss).

    Parameters
    ----------
    g : a typed ``bgl.dgl`` graph
    metapath : edge types of one walk (it starts at the first's source type)
    window_size : context window
    emb_dim : embedding size
    negative_size : negatives per positive pair, drawn over all nodes in proportion to frequency^0.75, the
        frequency of each node in one walk from every node of the start type (counted once per walk)
    sparse : sparse gradients of the embedding tables

    ``sample(indices)`` (a loader's ``collate_fn``, start-type ids) gives ``(pos_u [m], pos_v [m], neg_v [m,
    negative_size])`` in homogeneous ids; ``forward(pos_u, pos_v, neg_v)`` is the loss, a scalar.
    ``local_to_global_nid[ntype]`` maps a type's ids to homogeneous ones (int64 tensors; DGL keeps lists).
    """

    def __init__(self, g, metapath, window_size, emb_dim=128, negative_size=5, sparse=True):
        super().__init__()
        if not len(metapath) + 1 >= window_size:
            raise AssertionError(f"Expect len(metapath) >= window_size - 1, got {metapath} and {window_size}")
        self.hg, self.emb_dim, self.metapath = g, emb_dim, metapath
        self.window_size, self.negative_size = window_size, negative_size
        self.node_metapath = [g.to_canonical_etype(metapath[0])[0]] + [g.to_canonical_etype(e)[2] for e in metapath]
        counts = torch.tensor([g.num_nodes(nt) for nt in g.ntypes])
        starts = torch.cumsum(counts, 0) - counts
        self.local_to_global_nid = {nt: torch.arange(int(n)) + int(s) for nt, n, s in zip(g.ntypes, counts, starts)}
        self._pairs = metapath_window_pairs(len(self.node_metapath), window_size)
        num_nodes_total = int(counts.sum())
        start_nodes = torch.arange(g.num_nodes(self.node_metapath[0]))
        nids = self._global_ids(start_nodes)
        walk = torch.arange(nids.shape[0]).repeat_interleave(nids.shape[1])
        seen = torch.unique(walk * num_nodes_total + nids.reshape(-1)) % num_nodes_total  # once per walk (DGL's +=)
        node_frequency = torch.bincount(seen, minlength=num_nodes_total).float()
        neg_prob = node_frequency.pow(0.75)
        self.neg_prob = neg_prob / neg_prob.sum()
        self.node_embed = nn.Embedding(num_nodes_total, emb_dim, sparse=sparse)
        self.context_embed = nn.Embedding(num_nodes_total, emb_dim, sparse=sparse)
        self.reset_parameters()

    def reset_parameters(self):
        """Node embeddings uniform in +-1/emb_dim, context embeddings zero (DGL's)."""
        bound = 1.0 / self.emb_dim
        nn.init.uniform_(self.node_embed.weight.data, -bound, bound)
        nn.init.constant_(self.context_embed.weight.data, 0)

    def _global_ids(self, nodes: torch.Tensor) -> torch.Tensor:
        """Walks from ``nodes`` along the metapath, int64 [n, len(metapath) + 1] homogeneous ids (-1: the
        position type's last node, as DGL's list indexing reads it)."""
        from bgl.dgl.sampling.random_walks import random_walk

        traces, _ = random_walk(self.hg, nodes, metapath=self.metapath)
        traces = traces.long()
        sizes = torch.tensor([self.hg.num_nodes(nt) for nt in self.node_metapath])
        starts = torch.stack([self.local_to_global_nid[nt][0] if self.hg.num_nodes(nt) else torch.tensor(0)
                              for nt in self.node_metapath])
        return starts + torch.where(traces < 0, traces + sizes, traces)

    def sample(self, indices):
        """Positive pairs of the walks from ``indices`` and ``negative_size`` negatives per pair (class doc)."""
        from bgl.dgl.sampling.choice import choice

        nids = self._global_ids(_ids(indices))
        centre, context = self._pairs
        pos_u, pos_v = nids[:, centre].reshape(-1), nids[:, context].reshape(-1)
        neg_v = choice(self.neg_prob, pos_u.shape[0] * self.negative_size).view(pos_u.shape[0], self.negative_size)
        return pos_u, pos_v, neg_v

    def forward(self, pos_u, pos_v, neg_v):
        """``-log sigmoid(u . v) - sum log sigmoid(-u . n)`` averaged over the pairs, scores clamped to +-10."""
        emb_u = self.node_embed(pos_u)
        emb_v = self.context_embed(pos_v)
        emb_neg_v = self.context_embed(neg_v)
        score = -F.logsigmoid(torch.clamp((emb_u * emb_v).sum(1), min=-10, max=10))
        neg_score = torch.clamp(torch.bmm(emb_neg_v, emb_u.unsqueeze(2)).squeeze(), min=-10, max=10)
        neg_score = -torch.sum(F.logsigmoid(-neg_score), dim=1)
        return torch.mean(score + neg_score)
