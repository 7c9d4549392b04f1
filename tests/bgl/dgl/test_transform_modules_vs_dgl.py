"""DGL's transform objects (``AddReverse``, ``ToSimple``, ``RemoveSelfLoop``, ``RowFeatNormalizer``,
``GCNNorm``, ``DropEdge``, ``Compose``) in ``bgl.dgl`` against real DGL 2.1 on the same graphs: edge types,
edges in order, node and edge features (in-place edits included), and the names under ``dgl.transforms``."""
from __future__ import annotations

import pytest
import torch

dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")

import bgl.dgl as bdgl  # noqa: E402


def _typed(lib):
    gen = torch.Generator().manual_seed(0)
    u, i = torch.randint(0, 6, (25,), generator=gen), torch.randint(0, 5, (25,), generator=gen)
    f = torch.randint(0, 6, (12,), generator=gen)
    g = lib.heterograph({("user", "rates", "item"): (u, i), ("user", "follows", "user"): (u[:12], f)},
                        num_nodes_dict={"user": 6, "item": 5})
    g.nodes["user"].data["x"] = torch.rand(6, 4, generator=gen) * 3
    g.nodes["item"].data["x"] = torch.rand(5, 4, generator=gen)
    g.edges["rates"].data["w"] = torch.rand(25, generator=gen)
    g.edges["follows"].data["w"] = torch.rand(12, generator=gen)
    return g


def _homogeneous(lib):
    gen = torch.Generator().manual_seed(1)
    g = lib.graph((torch.randint(0, 9, (40,), generator=gen), torch.randint(0, 9, (40,), generator=gen)), num_nodes=9)
    g.ndata["x"] = torch.rand(9, 3, generator=gen)
    g.edata["w"] = torch.rand(40, generator=gen)
    return g


TRANSFORMS = {
    "AddReverse": lambda T: T.AddReverse(),
    "AddReverse copy_edata": lambda T: T.AddReverse(copy_edata=True),
    "AddReverse sym_new_etype": lambda T: T.AddReverse(copy_edata=True, sym_new_etype=True),
    "ToSimple": lambda T: T.ToSimple(),
    "RemoveSelfLoop": lambda T: T.RemoveSelfLoop(),
    "RowFeatNormalizer": lambda T: T.RowFeatNormalizer(node_feat_names=["x"], edge_feat_names=["w"]),
    "RowFeatNormalizer subtract_min": lambda T: T.RowFeatNormalizer(subtract_min=True, node_feat_names=["x"]),
    "GCNNorm": lambda T: T.GCNNorm(eweight_name="norm"),
    "GCNNorm weighted": lambda T: T.GCNNorm(eweight_name="w"),
    "Compose": lambda T: T.Compose([T.RemoveSelfLoop(), T.AddReverse(), T.ToSimple()]),
}


@pytest.mark.parametrize("graph", [_typed, _homogeneous])
@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transform_objects_match_dgl(name, graph, graph_state, states_close):
    ours, theirs = graph(bdgl), graph(dgl)
    out_ours, out_theirs = TRANSFORMS[name](bdgl.transforms)(ours), TRANSFORMS[name](dgl.transforms)(theirs)
    states_close(graph_state(out_ours), graph_state(out_theirs))
    states_close(graph_state(ours), graph_state(theirs))  # in-place edits (RowFeatNormalizer, GCNNorm) alike


def test_drop_edge_draws_as_dgl_does(graph_state, states_close):
    for p in (0.0, 0.4):
        results = []
        for lib in (bdgl, dgl):
            g = _typed(lib)
            torch.manual_seed(5)
            results.append(graph_state(lib.transforms.DropEdge(p)(g)))
            assert g.num_edges("rates") == 25  # a copy was edited
        states_close(*results)
