"""The graph-free modules DGL scripts build around their layers (``HeteroLinear``, ``HeteroEmbedding``,
``JumpingKnowledge``, ``EdgePredictor``) against DGL 2.1's on the same weights (DGL's state dict loaded,
strict): outputs, input and parameter gradients within 1e-5; and the bad arguments DGL refuses.
Pinned lane only (skipped without DGL)."""
from __future__ import annotations

import pytest
import torch

dgl = pytest.importorskip("dgl", reason="DGL is not installed: the modules are compared with DGL's own")
import dgl.nn as dglnn  # noqa: E402

import bgl.dgl  # noqa: E402
import bgl.dgl.nn as bglnn  # noqa: E402

TOL = dict(atol=1e-5, rtol=1e-5)


def _flat(out) -> list:
    return [out[k] for k in sorted(out, key=str)] if isinstance(out, dict) else [out]


def _same(make, inputs, seed: int = 0):
    """DGL's module and ours from ``make(namespace)``, DGL's weights in ours; equal outputs and gradients
    on ``inputs()`` (fresh each call: a list of positional arguments)."""
    torch.manual_seed(seed)
    theirs = make(dglnn)
    ours = make(bglnn)
    ours.load_state_dict(theirs.state_dict(), strict=True)
    results = []
    for module in (theirs, ours):
        torch.manual_seed(seed + 1)
        args = inputs()
        out = _flat(module(*args))
        gen = torch.Generator().manual_seed(seed + 2)
        sum((o * torch.randn(o.shape, generator=gen)).sum() for o in out).backward()
        leaves = [t for a in args for t in (a.values() if isinstance(a, dict) else a if isinstance(a, list) else [a])
                  if torch.is_tensor(t) and t.requires_grad]
        results.append((out, [t.grad for t in leaves], {n: p.grad for n, p in module.named_parameters()}))
    (out_d, in_d, par_d), (out_b, in_b, par_b) = results
    for a, b in zip(out_d, out_b, strict=True):
        torch.testing.assert_close(b, a, **TOL)
    for a, b in zip(in_d, in_b, strict=True):
        torch.testing.assert_close(b, a, **TOL)
    assert par_d.keys() == par_b.keys()
    for name, grad in par_d.items():
        if grad is None:
            assert par_b[name] is None, name
        else:
            torch.testing.assert_close(par_b[name], grad, **TOL, msg=name)


def _x(*shape):
    return torch.randn(*shape).requires_grad_()


@pytest.mark.parametrize("bias", [True, False])
def test_hetero_linear(bias):
    sizes = {"user": 3, ("item", "of", "user"): 5}
    _same(lambda nn: nn.HeteroLinear(sizes, 4, bias=bias),
          lambda: [{"user": _x(6, 3), ("item", "of", "user"): _x(2, 5)}])


def test_hetero_embedding():
    counts = {"user": 7, ("a", "r", "b"): 4}
    _same(lambda nn: nn.HeteroEmbedding(counts, 3),
          lambda: [{"user": torch.tensor([0, 6, 6, 2]), ("a", "r", "b"): torch.tensor([3])}])
    torch.manual_seed(3)
    ours = bglnn.HeteroEmbedding(counts, 3)
    assert set(ours.weight) == set(counts) and ours.weight[("a", "r", "b")].shape == (4, 3)


@pytest.mark.parametrize("mode", ["cat", "max", "lstm"])
def test_jumping_knowledge(mode):
    kw = {"in_feats": 4, "num_layers": 3} if mode == "lstm" else {}
    _same(lambda nn: nn.JumpingKnowledge(mode, **kw), lambda: [[_x(5, 4), _x(5, 4), _x(5, 4)]])


@pytest.mark.parametrize("op", ["dot", "cos", "ele", "cat"])
@pytest.mark.parametrize("linear", [False, True])
def test_edge_predictor(op, linear):
    kw = {"in_feats": 4, "out_feats": 3, "bias": True} if linear else {}
    _same(lambda nn: nn.EdgePredictor(op, **kw), lambda: [_x(6, 4), _x(6, 4)])


@pytest.mark.parametrize("make", [lambda nn: nn.JumpingKnowledge("sum"), lambda nn: nn.JumpingKnowledge("lstm"),
                                  lambda nn: nn.EdgePredictor("l2")])
def test_bad_arguments_are_refused(make):
    with pytest.raises(AssertionError):
        make(dglnn)
    with pytest.raises(ValueError, match="Expect|needs"):
        make(bglnn)


def _batch_of(lib, sizes):
    gen = torch.Generator().manual_seed(sum(sizes))
    graphs = [lib.graph((torch.randint(0, n, (2 * n,), generator=gen), torch.randint(0, n, (2 * n,), generator=gen)),
                        num_nodes=n) for n in sizes]
    return lib.batch(graphs)


@pytest.mark.parametrize("sizes,k", [((5, 2, 7), 3), ((4, 6), 6), ((3,), 1)])
def test_sortpooling_and_set2set(sizes, k):
    """Readouts of a batch of graphs, one of them smaller than ``k`` (its rows padded with zeros)."""
    graphs = _batch_of(dgl, sizes), _batch_of(bgl.dgl, sizes)
    num = sum(sizes)
    for make in (lambda nn: nn.SortPooling(k), lambda nn: nn.Set2Set(4, n_iters=3, n_layers=2)):
        torch.manual_seed(0)
        theirs, ours = make(dglnn), make(bglnn)
        ours.load_state_dict(theirs.state_dict(), strict=True)
        outs = []
        for module, g in zip((theirs, ours), graphs):
            x = torch.randn(num, 4, generator=torch.Generator().manual_seed(7)).requires_grad_()
            out = module(g, x)
            (out * torch.randn(out.shape, generator=torch.Generator().manual_seed(8))).sum().backward()
            outs.append((out, x.grad, [p.grad for p in module.parameters()]))
        (a, ga, pa), (b, gb, pb) = outs
        torch.testing.assert_close(b, a, **TOL)
        torch.testing.assert_close(gb, ga, **TOL)
        for p, q in zip(pa, pb):
            torch.testing.assert_close(q, p, **TOL)
