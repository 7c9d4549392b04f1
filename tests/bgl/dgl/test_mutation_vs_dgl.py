"""In-place graph edits (``g.add_nodes`` / ``add_edges`` / ``remove_edges`` / ``remove_nodes``) and their
out-of-place module functions, ``bgl.dgl`` against real DGL 2.1 on the same inputs: structure, edge
order, node and edge features, stored ids, and the graph the module functions leave alone."""
from __future__ import annotations

import pytest
import torch

dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")

import bgl.dgl as bdgl  # noqa: E402

N, E = 20, 60


def _graph(lib, idtype):
    gen = torch.Generator().manual_seed(0)
    src, dst = torch.randint(0, N, (E,), generator=gen), torch.randint(0, N, (E,), generator=gen)
    g = lib.graph((src.to(idtype), dst.to(idtype)), num_nodes=N, idtype=idtype)
    g.ndata["x"] = torch.randn(N, 3, generator=gen)
    g.edata["w"] = torch.rand(E, generator=gen)
    return g


def _t(g, ids):
    """Ids as DGL takes them: a tensor of the graph's id type."""
    return torch.tensor(ids, dtype=g.idtype)


EDITS = {
    "add_nodes": lambda g: g.add_nodes(3, {"x": torch.ones(3, 3)}),
    "add_nodes without data": lambda g: g.add_nodes(2),
    "add_edges": lambda g: g.add_edges(_t(g, [0, 5]), _t(g, [7, 7]), {"w": torch.tensor([2.0, 3.0])}),
    "add_edges broadcast, new nodes": lambda g: g.add_edges(3, _t(g, [1, 2, 24])),
    "add_edges new field": lambda g: g.add_edges(_t(g, [1]), _t(g, [2]), {"z": torch.ones(1, 2)}),
    "remove_edges": lambda g: g.remove_edges(_t(g, [0, 7, 59])),
    "remove_edges store_ids": lambda g: g.remove_edges(_t(g, [3, 4]), store_ids=True),
    "remove_nodes": lambda g: g.remove_nodes(_t(g, [0, 4, 19])),
    "remove_nodes store_ids": lambda g: g.remove_nodes(_t(g, [2]), store_ids=True),
}


@pytest.mark.parametrize("idtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("edit", sorted(EDITS))
def test_in_place_edits_match_dgl(edit, idtype, graph_state):
    ours, theirs = _graph(bdgl, idtype), _graph(dgl, idtype)
    assert EDITS[edit](ours) is None and EDITS[edit](theirs) is None
    assert graph_state(ours) == graph_state(theirs)
    assert ours.idtype == theirs.idtype


TYPED_EDITS = {
    "add_nodes": lambda g: g.add_nodes(2, ntype="item"),
    "add_edges": lambda g: g.add_edges(torch.tensor([1, 9]), torch.tensor([0, 5]), etype="rates"),
    "remove_edges": lambda g: g.remove_edges(torch.tensor([0, 2]), etype="rated-by"),
    "remove_nodes": lambda g: g.remove_nodes(torch.tensor([1, 3]), ntype="user"),
}


@pytest.mark.parametrize("edit", sorted(TYPED_EDITS))
def test_typed_in_place_edits_match_dgl(edit, graph_state, user_item):
    ours, theirs = user_item(bdgl, 1, 8, 6, 30), user_item(dgl, 1, 8, 6, 30)
    TYPED_EDITS[edit](ours)
    TYPED_EDITS[edit](theirs)
    assert graph_state(ours) == graph_state(theirs)


@pytest.mark.parametrize("call", [
    lambda lib, g: lib.add_nodes(g, 2),
    lambda lib, g: lib.add_edges(g, torch.tensor([0]), torch.tensor([1])),
    lambda lib, g: lib.remove_edges(g, torch.tensor([1, 2])),
    lambda lib, g: lib.remove_nodes(g, torch.tensor([5])),
])
def test_module_functions_return_an_edited_copy(call, graph_state):
    ours, theirs = _graph(bdgl, torch.int64), _graph(dgl, torch.int64)
    before = graph_state(ours)
    assert graph_state(call(bdgl, ours)) == graph_state(call(dgl, theirs))
    assert graph_state(ours) == before


@pytest.mark.parametrize("call", [
    lambda g: g.add_edges(torch.tensor([0, 1]), torch.tensor([1, 2, 3])),
    lambda g: g.remove_edges(torch.tensor([E])),
    lambda g: g.remove_nodes(torch.tensor([N])),
])
def test_bad_edits_are_refused_as_dgl_refuses_them(call, graph_state):
    ours, theirs = _graph(bdgl, torch.int64), _graph(dgl, torch.int64)
    with pytest.raises(Exception):
        call(theirs)
    before = graph_state(ours)
    with pytest.raises(bdgl.DGLError):
        call(ours)
    assert graph_state(ours) == before  # nothing half-done
