"""Batches of small graphs in ``bgl.dgl`` against real DGL 2.1: ``batch`` / ``unbatch`` (ids, features, counts
per graph, typed graphs, empty graphs, batches of batches), the readouts, the pooling layers (values and
gradients), which edits keep a batch, ``GraphDataLoader``'s batches, and the refusals."""
from __future__ import annotations

import pytest
import torch

dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
import dgl.nn as dglnn  # noqa: E402

import bgl.dgl as bdgl  # noqa: E402
import bgl.dgl.nn as bglnn  # noqa: E402

SIZES = [(5, 9), (1, 0), (4, 6), (0, 0), (6, 14)]  # (nodes, edges): a one-node and an empty graph among them


def _graphs(lib, sizes=SIZES):
    gen = torch.Generator().manual_seed(0)
    out = []
    for n, e in sizes:
        src, dst = (torch.randint(0, max(n, 1), (e,), generator=gen) for _ in range(2))
        g = lib.graph((src, dst), num_nodes=n)
        g.ndata["x"] = torch.randn(n, 3, generator=gen)
        g.ndata["w"] = torch.rand(n, 1, generator=gen)
        g.edata["e"] = torch.randn(e, 2, generator=gen)
        out.append(g)
    return out


def _batch_info(g) -> dict:
    return {"size": g.batch_size, "nodes": {nt: g.batch_num_nodes(nt).tolist() for nt in g.ntypes},
            "edges": {c: g.batch_num_edges(c).tolist() for c in g.canonical_etypes}}


def test_batch_and_unbatch_match_dgl(graph_state):
    ours, theirs = bdgl.batch(_graphs(bdgl)), dgl.batch(_graphs(dgl))
    assert graph_state(ours) == graph_state(theirs) and _batch_info(ours) == _batch_info(theirs)
    for a, b in zip(bdgl.unbatch(ours), dgl.unbatch(theirs), strict=True):
        assert graph_state(a) == graph_state(b) and _batch_info(a) == _batch_info(b)
    nested = [bdgl.batch([bdgl.batch(_graphs(bdgl)[:2]), _graphs(bdgl)[2]]), dgl.batch([dgl.batch(_graphs(dgl)[:2]),
                                                                                        _graphs(dgl)[2]])]
    assert _batch_info(nested[0]) == _batch_info(nested[1])
    picked = bdgl.batch(_graphs(bdgl), ndata=["x"], edata=None), dgl.batch(_graphs(dgl), ndata=["x"], edata=None)
    assert graph_state(picked[0]) == graph_state(picked[1])


def test_typed_batch_and_split_match_dgl(graph_state, user_item):
    ours = bdgl.batch([user_item(bdgl, seed, 4, 3, 6, "e") for seed in (1, 2)])
    theirs = dgl.batch([user_item(dgl, seed, 4, 3, 6, "e") for seed in (1, 2)])
    assert graph_state(ours) == graph_state(theirs) and _batch_info(ours) == _batch_info(theirs)
    for a, b in zip(bdgl.unbatch(ours), dgl.unbatch(theirs), strict=True):
        assert graph_state(a) == graph_state(b)
    # a graph that is two graphs side by side but not marked as a batch: split by the counts given
    one = []
    for lib in (bdgl, dgl):
        joined = lib.batch(_graphs(lib, [(2, 3), (4, 5)]))
        g = lib.graph(joined.edges(), num_nodes=6)
        g.ndata["x"], g.edata["e"] = joined.ndata["x"], joined.edata["e"]
        one.append(g)
    splits = dict(node_split=torch.tensor([2, 4]), edge_split=torch.tensor([3, 5]))
    for a, b in zip(bdgl.unbatch(one[0], **splits), dgl.unbatch(one[1], **splits), strict=True):
        assert graph_state(a) == graph_state(b)


READOUTS = [lambda lib, g: lib.sum_nodes(g, "x"), lambda lib, g: lib.mean_nodes(g, "x", "w"),
            lambda lib, g: lib.max_nodes(g, "x"), lambda lib, g: lib.sum_edges(g, "e"),
            lambda lib, g: lib.mean_edges(g, "e"), lambda lib, g: lib.max_edges(g, "e"),
            lambda lib, g: lib.readout_nodes(g, "x", op="min"), lambda lib, g: lib.softmax_nodes(g, "x"),
            lambda lib, g: lib.softmax_edges(g, "e"),
            lambda lib, g: lib.broadcast_nodes(g, torch.arange(10.0).view(5, 2)),
            lambda lib, g: lib.broadcast_edges(g, torch.arange(5.0))]


@pytest.mark.parametrize("readout", READOUTS)
def test_readouts_match_dgl(readout):
    torch.testing.assert_close(readout(bdgl, bdgl.batch(_graphs(bdgl))), readout(dgl, dgl.batch(_graphs(dgl))))


@pytest.mark.parametrize("make", [lambda nn: nn.SumPooling(), lambda nn: nn.AvgPooling(), lambda nn: nn.MaxPooling(),
                                  lambda nn: nn.GlobalAttentionPooling(torch.nn.Linear(3, 1), torch.nn.Linear(3, 4)),
                                  lambda nn: nn.WeightAndSum(3)])
def test_pooling_layers_match_dgl(make):
    results = []
    for lib, nn in ((dgl, dglnn), (bdgl, bglnn)):
        torch.manual_seed(0)
        layer = make(nn)
        g = lib.batch(_graphs(lib))
        x = g.ndata["x"].clone().requires_grad_()
        out = layer(g, x)
        (out * torch.arange(out.numel(), dtype=out.dtype).view(out.shape)).sum().backward()
        results.append((out, x.grad, [p.grad for p in layer.parameters()]))
    (out_d, grad_d, params_d), (out_b, grad_b, params_b) = results
    torch.testing.assert_close(out_b, out_d)
    torch.testing.assert_close(grad_b, grad_d)
    for a, b in zip(params_b, params_d, strict=True):
        torch.testing.assert_close(a, b)


EDITS = [lambda lib, g: lib.remove_edges(g, torch.tensor([0, 3, 20])), lambda lib, g: lib.remove_self_loop(g),
         lambda lib, g: lib.remove_nodes(g, torch.tensor([0, 7, 10])), lambda lib, g: lib.add_self_loop(g),
         lambda lib, g: lib.to_simple(g), lambda lib, g: lib.add_reverse_edges(g),
         lambda lib, g: lib.reverse(g), lambda lib, g: lib.add_edges(g, torch.tensor([0]), torch.tensor([1])),
         lambda lib, g: lib.node_subgraph(g, torch.tensor([0, 1, 2]))]


@pytest.mark.parametrize("edit", EDITS)
def test_edits_keep_or_drop_the_batch_as_dgl_does(edit, graph_state):
    ours, theirs = edit(bdgl, bdgl.batch(_graphs(bdgl))), edit(dgl, dgl.batch(_graphs(dgl)))
    assert _batch_info(ours) == _batch_info(theirs)
    if ours.batch_size > 1:
        for a, b in zip(bdgl.unbatch(ours), dgl.unbatch(theirs), strict=True):
            assert a.num_nodes() == b.num_nodes() and all(torch.equal(x, y) for x, y in zip(a.edges(), b.edges()))


def test_in_place_removals_keep_the_batch_as_dgl_does():
    graphs = {"bgl.dgl": bdgl.batch(_graphs(bdgl)), "dgl": dgl.batch(_graphs(dgl))}
    for g in graphs.values():
        g.remove_nodes(torch.tensor([1, 5]))
        g.remove_edges(torch.tensor([2]))
    assert _batch_info(graphs["bgl.dgl"]) == _batch_info(graphs["dgl"])


def test_graph_data_loader_matches_dgl(graph_state):
    batches = {}
    for name, lib in (("bgl.dgl", bdgl), ("dgl", dgl)):
        items = [(g, i, {"y": torch.tensor([float(i)])}) for i, g in enumerate(_graphs(lib))]
        loader = lib.dataloading.GraphDataLoader(items, batch_size=2, shuffle=False)
        batches[name] = [(graph_state(g), _batch_info(g), labels.tolist(), extra["y"].tolist())
                         for g, labels, extra in loader]
    assert batches["bgl.dgl"] == batches["dgl"]


@pytest.mark.parametrize("call", [lambda lib: lib.batch([]),
                                  lambda lib: lib.batch([_graphs(lib)[0], lib.graph(([0], [1]), num_nodes=2)])])
def test_bad_batches_are_refused_as_dgl_refuses_them(call):
    with pytest.raises(Exception):
        call(dgl)
    with pytest.raises(bdgl.DGLError):
        call(bdgl)
