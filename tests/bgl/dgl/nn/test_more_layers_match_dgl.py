"""More of DGL 2.1's layers against DGL's own on the same weights (DGL's state dict loaded, strict): the
edge-feature convolutions (GMMConv, CFConv, EGATConv, EdgeGATConv, GatedGCNConv, PNAConv), the dense-adjacency
ones (DenseGraphConv, DenseSAGEConv, DenseChebConv), LabelPropagation, TWIRLSConv / TWIRLSUnfoldingAndAttention
and the knowledge-graph scorers TransE / TransR.  Outputs, input and parameter gradients within 1e-5 on graphs
and blocks, DGL's initialisation (distributionally) and DGL's errors.  Pinned lane only (skipped without DGL)."""
from __future__ import annotations

import dataclasses

import pytest
import torch

dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
import dgl.nn as dglnn  # noqa: E402

import bgl.dgl  # noqa: E402
import bgl.dgl.nn as bglnn  # noqa: E402

from .test_dense_modules_match_dgl import _same as same_dense  # noqa: E402
from .test_layers_match_dgl import both, check_same, feat  # noqa: E402


def efeat(e, width: int):
    return torch.randn(e.src.shape[0], width).requires_grad_()


def with_self_loops(e):
    """``e`` plus an edge i -> i for every dst node (no dst without in-edges: EGATConv refuses those)."""
    loops = torch.arange(e.num_dst)
    return dataclasses.replace(e, src=torch.cat([e.src, loops]), dst=torch.cat([e.dst, loops]))


def for_pna(e):
    """``e`` without repeated (src, dst) pairs and without dst nodes of in-degree 2 (their in-edges dropped).

    PNA's statistics that are 0 in exact arithmetic come out as rounding noise, which the roots enlarge:
    the std of equal messages (duplicate edges) and the odd moments of two messages (``(d^3 - d^3) / 2``,
    whose cube root turns 1e-10 into 5e-4).  There the two layers would compare their rounding, not PNA.
    """
    pairs = torch.unique(torch.stack([e.src, e.dst], 1), dim=0)
    degree = torch.bincount(pairs[:, 1], minlength=e.num_dst)
    pairs = pairs[degree[pairs[:, 1]] != 2]
    return dataclasses.replace(e, src=pairs[:, 0], dst=pairs[:, 1])


@pytest.mark.parametrize("aggregator,where,widths,pair", [("sum", "block", (6, 4), False),
                                                           ("max", "graph", (4, 4), False),
                                                           ("mean", "block", ((5, 3), 4), True)])
def test_gmmconv(build, block_edges, graph_edges, aggregator, where, widths, pair):
    e = block_edges if where == "block" else graph_edges
    src_w, dst_w = widths[0] if pair else (widths[0], widths[0])
    x = (lambda: (feat(e.num_src, src_w), feat(e.num_dst, dst_w))) if pair else (lambda: feat(e.num_src, src_w))
    check_same(lambda nn: nn.GMMConv(widths[0], widths[1], dim=2, n_kernels=3, aggregator_type=aggregator,
                                     residual=True, allow_zero_in_degree=True),
               both(build, e), lambda: ((x(), efeat(e, 2)), {}))


@pytest.mark.parametrize("where", ["block", "graph"])
def test_cfconv(build, block_edges, graph_edges, where):
    e = block_edges if where == "block" else graph_edges
    check_same(lambda nn: nn.CFConv(4, 3, 5, 2), both(build, e), lambda: ((feat(e.num_src, 4), efeat(e, 3)), {}))


def test_egatconv_graph(build, graph_edges):
    e = with_self_loops(graph_edges)
    check_same(lambda nn: nn.EGATConv(5, 3, 4, 2, num_heads=3), both(build, e),
               lambda: ((feat(e.num_src, 5), efeat(e, 3)),
                        {"edge_weight": torch.rand(e.src.shape[0]).requires_grad_(), "get_attention": True}))


def test_egatconv_block_pair(build, block_edges):
    e = with_self_loops(block_edges)
    check_same(lambda nn: nn.EGATConv((5, 4), 3, 2, 6, num_heads=2), both(build, e),
               lambda: (((feat(e.num_src, 5), feat(e.num_dst, 4)), efeat(e, 3)), {}))


@pytest.mark.parametrize("where,residual", [("block", True), ("graph", False)])
def test_edgegatconv(build, block_edges, graph_edges, where, residual):
    e = block_edges if where == "block" else graph_edges
    check_same(lambda nn: nn.EdgeGATConv(5, 3, 4, num_heads=2, residual=residual, negative_slope=0.1,
                                         activation=torch.nn.functional.elu, allow_zero_in_degree=True),
               both(build, e), lambda: ((feat(e.num_src, 5), efeat(e, 3)), {"get_attention": True}))


def test_edgegatconv_pair_widths(build, block_edges):
    e = block_edges
    check_same(lambda nn: nn.EdgeGATConv((5, 3), 2, 4, num_heads=2, bias=False, allow_zero_in_degree=True),
               both(build, e), lambda: (((feat(e.num_src, 5), feat(e.num_dst, 3)), efeat(e, 2)), {}))


@pytest.mark.parametrize("widths,batch_norm", [((4, 4, 4), True), ((5, 3, 4), False)])
def test_gatedgcnconv(build, graph_edges, widths, batch_norm):
    e = graph_edges
    check_same(lambda nn: nn.GatedGCNConv(*widths, batch_norm=batch_norm), both(build, e),
               lambda: ((feat(e.num_src, widths[0]), efeat(e, widths[1])), {}))


ALL_AGGREGATORS = ["mean", "sum", "max", "min", "std", "var", "moment3", "moment4", "moment5"]


def test_pnaconv_towers_edge_features(build, graph_edges):
    e = for_pna(graph_edges)
    check_same(lambda nn: nn.PNAConv(6, 6, ALL_AGGREGATORS, ["identity", "amplification", "attenuation"], 1.3,
                                     num_towers=2, edge_feat_size=3),
               both(build, e), lambda: ((feat(e.num_src, 6), efeat(e, 3)), {}))


def test_pnaconv_batched_graphs(build):
    """Per-graph size normalisation of a ``dgl.batch``; widths differ, so no residual."""
    parts = [for_pna(build.random_edges(seed, 12, 12, 30, block=False)) for seed in (7, 8)]
    graphs = (dgl.batch([build.dgl(p) for p in parts]), bgl.dgl.batch([build.bgl(p) for p in parts]))
    check_same(lambda nn: nn.PNAConv(4, 6, ["mean", "max", "std"], ["identity", "attenuation"], 0.8),
               graphs, lambda: ((feat(24, 4),), {}))


@pytest.mark.parametrize("make", [lambda nn: nn.GMMConv(4, 3, 2, 2), lambda nn: nn.EGATConv(4, 2, 3, 3, 2),
                                  lambda nn: nn.EdgeGATConv(4, 2, 3, 2)])
def test_zero_in_degree_refused_as_dgl_does(build, block_edges, make):
    e = block_edges
    args = ((torch.randn(e.num_src, 4), torch.randn(e.num_dst, 4)), torch.randn(e.src.shape[0], 2))
    with pytest.raises(dgl.DGLError) as theirs:
        make(dglnn)(build.dgl(e), *args)
    with pytest.raises(bgl.dgl.DGLError) as ours:
        make(bglnn)(build.bgl(e), *args)
    assert str(ours.value) == str(theirs.value)


def test_bad_arguments_raise_dgl_error_types(build, block_edges, graph_edges):
    g = build.bgl(graph_edges)
    with pytest.raises(KeyError, match="Aggregator type lstm not recognized"):
        bglnn.GMMConv(4, 3, 2, 2, "lstm")
    with pytest.raises(AssertionError, match="in_size must be divisible by num_towers"):
        bglnn.PNAConv(4, 4, ["mean"], ["identity"], 1.0, num_towers=3)
    with pytest.raises(AssertionError, match="Edge features must be provided"):
        bglnn.PNAConv(4, 4, ["mean"], ["identity"], 1.0, edge_feat_size=2)(g, torch.randn(g.num_nodes(), 4))
    e = with_self_loops(block_edges)
    with pytest.raises(dgl.DGLError) as theirs:  # one tensor on a block: DGL stores it as dst data too
        dglnn.EGATConv(4, 2, 3, 3, 2)(build.dgl(e), torch.randn(e.num_src, 4), torch.randn(e.src.shape[0], 2))
    with pytest.raises(bgl.dgl.DGLError) as ours:
        bglnn.EGATConv(4, 2, 3, 3, 2)(build.bgl(e), torch.randn(e.num_src, 4), torch.randn(e.src.shape[0], 2))
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(dgl.DGLError):
        dglnn.PNAConv(4, 4, ["mean"], ["identity"], 1.0)(build.dgl(e), torch.randn(e.num_src, 4))
    with pytest.raises(bgl.dgl.DGLError, match="PNAConv runs on a graph, not a block"):
        bglnn.PNAConv(4, 4, ["mean"], ["identity"], 1.0)(build.bgl(e), torch.randn(e.num_src, 4))
    args = (torch.randn(e.num_src, 4), torch.randn(e.src.shape[0], 2))
    with pytest.raises(AssertionError):
        dglnn.GatedGCNConv(4, 2, 4)(build.dgl(e), *args)
    with pytest.raises(AssertionError, match="GatedGCNConv runs on a graph, not a block"):
        bglnn.GatedGCNConv(4, 2, 4)(build.bgl(e), *args)


def adjacency(rows: int, cols: int, seed: int = 3) -> torch.Tensor:
    """A weighted [rows, cols] adjacency with an all-zero row and column (degrees clamped to 1 there)."""
    gen = torch.Generator().manual_seed(seed)
    adj = torch.rand(rows, cols, generator=gen) * (torch.rand(rows, cols, generator=gen) < 0.4)
    adj[-1], adj[:, -1] = 0, 0
    return adj.requires_grad_()


@pytest.mark.parametrize("norm,widths", [("both", (6, 4)), ("right", (4, 6)), ("none", (4, 6))])
def test_densegraphconv(norm, widths):
    same_dense(lambda nn: nn.DenseGraphConv(*widths, norm=norm, activation=torch.tanh),
               lambda: [adjacency(7, 9), feat(9, widths[0])])


def test_densesageconv():
    same_dense(lambda nn: nn.DenseSAGEConv(5, 3, norm=torch.nn.functional.normalize, activation=torch.relu),
               lambda: [adjacency(8, 8), feat(8, 5)])
    same_dense(lambda nn: nn.DenseSAGEConv(5, 3, bias=False), lambda: [adjacency(4, 8), (feat(8, 5), feat(4, 5))])
    with pytest.raises(dgl.DGLError):
        dglnn.DenseSAGEConv(5, 3)(adjacency(4, 8), (torch.randn(8, 5), torch.randn(4, 3)))
    with pytest.raises(bgl.dgl.DGLError, match="should be equal"):
        bglnn.DenseSAGEConv(5, 3)(adjacency(4, 8), (torch.randn(8, 5), torch.randn(4, 3)))


@pytest.mark.parametrize("k,bias", [(1, True), (4, False)])
def test_densechebconv(k, bias):
    same_dense(lambda nn: nn.DenseChebConv(5, 3, k, bias=bias), lambda: [adjacency(8, 8), feat(8, 5), 1.7])


@pytest.mark.parametrize("options,multi_label", [
    (dict(norm_type="sym"), False), (dict(norm_type="row", clamp=False, normalize=True, reset=True), False),
    (dict(norm_type="sym", reset=True), True)])
def test_label_propagation(build, graph_edges, options, multi_label):
    e = graph_edges
    gen = torch.Generator().manual_seed(4)
    labels = torch.randint(0, 4, (e.num_src,), generator=gen)
    if multi_label:
        labels = (torch.rand(e.num_src, 3, generator=gen) < 0.5).long()
    mask = torch.rand(e.num_src, generator=gen) < 0.5
    theirs = dglnn.LabelPropagation(3, 0.8, **options)(build.dgl(e), labels, mask)
    ours = bglnn.LabelPropagation(3, 0.8, **options)(build.bgl(e), labels, mask)
    torch.testing.assert_close(ours, theirs, atol=1e-6, rtol=1e-6)


def test_label_propagation_errors(build, graph_edges, block_edges):
    labels = torch.zeros(graph_edges.num_src, dtype=torch.long)
    with pytest.raises(ValueError) as theirs:
        dglnn.LabelPropagation(2, 0.5, norm_type="col")(build.dgl(graph_edges), labels)
    with pytest.raises(ValueError) as ours:
        bglnn.LabelPropagation(2, 0.5, norm_type="col")(build.bgl(graph_edges), labels)
    assert str(ours.value) == str(theirs.value)
    labels = torch.zeros(block_edges.num_src, dtype=torch.long)
    with pytest.raises(AssertionError):  # DGL's ndata view of a block asserts
        dglnn.LabelPropagation(2, 0.5)(build.dgl(block_edges), labels)
    with pytest.raises(AssertionError, match="LabelPropagation runs on a graph, not a block"):
        bglnn.LabelPropagation(2, 0.5)(build.bgl(block_edges), labels)


@pytest.mark.parametrize("p", [1, 2])
def test_transe_transr(p):
    rels = torch.tensor([0, 2, 1, 2, 0])
    same_dense(lambda nn: nn.TransE(3, 4, p=p), lambda: [feat(5, 4), feat(5, 4), rels])
    same_dense(lambda nn: nn.TransR(3, 2, 4, p=p), lambda: [feat(5, 4), feat(5, 4), rels])


TWIRLS_CASES = {
    "plain": dict(),
    "attention": dict(num_mlp_before=2, num_mlp_after=2, norm="batch", precond=False, attention=True, T=3.0,
                      use_eta=True, attn_bef=True, lam=0.7, alp=0.3),
    "layer_norm_p2": dict(num_mlp_after=3, norm="layer", attention=True, p=2, tau=0.5),
}


@pytest.mark.parametrize("case", sorted(TWIRLS_CASES))
def test_twirlsconv(build, graph_edges, case):
    e = graph_edges
    check_same(lambda nn: nn.TWIRLSConv(5, 3, 6, prop_step=4, **TWIRLS_CASES[case]), both(build, e),
               lambda: ((feat(e.num_src, 5),), {}))


def test_twirlsconv_caches_a_parameter_free_unfolding(build, graph_edges):
    """No MLP before the unfolding: the first call's unfolding is reused by the next, whatever it passes."""
    e = graph_edges
    x, y = torch.randn(e.num_src, 5), torch.randn(e.num_src, 5)
    torch.manual_seed(0)
    theirs = dglnn.TWIRLSConv(5, 3, 6, prop_step=3, num_mlp_before=0)
    ours = bglnn.TWIRLSConv(5, 3, 6, prop_step=3, num_mlp_before=0)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    for layer, g in ((theirs, build.dgl(e)), (ours, build.bgl(e))):
        layer(g, x)
    torch.testing.assert_close(ours(build.bgl(e), y), theirs(build.dgl(e), y), atol=1e-5, rtol=1e-5)


def test_twirls_unfolding_on_a_graph_with_self_loops(build, graph_edges):
    e = with_self_loops(graph_edges)
    check_same(lambda nn: nn.TWIRLSUnfoldingAndAttention(4, 0, 2.0, 5, attn_aft=2, use_eta=True, init_att=True),
               both(build, e), lambda: ((feat(e.num_src, 4),), {}))


INIT_CASES = {
    "GMMConv": lambda nn: nn.GMMConv(40, 30, 3, 4, residual=True),
    "CFConv": lambda nn: nn.CFConv(40, 20, 30, 25),
    "EGATConv": lambda nn: nn.EGATConv(40, 20, 30, 25, num_heads=4),
    "EdgeGATConv": lambda nn: nn.EdgeGATConv(40, 20, 30, num_heads=4),
    "GatedGCNConv": lambda nn: nn.GatedGCNConv(40, 20, 30),
    "PNAConv": lambda nn: nn.PNAConv(40, 40, ["mean", "max"], ["identity", "amplification"], 1.0, num_towers=2,
                                     edge_feat_size=8),
    "DenseGraphConv": lambda nn: nn.DenseGraphConv(40, 30),
    "DenseSAGEConv": lambda nn: nn.DenseSAGEConv(40, 30),
    "DenseChebConv": lambda nn: nn.DenseChebConv(40, 30, 3),
    "TWIRLSConv": lambda nn: nn.TWIRLSConv(40, 30, 50, 2, num_mlp_before=2, norm="batch", use_eta=True,
                                           attention=True),
    "TransE": lambda nn: nn.TransE(30, 20),
    "TransR": lambda nn: nn.TransR(30, 20, 10),
}


@pytest.mark.parametrize("name", sorted(INIT_CASES))
def test_initialisation_matches_dgl(name):
    """Same parameter names and shapes; each parameter's mean and spread as DGL's draws (constants exactly)."""
    torch.manual_seed(0)
    theirs = dict(INIT_CASES[name](dglnn).named_parameters())
    ours = dict(INIT_CASES[name](bglnn).named_parameters())
    assert list(ours) == list(theirs)
    for key, value in theirs.items():
        assert ours[key].shape == value.shape, key
        if value.numel() < 50 or value.std() == 0:
            if value.std() == 0:
                torch.testing.assert_close(ours[key], value, msg=key)
            continue
        spread = (2 / value.numel()) ** 0.5  # standard error of a difference of two draws' means, in stds
        assert abs(ours[key].mean() - value.mean()) < 5 * spread * value.std(), key
        assert abs(ours[key].std() / value.std() - 1) < 5 * spread, key


def test_weight_basis_and_identity_are_dgls():
    theirs = dglnn.WeightBasis((3, 4), 2, 5)
    ours = bglnn.WeightBasis((3, 4), 2, 5)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    ours.load_state_dict(theirs.state_dict(), strict=True)
    out = ours()
    assert out.shape == (5, 3, 4)
    torch.testing.assert_close(out, theirs())
    out.sum().backward()
    theirs().sum().backward()
    torch.testing.assert_close(ours.w_comp.grad, theirs.w_comp.grad)
    x = torch.randn(3, 2)
    from dgl.nn.pytorch.utils import Identity

    assert torch.equal(bglnn.Identity()(x), Identity()(x))
