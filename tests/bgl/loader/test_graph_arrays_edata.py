"""A DGLGraph's edata read in place by GraphArrays: CSC order on first use, the caller's tensors untouched."""
from __future__ import annotations

import numpy as np
import pytest

dgl = pytest.importorskip("dgl")
torch = pytest.importorskip("torch")
from bgl.loader.graph_arrays import dglgraph_arrays  # noqa: E402


def test_edge_arrays_follow_the_csc_and_survive_shared_memory():
    g = dgl.graph((torch.tensor([0, 1, 2, 2, 3]), torch.tensor([1, 2, 0, 1, 1])), num_nodes=4)
    g.edata["w"] = torch.tensor([0.1, 0.2, 0.3, 0.4, 0.5])
    g.edata["f"] = torch.arange(10.0).reshape(5, 2)
    arrays = dglgraph_arrays(g, None, None)
    eids = np.asarray(arrays.edge_ids)
    assert not np.array_equal(eids, np.arange(5))  # the CSC permutes this graph's edges
    assert np.array_equal(arrays.edge_array("w"), g.edata["w"].numpy()[eids])
    assert np.array_equal(arrays.edge_array("f"), g.edata["f"].numpy()[eids])
    assert np.array_equal(arrays.raw_edge_array("w"), g.edata["w"].numpy())
    with pytest.raises(ValueError):
        arrays.edge_array("w")[0] = 1.0  # read-only
    shared = arrays.share_memory()
    assert np.array_equal(shared.edge_array("f"), arrays.edge_array("f"))
    assert g.edata["w"][0].item() == pytest.approx(0.1)
    with pytest.raises(KeyError, match="no edge data 'x'"):
        arrays.edge_array("x")
