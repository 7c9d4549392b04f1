"""Point-cloud graphs (bgl/dgl/point_cloud) and the geometric layers (bgl/dgl/nn/geometric) against DGL 2.1:
``knn_graph`` / ``segmented_knn_graph`` / ``radius_graph`` and their modules edge for edge (order, batches,
cosine, exclude_self, errors); ``EGNNConv``, ``SetTransformerEncoder`` / ``Decoder`` and ``AtomicConv`` on DGL's
weights (outputs, input and parameter gradients within 1e-5).  Without DGL (current lane) the same calls run
against the definitions: DGL's documented examples, a sorted distance matrix, rotations, permutations."""
from __future__ import annotations

import importlib.util
import warnings

import pytest
import torch

import bgl.dgl as bdgl
import bgl.dgl.nn as bglnn
from bgl.dgl.base import DGLError, DGLWarning
from bgl.dgl.point_cloud import knn as knn_module

HAS_DGL = importlib.util.find_spec("dgl") is not None
needs_dgl = pytest.mark.skipif(not HAS_DGL, reason="needs DGL (pinned lane) to compare against")
DOC_X = torch.tensor([[0.0, 0.0, 1.0], [1.0, 0.5, 0.5], [0.5, 0.2, 0.2], [0.3, 0.2, 0.4]])


def _edges(g):
    return [t.tolist() for t in g.edges(order="eid")]


def _state(g):
    return _edges(g), g.num_nodes(), g.batch_num_nodes().tolist(), g.batch_num_edges().tolist()


def _reference_knn(x, k, exclude_self):
    """Node i's predecessors by the definition: points sorted by distance (i itself dropped if asked)."""
    order = torch.cdist(x, x).argsort(dim=1, stable=True)
    if exclude_self:
        order = torch.stack([row[row != i] for i, row in enumerate(order)])
    return order[:, :k]


def test_dgl_documented_examples():
    """DGL's docstring examples, with the edges in DGL 2.1's order (its docstrings list them sorted)."""
    x2 = torch.tensor([[0.0, 1.0, 1.0], [0.3, 0.3, 0.3], [0.4, 0.4, 1.0], [0.3, 0.8, 0.2]])
    pairs = torch.arange(8).repeat_interleave(2).tolist()
    assert _edges(bdgl.knn_graph(DOC_X, 2)) == [[0, 3, 1, 2, 2, 3, 3, 2], pairs[:8]]
    batch = bdgl.knn_graph(torch.stack([DOC_X, x2]), 2)
    assert _edges(batch) == [[0, 3, 1, 2, 2, 3, 3, 2, 4, 6, 5, 7, 6, 5, 7, 5], pairs]
    assert batch.batch_num_nodes().tolist() == [4, 4] and batch.batch_num_edges().tolist() == [8, 8]
    pts = torch.tensor([[0, 1], [1, 2], [1, 3], [100, 101], [101, 102], [50, 50], [24, 25], [25, 24]]).float()
    seg = bglnn.SegmentedKNNGraph(2)(pts, [3, 3, 2])
    assert _edges(seg) == [[0, 1, 1, 2, 2, 1, 3, 4, 4, 3, 5, 3, 6, 7, 7, 6], pairs]
    g, dist = bglnn.RadiusGraph(0.75)(DOC_X, get_distances=True)
    assert _edges(g) == [[0, 1, 2, 2, 3, 3], [3, 2, 1, 3, 0, 2]]
    torch.testing.assert_close(dist.view(-1), torch.tensor([0.7, 0.6557, 0.6557, 0.2828, 0.7, 0.2828]), atol=1e-4,
                               rtol=0)


@pytest.mark.parametrize("batched", [False, True])
def test_knn_graph_matches_dgl(batched, monkeypatch):
    """Every option on one set and on a batch of sets; blocks of 7 distances (many row blocks) change nothing."""
    x = torch.randn(3, 9, 4) if batched else torch.randn(11, 4)
    cases = [(k, alg, dist, ex) for k in (1, 4, 12) for alg in ("bruteforce-blas", "kd-tree")
             for dist in ("euclidean", "cosine") for ex in (False, True)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # k above a set's size (DGL's warning too)
        ours = [_state(bdgl.knn_graph(x, *case)) for case in cases]
        monkeypatch.setattr(knn_module, "BLOCK_ELEMENTS", 7)
        assert [_state(bglnn.KNNGraph(c[0])(x, *c[1:])) for c in cases] == ours
        if HAS_DGL:
            import dgl

            assert [_state(dgl.knn_graph(x, *case)) for case in cases] == ours
    flat = x.reshape(-1, 4)
    for (k, _, dist, ex), (edges, *_) in zip(cases, ours):
        if dist == "euclidean" and k == 4:  # the definition, set by set
            sets = flat.view(-1, x.shape[-2], 4) if batched else flat.unsqueeze(0)
            expected = torch.cat([_reference_knn(s, k, ex) + i * s.shape[0] for i, s in enumerate(sets)])
            assert edges[0] == expected.reshape(-1).tolist()


def test_segmented_knn_graph_matches_dgl():
    x = torch.randn(16, 3)
    cases = [(k, segs, alg, dist, ex) for k in (2, 5) for segs in ([6, 3, 7], [4, 6, 4, 2], [16])
             for alg in ("bruteforce-blas", "kd-tree") for dist in ("euclidean", "cosine") for ex in (False, True)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # k above a set's size (DGL's warning too)
        ours = [_state(bdgl.segmented_knn_graph(x, *case)) for case in cases]
        if HAS_DGL:
            import dgl

            assert [_state(dgl.segmented_knn_graph(x, *case)) for case in cases] == ours
    edges, nodes, batch_nodes, batch_edges = ours[cases.index((5, [6, 3, 7], "bruteforce-blas", "euclidean", True))]
    assert batch_nodes == [6, 3, 7] and batch_edges == [12, 6, 14]  # k + 1 clamped to the smallest set, less self
    assert edges[1] == torch.arange(16).repeat_interleave(2).tolist()


def test_knn_exclude_self_with_coincident_points_and_the_errors():
    x = torch.tensor([[0.0, 0.0]] * 4 + [[5.0, 5.0]] * 2)  # four points at one place: k + 1 = 3 has no room for self
    g = bdgl.knn_graph(x, 2, exclude_self=True)
    src, dst = g.edges()
    assert (src != dst).all() and g.in_degrees().tolist() == [2] * 6
    if HAS_DGL:
        import dgl

        theirs = dgl.knn_graph(x, 2, exclude_self=True)  # the edge DGL drops is random: compare the counts
        assert theirs.in_degrees().tolist() == g.in_degrees().tolist()
    with pytest.warns(DGLWarning, match="expect k <= 6, got k = 9"):
        assert bdgl.knn_graph(x, 9).num_edges() == 36
    for call, err, match in [(lambda: bdgl.knn_graph(x, 0), DGLError, "Invalid k value. expect k > 0, got k = 0"),
                             (lambda: bdgl.knn_graph(x[:0], 2), DGLError, "Find empty point set"),
                             (lambda: bdgl.knn_graph(x, 2, "foo"), DGLError, "Algorithm foo is not supported"),
                             (lambda: bdgl.knn_graph(x, 2, "kd-tree", "l3"), DGLError, "supported for distance"),
                             (lambda: bdgl.knn_graph(x, 2, "bruteforce"), NotImplementedError, "edge order"),
                             (lambda: bdgl.segmented_knn_graph(x, 2, [3, 3], "nn-descent"), NotImplementedError,
                              "nn-descent"),
                             (lambda: bdgl.radius_graph(x, 0), DGLError, "Invalid r value. expect r > 0, got r = 0")]:
        with pytest.raises(err, match=match):
            call()


def test_radius_graph_matches_dgl(monkeypatch):
    x = torch.rand(14, 3)
    cases = [(0.5, p, loop, mode) for p in (1, 2) for loop in (False, True)
             for mode in ("donot_use_mm_for_euclid_dist", "use_mm_for_euclid_dist")]
    ours = [bdgl.radius_graph(x, *case, get_distances=True) for case in cases]
    monkeypatch.setattr(knn_module, "BLOCK_ELEMENTS", 20)  # one row a block
    for case, (g, dist) in zip(cases, ours):
        g2, dist2 = bglnn.RadiusGraph(*case)(x, get_distances=True)
        assert _edges(g2) == _edges(g) and g.num_nodes() == 14
        # cdist's matmul mode rounds |a|^2 + |b|^2 - 2 a.b by the block's shape: sqrt(noise) ~ 3e-4 at distance 0
        torch.testing.assert_close(dist2, dist, atol=0 if case[3].startswith("donot") else 1e-3, rtol=0)
        full = torch.cdist(x, x, p=case[1], compute_mode=case[3])
        src, dst = g.edges()
        torch.testing.assert_close(dist.view(-1), full[src, dst])
        expected = (full <= 0.5) & (torch.ones(14, 14).bool() if case[2] else ~torch.eye(14, dtype=torch.bool))
        assert torch.equal(torch.stack([src, dst]), expected.nonzero().T)
        if HAS_DGL:
            import dgl

            theirs, their_dist = dgl.radius_graph(x, *case, get_distances=True)
            assert _edges(theirs) == _edges(g) and torch.equal(their_dist, dist)
    xs = [x.clone().requires_grad_() for _ in range(2)]  # self_loop=True: DGL's backward works there
    grads = []
    for xi, lib in zip(xs, [bdgl] + ([__import__("dgl")] if HAS_DGL else [])):
        _, dist = lib.radius_graph(xi, 0.5, self_loop=True, get_distances=True)
        (dist.view(-1) * torch.arange(dist.shape[0])).sum().backward()
        grads.append(xi.grad)
    if HAS_DGL:
        torch.testing.assert_close(grads[0], grads[1])


# ---------------------------------------------------------------------------------------------- layers
def _compare(make, run, graphs, inputs):
    """DGL's layer and ours on DGL's weights: outputs, input and parameter gradients within 1e-5 (the layer
    tests' check, each side given fresh copies of ``inputs``)."""
    from .nn.test_layers_match_dgl import check_same

    class Call(torch.nn.Module):  # check_same calls layer(graph, *args)
        def __init__(self, nn):
            super().__init__()
            self.layer = make(nn)

        def forward(self, graph, *args):
            return run(self.layer, graph, *args)

    check_same(Call, graphs, lambda: ([t.clone().requires_grad_(t.is_floating_point()) for t in inputs], {}))


def _graphs(src, dst, n):
    import dgl

    return dgl.graph((src, dst), num_nodes=n), bdgl.graph((src, dst), num_nodes=n)


EDGES = (torch.tensor([0, 1, 2, 3, 4, 4, 1, 0, 2]), torch.tensor([1, 0, 0, 0, 2, 3, 3, 4, 4]), 6)  # node 5: no in-edge


@needs_dgl
@pytest.mark.parametrize("edge_feat_size", [0, 2])
def test_egnnconv_matches_dgl(edge_feat_size):
    inputs = [torch.randn(6, 4), torch.randn(6, 3)] + ([torch.randn(9, edge_feat_size)] if edge_feat_size else [])
    _compare(lambda nn: nn.EGNNConv(4, 5, 3, edge_feat_size), lambda layer, g, *a: layer(g, *a),
             _graphs(*EDGES), inputs)


def test_egnnconv_is_equivariant():
    torch.manual_seed(0)
    layer, g = bglnn.EGNNConv(4, 5, 3, 2), bdgl.graph(EDGES[:2], num_nodes=6)
    h, x, a = torch.randn(6, 4), torch.randn(6, 3), torch.randn(9, 2)
    rot = torch.linalg.qr(torch.randn(3, 3))[0]
    h1, x1 = layer(g, h, x, a)
    h2, x2 = layer(g, h, x @ rot + 1.5, a)
    torch.testing.assert_close(h2, h1, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(x2, x1 @ rot + 1.5, atol=1e-5, rtol=1e-5)
    assert torch.equal(x1[5], x[5])  # no in-edges: the coordinates stay
    with pytest.raises(AssertionError, match="Edge features must be provided"):
        layer(g, h, x)


def _batch(lib, sizes):
    return lib.batch([lib.graph(([], []), num_nodes=n) for n in sizes])


@needs_dgl
@pytest.mark.parametrize("block_type", ["sab", "isab"])
def test_set_transformer_matches_dgl(block_type):
    import dgl

    sizes = [3, 5, 1]
    graphs = (_batch(dgl, sizes), _batch(bdgl, sizes))
    _compare(lambda nn: nn.SetTransformerEncoder(6, 2, 3, 8, n_layers=2, block_type=block_type, m=2),
             lambda layer, g, f: layer(g, f), graphs, [torch.randn(9, 6)])
    _compare(lambda nn: nn.SetTransformerDecoder(6, 2, 3, 8, n_layers=1, k=2), lambda layer, g, f: layer(g, f),
             graphs, [torch.randn(9, 6)])


def test_set_transformer_readout_ignores_node_order_and_refuses_bad_blocks():
    torch.manual_seed(0)
    g, feat = _batch(bdgl, [3, 4]), torch.randn(7, 6)
    dec = bglnn.SetTransformerDecoder(6, 2, 3, 8, n_layers=1, k=2)
    perm = torch.tensor([2, 0, 1, 6, 4, 3, 5])  # nodes shuffled within each graph
    out = dec(g, feat)
    assert out.shape == (2, 12)
    torch.testing.assert_close(dec(g, feat[perm]), out)
    enc = bglnn.SetTransformerEncoder(6, 2, 3, 8, block_type="isab", m=3)
    torch.testing.assert_close(enc(g, feat[perm]), enc(g, feat)[perm])
    with pytest.raises(KeyError, match="inducing points"):
        bglnn.SetTransformerEncoder(6, 2, 3, 8, block_type="isab")
    with pytest.raises(KeyError, match="Unrecognized block type"):
        bglnn.SetTransformerEncoder(6, 2, 3, 8, block_type="mab")


def _atomic(nn, types):
    return nn.AtomicConv(torch.tensor([1.0, 2.5]), torch.tensor([0.5, 1.0]), torch.tensor([2.0, 0.7]),
                         torch.tensor([1.0, 6.0, 8.0]) if types else None)


@needs_dgl
@pytest.mark.parametrize("types", [True, False])
def test_atomicconv_matches_dgl(types):
    feat = torch.tensor([[1.0], [6.0], [8.0], [6.0], [1.0], [8.0]]) if types else torch.randn(6, 2)
    _compare(lambda nn: _atomic(nn, types), lambda layer, g, f, d: layer(g, f, d), _graphs(*EDGES),
             [feat, torch.rand(9, 1) * 3])


def test_atomicconv_by_its_definition():
    conv, g = _atomic(bglnn, True), bdgl.graph(EDGES[:2], num_nodes=6)
    types, dist = torch.tensor([[1.0], [6.0], [8.0], [6.0], [1.0], [8.0]]), torch.rand(9, 1) * 3
    out = conv(g, types, dist)
    cut, mu, scale = torch.tensor([1.0, 2.5]), torch.tensor([0.5, 1.0]), torch.tensor([2.0, 0.7])
    filt = torch.exp(-scale * (dist - mu) ** 2) * torch.where(dist <= cut, 0.5 * (torch.cos(torch.pi * dist / cut) + 1), 0)
    onehot = (types == torch.tensor([1.0, 6.0, 8.0])).float()
    expected = torch.zeros(6, 3, 2).index_add_(0, EDGES[1], onehot[EDGES[0]].unsqueeze(-1) * filt.unsqueeze(1))
    torch.testing.assert_close(out, expected.view(6, 6))
    assert [n for n, _ in conv.named_parameters()] == ["features_to_use", "radial_pooling.interaction_cutoffs",
                                                       "radial_pooling.rbf_kernel_means",
                                                       "radial_pooling.rbf_kernel_scaling"]
