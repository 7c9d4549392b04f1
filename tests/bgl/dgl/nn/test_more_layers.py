"""The edge-feature convolutions without DGL: shapes, gradients, the refusals, and per-node references
(loops over each node's in-edges, written apart from the layers' segment reductions) for PNAConv and
GMMConv.  Runs in both lanes."""
from __future__ import annotations

import math

import pytest
import torch

import bgl.dgl
import bgl.dgl.nn as dglnn

TOL = dict(atol=1e-5, rtol=1e-5)

EDGE_FEATURE_CASES = {  # name: (layer, number of edge-input columns, output shapes as functions of (n_dst, n_edges))
    "GMMConv": (lambda: dglnn.GMMConv(4, 3, 2, 3, "max", residual=True, allow_zero_in_degree=True), 2,
                lambda n, m: [(n, 3)]),
    "CFConv": (lambda: dglnn.CFConv(4, 2, 5, 3), 2, lambda n, m: [(n, 3)]),
    "EGATConv": (lambda: dglnn.EGATConv(4, 2, 3, 5, num_heads=2), 2, lambda n, m: [(n, 2, 3), (m, 2, 5)]),
    "EdgeGATConv": (lambda: dglnn.EdgeGATConv(4, 2, 3, num_heads=2, allow_zero_in_degree=True), 2,
                    lambda n, m: [(n, 2, 3)]),
    "GatedGCNConv": (lambda: dglnn.GatedGCNConv(4, 2, 3), 2, lambda n, m: [(n, 3), (m, 3)]),
    "PNAConv": (lambda: dglnn.PNAConv(4, 4, ["mean", "max", "std", "moment3"], ["identity", "attenuation"], 1.0,
                                      num_towers=2, edge_feat_size=2), 2, lambda n, m: [(n, 4)]),
}


@pytest.mark.parametrize("name", sorted(EDGE_FEATURE_CASES))
def test_edge_feature_convs_shapes_and_gradients(build, graph_edges, name):
    make, edge_width, shapes = EDGE_FEATURE_CASES[name]
    e = graph_edges
    loops = torch.arange(e.num_src)  # self-loops: EGATConv refuses nodes without in-edges
    g = bgl.dgl.graph((torch.cat([e.src, loops]), torch.cat([e.dst, loops])), num_nodes=e.num_src)
    torch.manual_seed(0)
    x = torch.randn(g.num_nodes(), 4, requires_grad=True)
    ef = torch.randn(g.num_edges(), edge_width, requires_grad=True)
    out = make()(g, x, ef)
    out = list(out) if isinstance(out, tuple) else [out]
    assert [tuple(o.shape) for o in out] == shapes(g.num_nodes(), g.num_edges())
    sum(o.sum() for o in out).backward()
    assert torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0
    assert torch.isfinite(ef.grad).all() and ef.grad.abs().sum() > 0


def test_refusals(build, block_edges):
    e = block_edges
    block = build.bgl(e)
    with pytest.raises(bgl.dgl.DGLError, match="0-in-degree nodes"):
        dglnn.EGATConv(4, 2, 3, 3, 2)(block, (torch.randn(e.num_src, 4), torch.randn(e.num_dst, 4)),
                                      torch.randn(e.src.shape[0], 2))
    with pytest.raises(bgl.dgl.DGLError, match="GatedGCNConv runs on a graph, not a block"):
        dglnn.GatedGCNConv(4, 2, 4)(block, torch.randn(e.num_src, 4), torch.randn(e.src.shape[0], 2))
    with pytest.raises(KeyError):
        dglnn.PNAConv(4, 4, ["median"], ["identity"], 1.0)


def in_edges_of(e, v: int):
    return (e.dst == v).nonzero().flatten()


def test_pnaconv_equals_per_node_reference(build, graph_edges):
    e = graph_edges
    pairs = torch.unique(torch.stack([e.src, e.dst], 1), dim=0)  # no duplicate edges: no zero-variance roots
    e.src, e.dst = pairs[:, 0], pairs[:, 1]
    torch.manual_seed(0)
    aggregators, delta = ["mean", "sum", "max", "min", "std", "var", "moment4"], 1.7
    layer = dglnn.PNAConv(3, 3, aggregators, ["identity", "amplification", "attenuation"], delta,
                          edge_feat_size=2).eval()
    x, ef = torch.randn(e.num_src, 3), torch.randn(e.src.shape[0], 2)
    tower = layer.towers[0]
    rows = []
    for v in range(e.num_dst):
        edges = in_edges_of(e, v)
        if edges.numel() == 0:
            rows.append(torch.zeros(3 * 7 * 3))
            continue
        m = tower.M(torch.cat([x[e.src[edges]], x[v].expand(edges.numel(), 3), ef[edges]], dim=1))
        var = (m * m).mean(0) - m.mean(0) ** 2
        stats = torch.cat([m.mean(0), m.sum(0), m.max(0).values, m.min(0).values, (var.relu() + 1e-30).sqrt(),
                           var.relu(), ((m - m.mean(0)) ** 4).mean(0).pow(0.25)])
        d = math.log(edges.numel() + 1)
        rows.append(torch.cat([stats, stats * d / delta, stats * delta / d]))
    h = tower.U(torch.cat([x, torch.stack(rows)], dim=1)) / math.sqrt(e.num_src)
    expected = layer.mixing_layer(tower.batchnorm(h)) + x
    torch.testing.assert_close(layer(build.bgl(e), x, ef), expected, **TOL)


@pytest.mark.parametrize("aggregator", ["sum", "mean", "max"])
def test_gmmconv_equals_per_node_reference(build, block_edges, aggregator):
    e = block_edges
    torch.manual_seed(0)
    layer = dglnn.GMMConv(4, 3, 2, 3, aggregator, allow_zero_in_degree=True)
    torch.nn.init.normal_(layer.bias)
    x, pseudo = torch.randn(e.num_src, 4), torch.randn(e.src.shape[0], 2)
    z = (x @ layer.fc.weight.T).view(-1, 3, 3)  # [N, K, out]
    expected = layer.bias.repeat(e.num_dst, 1)
    for v in range(e.num_dst):
        edges = in_edges_of(e, v)
        if edges.numel() == 0:
            continue
        d2 = ((pseudo[edges, None, :] - layer.mu[None]) * layer.inv_sigma[None]) ** 2  # [deg, K, dim]
        msgs = torch.exp(-0.5 * d2.sum(-1))[:, :, None] * z[e.src[edges]]  # [deg, K, out]
        reduced = {"sum": msgs.sum(0), "mean": msgs.mean(0), "max": msgs.max(0).values}[aggregator]
        expected[v] += reduced.sum(0)
    torch.testing.assert_close(layer(build.bgl(e), x, pseudo), expected, **TOL)


def dense(e) -> torch.Tensor:
    """[num_dst, num_src] edge counts (multi-edges add up)."""
    a = torch.zeros(e.num_dst, e.num_src)
    a.index_put_((e.dst, e.src), torch.ones(e.src.shape[0]), accumulate=True)
    return a


@pytest.mark.parametrize("norm", ["both", "right", "none"])
def test_densegraphconv_equals_graphconv_on_the_same_graph(build, graph_edges, norm):
    e = graph_edges
    torch.manual_seed(0)
    sparse = dglnn.GraphConv(5, 3, norm=norm, allow_zero_in_degree=True)
    layer = dglnn.DenseGraphConv(5, 3, norm=norm)
    layer.load_state_dict(sparse.state_dict())
    x = torch.randn(e.num_src, 5)
    torch.testing.assert_close(layer(dense(e), x), sparse(build.bgl(e), x), **TOL)


def test_densechebconv_finds_lambda_max_and_sage_shapes(build, graph_edges):
    e = graph_edges
    a = dense(e)
    a = a + a.T  # symmetric: real spectrum
    torch.manual_seed(0)
    cheb = dglnn.DenseChebConv(4, 3, 3)
    x = torch.randn(e.num_src, 4, requires_grad=True)
    d = torch.diag(a.sum(1).clamp(min=1).rsqrt())
    lambda_max = torch.linalg.eigvalsh(torch.eye(e.num_src) - d @ a @ d).max()
    torch.testing.assert_close(cheb(a, x), cheb(a, x, lambda_max), **TOL)
    out = dglnn.DenseSAGEConv(4, 6, feat_drop=0.1)(a, x)
    assert out.shape == (e.num_src, 6)
    out.sum().backward()
    assert torch.isfinite(x.grad).all()


def test_label_propagation_spreads_known_labels(build):
    """A path 0 -> 1 -> 2 -> 3 with only node 0 labelled: each step moves every node's scores one node on,
    times alpha (row norm, in-degrees 1), and adds (1 - alpha) of the known labels; two steps miss node 3."""
    g = bgl.dgl.graph((torch.tensor([0, 1, 2]), torch.tensor([1, 2, 3])))
    labels, mask = torch.tensor([1, 0, 0, 0]), torch.tensor([True, False, False, False])
    y = dglnn.LabelPropagation(2, 0.5, norm_type="row", clamp=False)(g, labels, mask)
    expected = torch.tensor([[0.0, 0.5], [0.0, 0.25], [0.0, 0.25], [0.0, 0.0]])
    torch.testing.assert_close(y, expected)
    with pytest.raises(AssertionError, match="not a block"):
        dglnn.LabelPropagation(2, 0.5)(bgl.dgl.create_block((torch.tensor([0]), torch.tensor([0]))), labels[:1])


def test_transe_transr_scores():
    torch.manual_seed(0)
    head, tail, rels = torch.randn(4, 3), torch.randn(4, 3), torch.tensor([1, 0, 1, 2])
    transe = dglnn.TransE(3, 3, p=2)
    torch.testing.assert_close(transe(head, tail, rels), -(head + transe.rel_emb.weight[rels] - tail).norm(dim=1))
    transr = dglnn.TransR(3, 2, 3)
    proj = transr.rel_project.weight.view(3, 3, 2)[rels]
    diff = torch.einsum("ei,eij->ej", head - tail, proj) + transr.rel_emb.weight[rels]
    torch.testing.assert_close(transr(head, tail, rels), -diff.abs().sum(1))


@pytest.mark.parametrize("precond", [True, False])
def test_twirls_unfolding_equals_dense_iteration(build, graph_edges, precond):
    e = graph_edges
    loops = torch.arange(e.num_src)
    e.src, e.dst = torch.cat([e.src, loops]), torch.cat([e.dst, loops])
    a, x = dense(e), torch.randn(e.num_src, 3)
    lam, alp = 1.5, 0.2
    deg = a.sum(1)
    y = x
    for _ in range(3):
        if precond:
            s = (lam * deg + 1 - lam).rsqrt()[:, None]
            y = (1 - alp) * y + alp * lam * s * (a @ (s * y)) + alp * x / (lam * deg + 1 - lam)[:, None]
        else:
            s = deg.rsqrt()[:, None]
            y = (1 - alp * lam - alp) * y + alp * lam * s * (a @ (s * y)) + alp * x
    layer = dglnn.TWIRLSUnfoldingAndAttention(3, alp, lam, 3, precond=precond)
    torch.testing.assert_close(layer(build.bgl(e), x), y, **TOL)


def test_twirlsconv_with_attention_shapes_and_gradients(build, graph_edges):
    e = graph_edges
    torch.manual_seed(0)
    layer = dglnn.TWIRLSConv(4, 2, 5, prop_step=4, attention=True, use_eta=True, norm="layer", T=2.0)
    x = torch.randn(e.num_src, 4, requires_grad=True)
    out = layer(build.bgl(e), x)
    assert out.shape == (e.num_src, 2)
    out.sum().backward()
    assert torch.isfinite(x.grad).all() and torch.isfinite(layer.unfolding.etas.grad).all()


def test_weight_basis_combines_its_bases():
    wb = dglnn.WeightBasis((3, 4), 2, 5)
    out = wb()
    assert out.shape == (5, 3, 4)
    expected = torch.einsum("ob,bij->oij", wb.w_comp, wb.weight)
    torch.testing.assert_close(out, expected)
    x = torch.randn(2, 2)
    assert dglnn.Identity()(x) is x
