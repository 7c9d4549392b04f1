"""``GraphInfo``: the loader's one description of its graph, resolved once and frozen."""
from __future__ import annotations

import pickle

import pytest
import torch

import bgl.dgl as bdgl
from bgl.dgl.in_place import BglGraphReader
from bgl.loader.graph_info import resolve_graph


def _graph():
    g = bdgl.graph((torch.tensor([0, 1, 2, 3, 3]), torch.tensor([1, 2, 3, 0, 1])))
    g.ndata["feat"] = torch.randn(4, 3)
    g.ndata["label"] = torch.tensor([0, 1, 1, 0])
    g.ndata["year"] = torch.arange(4)
    g.edata["w"] = torch.rand(5)
    return g


def test_a_frontend_graph_is_described_once_with_its_reader_fields_and_type_names():
    g = _graph()
    info = resolve_graph(g, "feat", "label", 5.0)
    assert info.from_dgl and isinstance(info.reader, BglGraphReader) and info.graph is g
    assert (info.num_nodes, info.feat_dim, info.has_label) == (4, 3, True)
    assert set(info.node_names) == {"feat", "label", "year"} and info.edge_names == ("w",)
    assert info.type_names == (g.ntypes[0], g.etypes[0])


def test_the_description_is_frozen_and_pickles_without_the_graph():
    info = resolve_graph(_graph(), "feat", "label", 5.0, shared=True)  # as for stage processes
    with pytest.raises(AttributeError, match="frozen"):
        info.num_nodes = 5
    copy = pickle.loads(pickle.dumps(info))  # a stage process's copy: no user object in it
    assert copy.graph is None and copy.num_nodes == 4 and copy.edge_names == ("w",)


def test_changed_sees_a_replaced_or_edited_field_it_read():
    g = _graph()
    info = resolve_graph(g, "feat", "label", 5.0)
    assert not info.changed()
    g.ndata["year"] = torch.zeros(4, dtype=torch.int64)  # a field it did not read
    assert not info.changed()
    g.ndata["feat"][0] = 1.0  # written in place
    assert info.changed()
    info = resolve_graph(g, "feat", "label", 5.0)
    g.ndata["label"] = torch.tensor([1, 1, 1, 0])  # replaced
    assert info.changed()


def test_a_store_path_is_described_by_its_opened_store(tmp_path):
    import bgl

    store = bgl.ingest(_graph(), tmp_path / "store")
    info = resolve_graph(str(tmp_path / "store"), "feat", "label", 5.0)
    assert info.reader is None and not info.from_dgl and info.graph == str(tmp_path / "store")
    assert info.store.num_nodes == store.num_nodes and info.type_names == ("_N", "_E") and not info.changed()
