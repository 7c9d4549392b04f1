"""send_and_recv / pull / push against real DGL (pinned lane) on the same graph and functions: which nodes
receive, what nodes without messages keep or get (old value, 0, -inf), repeated edges, apply functions, UDFs,
gradients; and the same expectations written out for the DGL-free lane."""
from __future__ import annotations

import importlib

import pytest
import torch


def _graph(dgl):
    g = dgl.graph((torch.tensor([0, 1, 2, 3, 0, 2]), torch.tensor([1, 2, 1, 0, 2, 2])), num_nodes=5)
    g.ndata["h"] = (torch.arange(5.0).view(5, 1) + 1).requires_grad_()
    g.ndata["old"] = torch.full((5, 1), 7.0)
    g.edata["w"] = torch.arange(6.0).view(6, 1) + 10
    return g


def _red(nodes):
    return {"old": nodes.mailbox["m"].sum(1) * 100 + nodes.data["h"]}


def _msg(edges):
    return {"m": edges.src["h"] * edges.data["w"]}


def _red_ids(nodes):  # nodes.nodes(): the graph's node ids, not the compute block's positions
    return {"old": nodes.mailbox["m"].sum(1) + nodes.nodes().view(-1, 1) * 1000}


def _app(nodes):
    return {"old": nodes.data["old"] + 0.5 + nodes.nodes().view(-1, 1) * 1000}


def _cases(fn):
    return {
        "sr_new": lambda g: g.send_and_recv(torch.tensor([0, 4]), fn.copy_u("h", "m"), fn.sum("m", "new")),
        "sr_max": lambda g: g.send_and_recv([1, 2], fn.u_mul_e("h", "w", "m"), fn.max("m", "old")),
        "sr_udf": lambda g: g.send_and_recv(torch.tensor([1, 2, 5]), _msg, _red),
        "sr_apply_pair": lambda g: g.send_and_recv((torch.tensor([0, 2]), torch.tensor([1, 2])), fn.copy_u("h", "m"),
                                                   fn.sum("m", "old"), _app),
        "sr_repeat": lambda g: g.send_and_recv(torch.tensor([0, 0, 3]), fn.u_add_v("h", "h", "m"), fn.sum("m", "old")),
        "pull_sum": lambda g: g.pull(torch.tensor([0, 3, 2]), fn.copy_u("h", "m"), fn.sum("m", "new")),
        "pull_max": lambda g: g.pull(torch.tensor([0, 3, 2]), fn.copy_u("h", "m"), fn.max("m", "old")),
        "pull_min_no_edges": lambda g: g.pull(torch.tensor([3, 4]), fn.copy_u("h", "m"), fn.min("m", "new")),
        "pull_udf_apply": lambda g: g.pull(torch.tensor([3, 2, 1, 1]), _msg, _red_ids, _app),
        "pull_mean_int": lambda g: g.pull(1, fn.copy_e("w", "m"), fn.mean("m", "old")),
        "push": lambda g: g.push(torch.tensor([0, 2]), fn.copy_u("h", "m"), fn.sum("m", "new"), _app),
        "push_isolated": lambda g: g.push(torch.tensor([4]), fn.copy_u("h", "m"), fn.sum("m", "new")),
    }


def _run(name, module):
    dgl = importlib.import_module(module)
    g = _graph(dgl)
    _cases(importlib.import_module(module + ".function"))[name](g)
    out = {k: v for k, v in sorted(g.ndata.items())}
    # (DGL's backward of max / min over a compute graph without edges fails: no gradient compared there)
    tracked = [v for k, v in out.items() if k != "h" and v.requires_grad and name != "pull_min_no_edges"]
    loss = sum((torch.where(torch.isfinite(v), v, 0.0) ** 2).sum() for v in tracked)
    grad = torch.autograd.grad(loss, g.ndata["h"]) if tracked else None
    return {k: v.detach() for k, v in out.items()}, grad


CASE_NAMES = ["sr_new", "sr_max", "sr_udf", "sr_apply_pair", "sr_repeat", "pull_sum", "pull_max", "pull_min_no_edges",
              "pull_udf_apply", "pull_mean_int", "push", "push_isolated"]


@pytest.mark.parametrize("name", CASE_NAMES)
def test_matches_dgl(name):
    pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
    ours, our_grad = _run(name, "bgl.dgl")
    theirs, their_grad = _run(name, "dgl")
    assert list(ours) == list(theirs)
    for key in ours:
        torch.testing.assert_close(ours[key], theirs[key])
    assert (our_grad is None) == (their_grad is None)
    if our_grad is not None:
        torch.testing.assert_close(our_grad[0], their_grad[0])


def test_typed_graph_matches_dgl():
    pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")

    def run(module):
        dgl, fn = importlib.import_module(module), importlib.import_module(module + ".function")
        h = dgl.heterograph({("a", "r", "b"): (torch.tensor([0, 1, 1]), torch.tensor([1, 0, 1])),
                             ("b", "s", "a"): (torch.tensor([0]), torch.tensor([1]))})
        h.nodes["a"].data["x"] = torch.tensor([[1.0], [2.0]])
        h.nodes["b"].data["x"] = torch.tensor([[5.0], [6.0]])
        h.send_and_recv(torch.tensor([0, 2]), fn.copy_u("x", "m"), fn.sum("m", "y"), etype="r")
        h.pull(torch.tensor([1]), fn.copy_u("x", "m"), fn.sum("m", "y"), etype="s")
        with pytest.raises(Exception) as info:
            h.pull(torch.tensor([1]), fn.copy_u("x", "m"), fn.sum("m", "y"))
        return h.nodes["a"].data["y"].tolist(), h.nodes["b"].data["y"].tolist(), type(info.value).__name__

    assert run("bgl.dgl") == run("dgl")


def test_partial_message_passing_without_dgl():
    """DGL's results for the cases above, written out (the current lane has no DGL)."""
    expected = {
        "sr_new": {"new": [0.0, 1.0, 1.0, 0.0, 0.0], "old": [7.0] * 5},
        "sr_max": {"old": [7.0, 36.0, 22.0, 7.0, 7.0]},
        "sr_udf": {"old": [7.0, 3602.0, 6703.0, 7.0, 7.0]},
        "pull_sum": {"new": [4.0, 0.0, 6.0, 0.0, 0.0], "old": [7.0] * 5},
        "pull_max": {"old": [4.0, 7.0, 3.0, float("-inf"), 7.0]},
        "pull_min_no_edges": {"new": [0.0] * 5},
        "push_isolated": {"old": [7.0] * 5},
    }
    for name, fields in expected.items():
        ours, _ = _run(name, "bgl.dgl")
        assert "new" in ours or "new" not in fields
        for key, values in fields.items():
            assert ours[key].view(-1).tolist() == values, (name, key)
    assert "new" not in _run("push_isolated", "bgl.dgl")[0]
