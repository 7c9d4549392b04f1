"""``dgl.sampling.node2vec_random_walk``, ``dgl.nn.DeepWalk`` and ``dgl.nn.MetaPath2Vec`` in ``bgl.dgl`` against
real DGL 2.1: node2vec's two-step distributions (uniform and weighted) within 0.03 of DGL's on 8,000 walks;
DeepWalk's pairs, loss and gradients equal to DGL's on the same embeddings and walks; MetaPath2Vec's samples of
a graph whose walks are determined, its negative distribution and loss equal to DGL's."""
from __future__ import annotations

import pytest
import torch

dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")

import bgl.dgl as bdgl  # noqa: E402

SRC = [0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 1, 5, 0, 2, 4]  # 0 -> 5 and 4 -> 0 one way only: the adjacency test's
DST = [1, 2, 3, 0, 2, 0, 4, 0, 4, 2, 5, 3, 4, 5, 5, 0]  # direction (x -> previous node, as DGL's) matters


def _two_steps(traces) -> torch.Tensor:
    """Share of each (first, second) step pair of walks from one seed (6 x 6)."""
    t = traces.long()
    ok = t[:, 2] >= 0
    hist = torch.bincount(t[ok, 1] * 6 + t[ok, 2], minlength=36).float()
    return hist / t.shape[0]


@pytest.mark.parametrize("p,q,weighted", [(0.25, 4.0, False), (4.0, 0.25, True)])
def test_node2vec_two_step_law_matches_dgl(p, q, weighted):
    graphs = []
    for lib in (dgl, bdgl):
        g = lib.graph((torch.tensor(SRC), torch.tensor(DST)), num_nodes=6)
        g.edata["w"] = torch.arange(1, 17, dtype=torch.float32)
        graphs.append(g)
    seeds = torch.zeros(8000, dtype=torch.int64)
    prob = "w" if weighted else None
    torch.manual_seed(0)
    dgl.seed(0)
    theirs = dgl.sampling.node2vec_random_walk(graphs[0], seeds, p, q, 2, prob=prob)
    ours = bdgl.sampling.node2vec_random_walk(graphs[1], seeds, p, q, 2, prob=prob)
    assert ours.shape == theirs.shape == (8000, 3) and ours.dtype == theirs.dtype
    assert (_two_steps(ours) - _two_steps(theirs)).abs().max() < 0.03


def test_node2vec_eids_and_dead_ends_match_dgl():
    src, dst = torch.tensor([0, 1, 1, 2]), torch.tensor([1, 2, 3, 0])  # node 3: no out-edges
    for lib in (dgl, bdgl):
        g = lib.graph((src, dst), num_nodes=4)
        traces, eids = lib.sampling.node2vec_random_walk(g, torch.tensor([3, 0, 2]), 1.0, 1.0, 4, return_eids=True)
        assert traces.shape == (3, 5) and eids.shape == (3, 4)
        assert traces[0].tolist() == [3, -1, -1, -1, -1] and eids[0].tolist() == [-1] * 4
        for t, e in zip(traces[1:], eids[1:]):
            live = e >= 0
            s, d = g.find_edges(e[live])
            assert torch.equal(s, t[:-1][live]) and torch.equal(d, t[1:][live])


def _ring(lib, n=12):
    src = torch.arange(n)
    return lib.graph((torch.cat([src, (src + 1) % n]), torch.cat([(src + 1) % n, src])), num_nodes=n)


@pytest.mark.parametrize("fast_neg", [True, False])
def test_deepwalk_loss_and_grads_equal_dgl_on_same_walks(fast_neg):
    models = []
    for lib in (dgl, bdgl):
        torch.manual_seed(1)
        models.append(lib.nn.DeepWalk(_ring(lib), emb_dim=8, walk_length=6, window_size=2, negative_size=3,
                                      fast_neg=fast_neg, sparse=False))
    theirs, ours = models
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    ours.load_state_dict(theirs.state_dict())
    assert torch.equal(ours.idx_list_src, theirs.idx_list_src) and torch.equal(ours.idx_list_dst, theirs.idx_list_dst)
    with torch.no_grad():  # one context row for all: any negatives score alike, so the losses must be equal
        for m in models:
            m.context_embed.weight.copy_(torch.linspace(-0.5, 0.5, 8))
    walks = ours.sample([torch.tensor(3), torch.tensor(7)])
    assert walks.shape == (2, 6) and walks[:, 0].tolist() == [3, 7]
    assert bool(((walks[:, 1:] - walks[:, :-1]) % 12 != 0).all())
    losses = [m(walks) for m in models]
    assert torch.allclose(losses[0], losses[1], atol=1e-6)
    for loss in losses:
        loss.backward()
    assert torch.allclose(theirs.node_embed.weight.grad, ours.node_embed.weight.grad, atol=1e-6)
    # which context rows the negatives' gradient reaches is random; its sum over rows is not
    assert torch.allclose(theirs.context_embed.weight.grad.sum(0), ours.context_embed.weight.grad.sum(0), atol=1e-5)


def _author_paper(lib):
    """Each author writes one paper, each paper has one author: metapath walks are determined."""
    return lib.heterograph({("author", "writes", "paper"): (torch.tensor([0, 1, 2, 3]), torch.tensor([1, 2, 0, 2])),
                            ("paper", "by", "author"): (torch.tensor([0, 1, 2]), torch.tensor([2, 0, 3])),
                            ("paper", "cites", "paper"): (torch.tensor([0]), torch.tensor([1]))})


def test_metapath2vec_samples_and_loss_equal_dgl():
    metapath = ["writes", "by", "writes", "by"]
    models = []
    for lib in (dgl, bdgl):
        torch.manual_seed(2)
        models.append(lib.nn.MetaPath2Vec(_author_paper(lib), metapath, window_size=2, emb_dim=6, negative_size=4,
                                          sparse=False))
    theirs, ours = models
    assert ours.node_metapath == theirs.node_metapath
    assert torch.allclose(ours.neg_prob, theirs.neg_prob)
    ours.load_state_dict(theirs.state_dict())
    starts = [torch.tensor(0), torch.tensor(3)]
    (tu, tv, tn), (ou, ov, on) = theirs.sample(starts), ours.sample(starts)
    assert torch.equal(ou, tu) and torch.equal(ov, tv)
    assert on.shape == tn.shape and on.dtype == tn.dtype and bool((theirs.neg_prob[on] > 0).all())
    with torch.no_grad():
        for m in models:
            m.context_embed.weight.normal_(generator=torch.Generator().manual_seed(3))
    assert torch.allclose(ours(ou, ov, tn), theirs(tu, tv, tn), atol=1e-6)
