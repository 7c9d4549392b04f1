"""``dgl.nn.NodeEmbedding`` with ``dgl.optim.SparseAdam`` / ``SparseAdagrad`` in ``bgl.dgl`` against DGL 2.1: the same
rows after each step (rows read twice in a step, rows never read, a loop without ``zero_grad``), the same optimizer
state and ``state_dict``.  DGL's tables live in shared memory named by the embedding: deleted before the test ends."""
from __future__ import annotations

import gc
import os

import pytest
import torch

dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
import dgl.optim  # noqa: E402

import bgl.dgl as bdgl  # noqa: E402
import bgl.dgl.optim  # noqa: E402

TOL = dict(atol=1e-6, rtol=1e-5)


def _init(table):
    return table.copy_(torch.randn(table.shape, generator=torch.Generator().manual_seed(0)))


def _train(lib, optimizer, steps: int, zero_grad: bool, name: str):
    emb = lib.nn.NodeEmbedding(12, 3, f"{name}_{os.getpid()}", init_func=_init)
    opt = getattr(lib.optim, optimizer)([emb], lr=0.05)
    gen = torch.Generator().manual_seed(1)
    rows = []
    for _ in range(steps):
        a, b = torch.tensor([0, 3, 3, 7, 11]), torch.tensor([3, 9])
        loss = (emb(a) * torch.randn(5, 3, generator=gen)).sum() + (emb(b) ** 2).sum()
        if zero_grad:
            opt.zero_grad()
        loss.backward()
        opt.step()
        rows.append(emb.weight.clone())
    state = opt.state_dict()
    out = rows, {k: [t.clone() for t in v] for k, v in state["state"].items()}, state["param_groups"]
    del emb, opt
    gc.collect()  # DGL's shared-memory table and state go with them
    return out


@pytest.mark.parametrize("optimizer", ["SparseAdam", "SparseAdagrad"])
@pytest.mark.parametrize("zero_grad", [True, False])
def test_sparse_optimizers_step_as_dgls(optimizer, zero_grad):
    theirs = _train(dgl, optimizer, 3, zero_grad, "probe_theirs")
    ours = _train(bdgl, optimizer, 3, zero_grad, "probe_ours")
    for a, b in zip(theirs[0], ours[0]):
        torch.testing.assert_close(b, a, **TOL)
    assert [k.replace("theirs", "ours") for k in theirs[1]] == list(ours[1])
    for a, b in zip(*(list(x.values())[0] for x in (theirs[1], ours[1]))):
        torch.testing.assert_close(b.float(), a.float(), **TOL)
    assert theirs[2] == ours[2]
    assert not [n for n in os.listdir("/dev/shm") if n.startswith("probe_")]
