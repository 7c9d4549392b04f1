"""A PyG ``HeteroData`` ingested as a typed store: the store of the DGL heterograph of the same edges."""
from __future__ import annotations

import numpy as np
import pytest
import torch

dgl = pytest.importorskip("dgl")
pyg_data = pytest.importorskip("torch_geometric.data")

import bgl  # noqa: E402

COUNTS = {"author": 6, "paper": 15}


def arrays(seed=0):
    gen = torch.Generator().manual_seed(seed)
    writes = torch.stack([torch.randint(0, 6, (30,), generator=gen), torch.randint(0, 15, (30,), generator=gen)])
    cites = torch.randint(0, 15, (2, 40), generator=gen)
    x = torch.randn(15, 4, generator=gen)
    y = torch.randint(0, 3, (15,), generator=gen)
    return writes, cites, x, y


def hetero_data(seed=0):
    writes, cites, x, y = arrays(seed)
    data = pyg_data.HeteroData()
    data["author"].num_nodes = 6
    data["paper"].x, data["paper"].y = x, y
    data["paper"].train_mask = torch.arange(15) < 9
    data["author", "writes", "paper"].edge_index = writes
    data["paper", "cites", "paper"].edge_index = cites
    return data


def dgl_graph(seed=0):
    writes, cites, x, y = arrays(seed)
    g = dgl.heterograph({("author", "writes", "paper"): (writes[0], writes[1]),
                         ("paper", "cites", "paper"): (cites[0], cites[1])}, num_nodes_dict=COUNTS)
    g.nodes["paper"].data["feat"], g.nodes["paper"].data["label"] = x, y
    g.nodes["paper"].data["train_mask"] = torch.arange(15) < 9
    return g


@pytest.mark.parametrize("add_reverse", [False, True])
def test_heterodata_is_the_store_of_the_same_heterograph(tmp_path, add_reverse, assert_same_typed_store):
    ours = bgl.ingest(hetero_data(), tmp_path / "ours", add_reverse=add_reverse)
    g = dgl_graph()
    theirs = bgl.ingest(dgl.AddReverse()(g) if add_reverse else g, tmp_path / "theirs")
    assert ours.meta.extra["source"] == "HeteroData"
    assert np.array_equal(ours.type_splits["paper"]["train"], np.arange(9))
    assert_same_typed_store(ours, theirs)


def test_heterodata_past_a_types_count_is_named_and_nothing_is_written(tmp_path):
    data = hetero_data()
    data["author", "writes", "paper"].edge_index[0, 5] = 6
    with pytest.raises(ValueError, match=r"\('author', 'writes', 'paper'\): source id 6 outside node type 'author'"):
        bgl.ingest(data, tmp_path / "s")
    data = hetero_data()
    data["paper"].num_nodes, data["paper"].x = 15, torch.zeros(14, 4)
    with pytest.raises(ValueError, match="'paper' has 15 nodes but its features have 14 rows"):
        bgl.ingest(data, tmp_path / "s")
    assert not any(tmp_path.iterdir())
