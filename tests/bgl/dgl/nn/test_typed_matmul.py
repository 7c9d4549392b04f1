"""RelGraphConv / TypedLinear through ``typed_matmul.TypedMatmul``: values and gradients against a
per-edge reference written with plain autograd ops, in chunks that end inside a type, and what the
forward keeps for backward (nothing per edge x feature: at 10M edges x 128 that was 5 GB a copy).
Runs in both lanes (the pinned lane also compares with DGL in test_layers_match_dgl.py)."""
from __future__ import annotations

import pytest
import torch

import bgl.dgl
import bgl.dgl.nn as dglnn
from bgl.dgl.nn import typed_matmul

TOL = dict(atol=1e-5, rtol=1e-5)


def per_type_weights(layer) -> torch.Tensor:
    """[num_rels, in, out] dense weights, "bdd" blocks written out on the diagonal."""
    linear = layer.linear_r
    if linear.regularizer != "bdd":
        return linear.get_weight()
    blocks = linear.W.view(linear.num_types, linear.num_bases, linear.submat_in, linear.submat_out)
    return torch.stack([torch.block_diag(*blocks[t]) for t in range(linear.num_types)])


@pytest.mark.parametrize("regularizer,num_bases", [(None, None), ("basis", 2), ("bdd", 2)])
@pytest.mark.parametrize("chunk_rows", [2, 1000])
def test_relgraphconv_gradients_equal_per_edge_reference(build, block_edges, monkeypatch, regularizer,
                                                         num_bases, chunk_rows):
    monkeypatch.setattr(typed_matmul, "CHUNK_ELEMENTS", chunk_rows * 6)
    e = block_edges
    torch.manual_seed(0)
    layer = dglnn.RelGraphConv(4, 6, 3, regularizer=regularizer, num_bases=num_bases)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(e.num_src, 4, generator=gen)
    etypes = torch.randint(0, 3, (e.src.shape[0],), generator=gen)
    norm = torch.rand(e.src.shape[0], 1, generator=gen)
    upstream = torch.randn(e.num_dst, 6, generator=gen)

    def run(forward):
        layer.zero_grad(set_to_none=True)
        leaves = [x.clone().requires_grad_(), norm.clone().requires_grad_()]
        out = forward(*leaves)
        (out * upstream).sum().backward()
        return [out, *(t.grad for t in leaves), *(p.grad for p in layer.parameters())]

    def reference(feat, edge_norm):
        messages = torch.bmm(feat[e.src].unsqueeze(1), per_type_weights(layer)[etypes]).squeeze(1) * edge_norm
        h = torch.zeros(e.num_dst, 6).index_add(0, e.dst, messages)
        return h + layer.h_bias + feat[: e.num_dst] @ layer.loop_weight

    ours = run(lambda feat, edge_norm: layer(build.bgl(e), feat, etypes, edge_norm))
    expected = run(reference)
    for a, b in zip(ours, expected):
        torch.testing.assert_close(a, b, **TOL)


def test_relgraphconv_keeps_nothing_per_edge_and_feature():
    """The tensors autograd keeps from forward are O(nodes x features + edges), never edges x features."""
    num_src, num_edges, width = 40, 5000, 32
    gen = torch.Generator().manual_seed(0)
    src, dst = torch.randint(0, num_src, (num_edges,), generator=gen), torch.randint(0, 10, (num_edges,), generator=gen)
    block = bgl.dgl.create_block((src, dst), num_src_nodes=num_src, num_dst_nodes=10)
    layer = dglnn.RelGraphConv(width, width, 4, regularizer="basis", num_bases=2)
    kept = []

    def pack(t):
        kept.append(t.numel())
        return t

    x = torch.randn(num_src, width, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = layer(block, x, torch.randint(0, 4, (num_edges,), generator=gen),
                    torch.rand(num_edges, 1, generator=gen))
    assert max(kept) < num_edges * 2, sorted(kept)[-3:]
    out.sum().backward()
    assert x.grad.shape == x.shape


def test_norm_of_the_wrong_shape_is_named(build, block_edges):
    e = block_edges
    layer = dglnn.RelGraphConv(4, 6, 3)
    with pytest.raises(bgl.dgl.DGLError, match=r"norm must be a float tensor \[num_edges, 1\].*got \(3, 1\)"):
        layer(build.bgl(e), torch.randn(e.num_src, 4), torch.zeros(e.src.shape[0], dtype=torch.long),
              torch.ones(3, 1))


def test_second_derivative_is_refused_not_wrong(build, block_edges):
    e = block_edges
    layer = dglnn.RelGraphConv(4, 6, 3, regularizer="basis", num_bases=2)
    x = torch.randn(e.num_src, 4, requires_grad=True)
    out = layer(build.bgl(e), x, torch.randint(0, 3, (e.src.shape[0],)))
    (grad,) = torch.autograd.grad((out ** 2).sum(), x, create_graph=True)  # grad_out depends on x
    with pytest.raises(RuntimeError, match="once_differentiable"):
        grad.sum().backward()
