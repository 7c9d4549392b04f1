"""DGL's ``dgl.nn.DeepWalk`` (Perozzi et al.): skip-gram over uniform random walks of a one-type graph."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def window_pairs(walk_length: int, window_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(context position, centre position) int64 of every pair within ``window_size`` steps in a walk of
    ``walk_length`` nodes, centre by centre, the earlier context positions first (DGL's pair order)."""
    pos = torch.arange(walk_length)
    centre, context = torch.meshgrid(pos, pos, indexing="ij")
    near = (centre - context).abs() <= window_size
    near &= centre != context
    return context[near], centre[near]


class DeepWalk(nn.Module):
    """DeepWalk's node embeddings (DGL 2.1's module, same parameters, defaults and loss).

    Parameters
    ----------
    g : a one-type ``bgl.dgl`` graph
    emb_dim : embedding size
    walk_length : nodes per walk (``walk_length - 1`` steps)
    window_size : context window (each side)
    neg_weight : weight of the negative term
    negative_size : negatives per positive pair
    fast_neg : draw negatives among the batch's walk positions (else over all nodes, in proportion to
        out-degree^0.75)
    sparse : sparse gradients of the embedding tables

    ``sample(indices)`` (a loader's ``collate_fn``) walks from ``indices``: int64 [batch, walk_length];
    ``forward(batch_walk)`` is the loss, a scalar.
    """

    def __init__(self, g, emb_dim=128, walk_length=40, window_size=5, neg_weight=1, negative_size=5, fast_neg=True,
                 sparse=True):
        super().__init__()
        if not walk_length >= window_size + 1:
            raise AssertionError(f"Expect walk_length >= window_size + 1, got {walk_length} and {window_size + 1}")
        self.g, self.emb_dim, self.window_size, self.walk_length = g, emb_dim, window_size, walk_length
        self.neg_weight, self.negative_size, self.fast_neg = neg_weight, negative_size, fast_neg
        num_nodes = g.num_nodes()
        self.node_embed = nn.Embedding(num_nodes, emb_dim, sparse=sparse)
        self.context_embed = nn.Embedding(num_nodes, emb_dim, sparse=sparse)
        self.reset_parameters()
        if not fast_neg:
            neg_prob = g.out_degrees().pow(0.75)
            self.neg_prob = neg_prob / neg_prob.sum()
        self.idx_list_src, self.idx_list_dst = window_pairs(walk_length, window_size)

    def reset_parameters(self):
        """Node embeddings uniform in +-1/emb_dim, context embeddings zero (DGL's)."""
        bound = 1.0 / self.emb_dim
        nn.init.uniform_(self.node_embed.weight.data, -bound, bound)
        nn.init.constant_(self.context_embed.weight.data, 0)

    def sample(self, indices):
        """Walks of ``walk_length`` nodes from each of ``indices`` (ids or a list of 0-d tensors)."""
        from bgl.dgl.sampling.random_walks import random_walk

        return random_walk(self.g, _ids(indices), length=self.walk_length - 1)[0]

    def forward(self, batch_walk: torch.Tensor) -> torch.Tensor:
        """Skip-gram loss of a batch of walks (int64 [batch, walk_length]): ``-log sigmoid`` of each window
        pair's score plus ``negative_size * neg_weight`` times that of the negatives, scores clamped to +-6."""
        batch_size, device = len(batch_walk), batch_walk.device
        node_emb = self.node_embed(batch_walk).view(-1, self.emb_dim)
        context_emb = self.context_embed(batch_walk).view(-1, self.emb_dim)
        offsets = (torch.arange(batch_size) * self.walk_length).unsqueeze(1)
        src = (offsets + self.idx_list_src.unsqueeze(0)).view(-1).to(device)
        dst = (offsets + self.idx_list_dst.unsqueeze(0)).view(-1).to(device)
        neg_src_emb = node_emb[dst.repeat_interleave(self.negative_size)]
        if self.fast_neg:  # DGL: a shuffle of the batch's positions, each repeated, cut to length
            positions = batch_size * self.walk_length
            total = positions * self.negative_size * self.window_size * 2
            neg_dst = (torch.randperm(total)[:neg_src_emb.shape[0]] % positions).to(device)
            neg_dst_emb = context_emb[neg_dst]
        else:
            from bgl.dgl.sampling.choice import choice

            neg_dst_emb = self.context_embed(choice(self.neg_prob, neg_src_emb.shape[0]).to(device))
        pos = torch.clamp((node_emb[src] * context_emb[dst]).sum(1), min=-6, max=6)
        pos_loss = torch.mean(-F.logsigmoid(pos))
        neg = torch.clamp((neg_src_emb * neg_dst_emb).sum(1), min=-6, max=6)
        neg_loss = torch.mean(-F.logsigmoid(-neg)) * self.negative_size * self.neg_weight
        return torch.mean(pos_loss + neg_loss)


def _ids(indices) -> torch.Tensor:
    """Start nodes as one int64 tensor: a loader's list of 0-d tensors, a list of ints, or a tensor."""
    if isinstance(indices, (list, tuple)) and indices and torch.is_tensor(indices[0]):
        return torch.stack([torch.as_tensor(i).view(()) for i in indices]).long()
    return torch.as_tensor(indices).view(-1).long()
