"""bgl.dgl.sparse against real dgl.sparse (pinned lane): values, nonzero order, shapes, dtypes, gradients and
errors of each operation on the same inputs; GCN and GAT written as DGL's examples/sparse write them, only the
import changed.  The DGL-free tests check the same operations against dense torch (both lanes)."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import bgl.dgl.sparse as bsp


def _inputs(sp):
    """A [3, 4] with duplicates and unsorted nonzeros, its value tensor (a leaf), a sorted duplicate-free B."""
    val = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0], requires_grad=True)
    A = sp.spmatrix(torch.tensor([[1, 0, 2, 0, 1], [0, 3, 2, 1, 0]]), val, shape=(3, 4))
    vb = torch.tensor([1.0, -2.0, 3.0, 0.5], requires_grad=True)  # DGL's sparse-sparse ops track only both-leaf pairs
    B = sp.spmatrix(torch.tensor([[2, 0, 1, 0], [2, 3, 0, 1]]), vb, shape=(3, 4))
    return A, (val, vb), B


def _dense(seed, *shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), requires_grad=True)


CASES = {
    "repr_formats": lambda sp, A, B: (A, A.csr(), A.csc(), A.T.csr(), A.has_duplicate(), A.coalesce()),
    "from_csr_csc": lambda sp, A, B: [(m, m.coo(), m.csr(), m.csc(), m.T.csc()) for m in (
        sp.from_csr(torch.tensor([0, 2, 3, 5]), torch.tensor([2, 0, 1, 1, 0])),
        sp.from_csc(torch.tensor([0, 2, 3, 5]), torch.tensor([2, 0, 1, 1, 0]), torch.arange(5.0)))],
    "diag_identity": lambda sp, A, B: (sp.diag(torch.tensor([1.0, 2.0, 3.0]), (3, 5)).csc(),
                                       sp.identity((2, 3), d=2), sp.diag(torch.tensor([2.0, 4.0])).inv()),
    "select": lambda sp, A, B: (A.index_select(0, torch.tensor([1, 0, 1])), A.index_select(1, torch.tensor([0, 3])),
                                A.range_select(1, slice(1, 3)), A.compact(0, torch.tensor([2])), A.compact(1),
                                sp.spmatrix(A.indices() + 1, A.val).compact(1, torch.tensor([5, 0]))),
    "elementwise": lambda sp, A, B: (A + B, A - B, B * B.T.T, B / sp.val_like(B, B.val + 3), A ** 2,
                                     2 * A, A / 4, -A, sp.sp_mul_v(A, torch.arange(4.0)),
                                     sp.sp_add_v(A, torch.arange(3.0).view(3, 1))),
    "reductions": lambda sp, A, B: [A.reduce(d, r) for d in (None, 0, 1)
                                    for r in ("sum", "smax", "smin", "smean", "sprod")],
    "softmax": lambda sp, A, B: (A.softmax(), A.softmax(0), sp.val_like(A, A.val.view(-1, 1) * torch.ones(1, 2))
                                 .softmax()),
    "spmm": lambda sp, A, B: (A @ _dense(0, 4, 3), sp.spmm(A, _dense(1, 4)),
                              sp.bspmm(sp.val_like(A, A.val.view(-1, 1) * torch.ones(1, 2)), _dense(2, 4, 3, 2))),
    "spspmm": lambda sp, A, B: (B @ B.T, B.T @ B, sp.diag(A.sum(1)) @ B),
    "sddmm": lambda sp, A, B: (sp.sddmm(A, _dense(3, 3, 2), _dense(4, 2, 4)), sp.sddmm(A, _dense(5, 3), _dense(6, 4)),
                               sp.bsddmm(A, _dense(7, 3, 2, 3), _dense(8, 2, 4, 3))),
}


def _flat(out) -> list:
    """Every tensor an output holds (a matrix: its indices, values, shape, nnz), in a fixed order."""
    if isinstance(out, (tuple, list)):
        return [t for item in out for t in _flat(item)]
    if out is None or isinstance(out, (bool, int)):
        return [out]
    if isinstance(out, torch.Tensor):
        return [out]
    return [out.indices(), out.val, out.shape, out.nnz, out.dtype]


def _run(sp, name):
    torch.manual_seed(0)
    A, leaves, B = _inputs(sp)
    flat = _flat(CASES[name](sp, A, B))
    # (indptr, indices, None): values already in that order, the same as ids 0..nnz-1 (which DGL gives or not
    # depending on which formats a matrix had built before)
    return [torch.arange(flat[i - 1].shape[0]) if t is None and i and isinstance(flat[i - 1], torch.Tensor) else t
            for i, t in enumerate(flat)], leaves


def _grads(flat, leaves, tracked):
    floats = [t for t, keep in zip(flat, tracked) if keep]
    if not floats:
        return []
    loss = sum((t * torch.linspace(0.5, 1.5, t.numel()).view(t.shape)).sum() for t in floats)
    return torch.autograd.grad(loss, leaves, allow_unused=True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_dgl_sparse(name):
    pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
    import dgl.sparse as dglsp

    ours, our_leaves = _run(bsp, name)
    theirs, their_leaves = _run(dglsp, name)
    assert len(ours) == len(theirs)
    # DGL's coalesce (and so A + B) detaches values whose operand pair is not both tracked; bgl.dgl's keeps the
    # gradient: compare gradients through the outputs DGL tracks
    tracked = [isinstance(t, torch.Tensor) and t.requires_grad for t in theirs]
    assert all(isinstance(t, torch.Tensor) and t.requires_grad for t, keep in zip(ours, tracked) if keep)
    our_grads, their_grads = _grads(ours, our_leaves, tracked), _grads(theirs, their_leaves, tracked)
    for a, b in zip(ours, theirs):
        if isinstance(a, torch.Tensor):
            assert a.dtype == b.dtype and a.shape == b.shape
            torch.testing.assert_close(a.detach(), b.detach(), atol=1e-5, rtol=1e-5)
        else:
            assert a == b
    for a, b in zip(our_grads, their_grads):
        assert (a is None) == (b is None)
        if a is not None:
            torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


ERRORS = [
    ("shape", lambda sp, A, B: A @ torch.ones(3, 2)),
    ("dtype", lambda sp, A, B: A @ torch.ones(4, 2, dtype=torch.long)),
    ("dup", lambda sp, A, B: A @ B.T),
    ("chain", lambda sp, A, B: B @ B),
    ("add_shape", lambda sp, A, B: A + A.T),
    ("div_sparsity", lambda sp, A, B: A.coalesce() / B.T.T.index_select(0, torch.tensor([0, 1, 1]))),
    ("mul_dup", lambda sp, A, B: A * B),
    ("sddmm", lambda sp, A, B: sp.sddmm(A, torch.ones(3, 2), torch.ones(3, 4))),
    ("val_like", lambda sp, A, B: sp.val_like(A, torch.ones(4))),
    ("vector_val", lambda sp, A, B: sp.spmatrix(A.indices(), torch.ones(5, 2, 2))),
    ("rtype", lambda sp, A, B: A.reduce(0, "foo")),
    ("scalar_add", lambda sp, A, B: A + 1),
]


def test_repr_matches_dgl_sparse():
    pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
    import dgl.sparse as dglsp

    def shown(sp):
        A, _, B = _inputs(sp)
        return [repr(sp.val_like(m, m.val.detach())) for m in (A, sp.val_like(B, torch.ones(4, 2)))]

    assert shown(bsp) == shown(dglsp)


@pytest.mark.parametrize("name,call", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_dgl_sparse(name, call):
    pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
    import dgl.sparse as dglsp

    raised = []
    for sp in (dglsp, bsp):
        with pytest.raises(Exception) as info:
            call(sp, *_inputs(sp)[::2])
        raised.append(info.value)
    assert type(raised[1]) is type(raised[0])
    assert str(raised[1]).splitlines()[0][:40] == str(raised[0]).splitlines()[0][:40]


def gcn_norm(dglsp, src, dst, n):
    """DGL's examples/sparse/gcn.py: D^-1/2 (A + I) D^-1/2."""
    A = dglsp.spmatrix(torch.stack([src, dst]), shape=(n, n))
    A_hat = A + dglsp.identity(A.shape)
    D_hat = dglsp.diag(A_hat.sum(1)) ** -0.5
    return D_hat @ A_hat @ D_hat


def gcn_forward(A_norm, X, W1, W2):
    return A_norm @ (F.relu(A_norm @ (X @ W1)) @ W2)


def gat_forward(dglsp, A_hat, X, W, a_l, a_r, heads):
    """DGL's examples/sparse/gat.py GATConv (dropout off)."""
    Z = (X @ W).view(X.shape[0], -1, heads)
    e = (Z * a_l).sum(dim=1)[A_hat.row] + (Z * a_r).sum(dim=1)[A_hat.col]
    A_atten = dglsp.val_like(A_hat, F.leaky_relu(e)).softmax()
    return dglsp.bspmm(A_atten, Z)


def _model_inputs():
    g = torch.Generator().manual_seed(1)
    n = 12
    src, dst = torch.randint(0, n, (40,), generator=g), torch.randint(0, n, (40,), generator=g)
    keep = src != dst
    # scaled so that gradients stay O(1): float32 rounding then stays far below the 1e-5 compared
    params = [(0.3 * torch.randn(*s, generator=g)).requires_grad_() for s in ((n, 5), (5, 4), (4, 3), (5, 6),
                                                                              (1, 3, 2), (1, 3, 2))]
    return src[keep], dst[keep], n, params


def _models(dglsp):
    src, dst, n, (X, W1, W2, Wg, a_l, a_r) = _model_inputs()
    gcn = gcn_forward(gcn_norm(dglsp, src, dst, n), X, W1, W2)
    A_hat = dglsp.spmatrix(torch.stack([src, dst]), shape=(n, n)) + dglsp.identity((n, n))
    gat = gat_forward(dglsp, A_hat, X, Wg, a_l, a_r, 2)
    grads = torch.autograd.grad(gcn.sum() + (gat * gat).sum(), [X, W1, W2, Wg, a_l, a_r])
    return gcn, gat, grads


def test_gcn_gat_examples_match_dgl():
    pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
    import dgl.sparse as dglsp

    for ours, theirs in zip(_models(bsp), _models(dglsp)):
        for a, b in zip(ours if isinstance(ours, tuple) else [ours], theirs if isinstance(theirs, tuple) else [theirs]):
            torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_gcn_gat_examples_against_dense():
    """DGL-free: the examples' results equal dense-matrix GCN / GAT on the same weights."""
    src, dst, n, (X, W1, W2, Wg, a_l, a_r) = _model_inputs()
    gcn, gat, _ = _models(bsp)
    A = torch.zeros(n, n).index_put((src, dst), torch.ones(len(src)), accumulate=True) + torch.eye(n)
    norm = A.sum(1).pow(-0.5)
    A_norm = norm.view(-1, 1) * A * norm.view(1, -1)
    torch.testing.assert_close(gcn, A_norm @ (F.relu(A_norm @ (X @ W1)) @ W2), atol=1e-5, rtol=1e-5)
    Z = (X @ Wg).view(n, 3, 2)
    e = (Z * a_l).sum(1).unsqueeze(1) + (Z * a_r).sum(1).unsqueeze(0)  # [n, n, heads]
    logits = F.leaky_relu(e).masked_fill((A == 0).unsqueeze(-1), float("-inf"))
    weights = torch.softmax(logits, 1)  # A + I is coalesced: parallel edges are one nonzero
    torch.testing.assert_close(gat, torch.einsum("ijh,jfh->ifh", weights, Z), atol=1e-5, rtol=1e-5)


def test_operations_against_dense():
    """DGL-free: coalescing, products, reductions and order-keeping ops equal their dense counterparts."""
    A, (val, _), B = _inputs(bsp)
    dense = A.to_dense()
    assert A.coalesce().indices().tolist() == [[0, 0, 1, 2], [1, 3, 0, 2]]
    torch.testing.assert_close(A.coalesce().to_dense(), torch.zeros(3, 4).index_put(
        (A.row, A.col), val.detach(), accumulate=True))
    X = torch.randn(4, 3)
    torch.testing.assert_close(A @ X, A.coalesce().to_dense() @ X)
    torch.testing.assert_close((A.coalesce() @ B.T).to_dense(), A.coalesce().to_dense() @ B.to_dense().T)
    torch.testing.assert_close((A + B).to_dense(), A.coalesce().to_dense() + B.to_dense())
    torch.testing.assert_close(A.sum(0), A.coalesce().to_dense().sum(0))
    assert A.smax(1).tolist() == [4.0, 5.0, 3.0] and (A * 2).indices().tolist() == A.indices().tolist()
    X1, X2 = torch.randn(3, 2), torch.randn(2, 4)
    torch.testing.assert_close(bsp.sddmm(A, X1, X2).val, (X1 @ X2)[A.row, A.col] * val)
    assert (dense != 0).sum() == 4 and A.csr()[2].tolist() == [1, 3, 0, 4, 2]
