"""``dgl.sampling.sample_etype_neighbors`` in ``bgl.dgl`` against real DGL 2.1: per-type fanouts over edge ids
grouped by type give DGL's edge counts in DGL's order (seed by seed, type by type), each edge as often as the
uniform per-type draw makes it (within 0.1 on 300 draws), DGL's full per-type neighbourhoods with -1, and its
errors."""
from __future__ import annotations

import pytest
import torch

dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")

import bgl.dgl as bdgl  # noqa: E402

SRC, DST = torch.tensor([0, 1, 2, 3, 0, 1, 2, 3, 0, 5]), torch.tensor([4, 4, 4, 4, 4, 4, 4, 4, 5, 4])
OFFSET = [0, 4, 10]  # edges 0-3: type 0, 4-9: type 1


def _type_of(eids):
    return (eids >= 4).long()


# each edge's chance to be drawn for seeds 4, 5, 0 with fanouts [1, 2]: 4 has four in-edges of type 0 and five of
# type 1, 5 one of type 1; out-edges: 0 has one of type 0 and two of type 1, 5 one of type 1 (all drawn)
EXACT = {("in", False): [0.25] * 4 + [0.4] * 4 + [1.0, 0.4], ("in", True): [0.25] * 4 + [0.36] * 4 + [1.0, 0.36],
         ("out", False): [1.0, 0, 0, 0, 1.0, 0, 0, 0, 1.0, 1.0]}


@pytest.mark.parametrize("edge_dir,replace", [("in", False), ("in", True), ("out", False)])
def test_etype_draws_follow_dgls(edge_dir, replace):
    shapes = []
    for lib, draws in ((dgl, 20), (bdgl, 300)):  # DGL: its order and sizes (8 ms a call here); bgl: the law too
        g = lib.graph((SRC, DST), num_nodes=6)
        g.edata["w"] = torch.arange(10.0)
        hits, shape = torch.zeros(10), []
        torch.manual_seed(0)
        for _ in range(draws):
            fr = lib.sampling.sample_etype_neighbors(g, torch.tensor([4, 5, 0]), OFFSET, torch.tensor([1, 2]),
                                                     edge_dir=edge_dir, replace=replace)
            eids = fr.edata[lib.EID]
            s, d = fr.edges()
            gs, gd = g.find_edges(eids)
            assert torch.equal(s, gs) and torch.equal(d, gd) and torch.equal(fr.edata["w"], eids.float())
            shape.append(((d if edge_dir == "in" else s).tolist(), _type_of(eids).tolist()))
            hits[eids] += 1
        assert all(x == shape[0] for x in shape)  # sizes and order do not vary
        shapes.append(shape[0])
    assert shapes[0] == shapes[1]
    assert (hits / 300 - torch.tensor(EXACT[(edge_dir, replace)])).abs().max() < 0.1


def test_etype_full_neighbourhoods_and_errors_are_dgls():
    for lib in (dgl, bdgl):
        g = lib.graph((SRC, DST), num_nodes=6)
        fr = lib.sampling.sample_etype_neighbors(g, torch.tensor([4, 5]), OFFSET, torch.tensor([-1, 0]))
        assert sorted(fr.edata[lib.EID].tolist()) == [0, 1, 2, 3]
        with pytest.raises(lib.DGLError, match="The fanout should be a tensor"):
            lib.sampling.sample_etype_neighbors(g, torch.tensor([4]), OFFSET, [1, 2])
