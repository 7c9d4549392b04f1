"""The core loader hands the trainer a frontend's objects only through the frontend the edge installed
(bgl/loader/batch_frontend.py), chosen once per loader; the edge's own choice (bgl/dgl/frontend_choice.py)
follows the input's type."""
from __future__ import annotations

import importlib.util

import pytest
import torch

import bgl
import bgl.loader.batch_frontend as hook
from bgl.dgl.frontend_choice import EdgeFrontends


class RecordingFrontend:
    """A batch frontend that wraps each block, so a batch shows it went through here."""

    name = "recording"

    def __init__(self):
        self.calls = []

    def blocks(self, blocks, schema, graph, type_names, with_csr):
        self.calls.append((len(blocks), schema, type_names))
        return [("wrapped", b) for b in blocks]

    def pair_graph(self, pair):
        return ("pair", pair)

    def typed_pair_graph(self, edges, node_ids, edge_ids):
        return ("typed pair", edges)


class FakeFrontends:
    """The edge's side: records what the core asked, gives the recording frontend for ``blocks="dgl"``."""

    def __init__(self):
        self.frontend = RecordingFrontend()
        self.asked = []

    def reader(self, graph):
        return None

    def batches(self, graph, blocks, from_frontend):
        self.asked.append((type(graph).__name__, blocks, from_frontend))
        return self.frontend if blocks == "dgl" else None


@pytest.fixture
def fake_edge():
    saved = (hook._factory, hook._installed)
    fake = FakeFrontends()
    hook.install(lambda: fake)
    try:
        yield fake
    finally:
        hook._factory, hook._installed = saved


def test_batches_go_through_the_installed_frontend_chosen_once(fake_edge, random_store):
    loader = bgl.DataLoader(random_store, torch.arange(40), bgl.NeighborSampler([3, 2]), batch_size=16, blocks="dgl")
    batches = list(loader)
    assert len(batches) == 3
    for _, output_nodes, blocks in batches:
        assert [tag for tag, _ in blocks] == ["wrapped", "wrapped"]
        assert isinstance(blocks[-1][1], bgl.Block) and torch.equal(blocks[-1][1].dst_ids, output_nodes)
    assert fake_edge.asked == [("GraphStore", "dgl", False)]  # asked once, at construction
    assert fake_edge.frontend.calls and all(c == (2, None, ("_N", "_E")) for c in fake_edge.frontend.calls)
    loader.close()


def test_without_a_frontend_the_core_yields_its_own_blocks(fake_edge, random_store):
    loader = bgl.DataLoader(random_store, torch.arange(20), bgl.NeighborSampler([3]), batch_size=10)
    (_, _, blocks), *_ = list(loader)
    assert isinstance(blocks[0], bgl.Block)
    assert fake_edge.asked == [("GraphStore", None, False)] and fake_edge.frontend.calls == []
    loader.close()


def test_no_installed_edge_is_one_clear_error():
    saved = (hook._factory, hook._installed)
    hook._factory, hook._installed = None, None
    try:
        with pytest.raises(RuntimeError, match="no frontends installed"):
            hook.batch_frontend(None, None, False)
    finally:
        hook._factory, hook._installed = saved


def test_a_graph_no_frontend_reads_is_named():
    with pytest.raises(TypeError, match="no frontend reads a builtins.object"):
        hook.graph_reader(object())


def _real_dgl_like():
    """An object whose type says it is DGL's (the edge asks by type, without importing DGL)."""
    cls = type("DGLGraph", (), {"__module__": "dgl.heterograph"})
    return cls()


def test_the_edge_chooses_by_the_inputs_type(random_store):
    edge = EdgeFrontends()
    assert edge.reader(random_store) is None
    assert type(edge.reader(_real_dgl_like())).__name__ == "DGLGraphReader"
    assert edge.batches(random_store, None, False) is None
    assert edge.batches(_real_dgl_like(), "bgl", True) is None
    if importlib.util.find_spec("dgl") is None:  # the current-stack lane: DGL's objects are refused by name
        with pytest.raises(ImportError, match="blocks='dgl' needs DGL installed"):
            edge.batches(random_store, "dgl", False)
        with pytest.raises(ImportError, match="blocks='dgl' needs DGL installed"):
            edge.batches(_real_dgl_like(), None, True)
    else:
        assert type(edge.batches(random_store, "dgl", False)).__name__ == "DGLBatchFrontend"
        assert type(edge.batches(_real_dgl_like(), None, True)).__name__ == "DGLBatchFrontend"
