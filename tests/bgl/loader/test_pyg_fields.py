"""bgl.pyg batches carry the input's own attributes and ``input_id`` as PyG's loaders do, and every
PyG argument bgl does not honour gets one answer on a Data, a HeteroData, a store and servers alike.

The reference for the attributes is PyG's own ``filter_data`` / ``filter_hetero_data`` (what its
``NeighborLoader`` returns for a sampled subgraph), called on each bgl batch's ``n_id``,
``edge_index`` and ``e_id``; PyG's sampler needs pyg-lib or torch-sparse, which are not installed.
"""
from __future__ import annotations

import pytest
import torch

pyg_data = pytest.importorskip("torch_geometric.data")
pyg_utils = pytest.importorskip("torch_geometric.loader.utils")

from bgl.pyg import LinkNeighborLoader, NeighborLoader  # noqa: E402

N, E = 60, 400
_BATCH_ONLY = {"n_id", "e_id", "input_id", "batch_size", "num_sampled_nodes", "num_sampled_edges",
               "edge_label_index", "edge_label"}


def toy_data():
    """A Data with the attributes PyG code reads: masks, a year, edge attributes, graph-level ones."""
    g = torch.Generator().manual_seed(5)
    return pyg_data.Data(
        x=torch.randn(N, 4, generator=g), y=torch.randint(0, 3, (N,), generator=g),
        edge_index=torch.randint(0, N, (2, E), generator=g),
        train_mask=torch.arange(N) < 30, val_mask=(torch.arange(N) >= 30) & (torch.arange(N) < 45),
        test_mask=torch.arange(N) >= 45, year=torch.arange(N) + 1990, pos=torch.randn(N, 2, generator=g),
        edge_attr=torch.randn(E, 3, generator=g), edge_weight=torch.rand(E, generator=g),
        name="toy", class_names=torch.arange(3) * 7)  # [3]: neither per node nor per edge


def toy_hetero():
    g = torch.Generator().manual_seed(6)
    d = pyg_data.HeteroData()
    d["paper"].x = torch.randn(40, 5, generator=g)
    d["paper"].y = torch.randint(0, 4, (40,), generator=g)
    d["paper"].train_mask = torch.arange(40) < 20
    d["paper"].year = torch.arange(40) + 2000
    d["author"].x = torch.randn(30, 3, generator=g)
    d["author"].h_index = torch.randint(0, 50, (30,), generator=g)
    d["paper", "cites", "paper"].edge_index = torch.randint(0, 40, (2, 150), generator=g)
    d["paper", "cites", "paper"].edge_attr = torch.randn(150, 2, generator=g)
    writes = torch.stack([torch.randint(0, 30, (120,), generator=g), torch.randint(0, 40, (120,), generator=g)])
    d["author", "writes", "paper"].edge_index = writes
    d["author", "writes", "paper"].weight = torch.rand(120, generator=g)
    d["paper", "rev_writes", "author"].edge_index = writes.flip(0)
    d.name = "toy-hetero"
    return d


def same(a, b) -> bool:
    return torch.equal(a, b) if torch.is_tensor(a) else a == b


def check_as_pyg(batch, data):
    ref = pyg_utils.filter_data(data, batch.n_id, batch.edge_index[0], batch.edge_index[1], batch.e_id)
    for key in ref.keys():
        assert key in batch, f"batch lacks {key!r}"
        assert same(batch[key], ref[key]), key


@pytest.mark.parametrize("input_nodes", ["ids", "mask", None])
def test_data_batches_carry_every_attribute_and_input_id_as_pygs(input_nodes):
    data = toy_data()
    seeds = torch.tensor([17, 3, 44, 9, 31, 50, 2])
    given = {"ids": seeds, "mask": torch.isin(torch.arange(N), seeds), None: None}[input_nodes]
    loader = NeighborLoader(data, [3, 2], input_nodes=given, batch_size=3, shuffle=True)
    n = 0
    for batch in loader:
        check_as_pyg(batch, data)
        bs = batch.batch_size
        assert batch.train_mask[:bs].shape == (bs,) and batch.name == "toy"
        assert torch.equal(batch.class_names, data.class_names)
        # PyG numbers ids by their position in input_nodes, a mask or all nodes by node id
        expect = seeds[batch.input_id] if input_nodes == "ids" else batch.input_id
        assert torch.equal(expect, batch.n_id[:bs])
        n += bs
    assert n == (N if input_nodes is None else seeds.numel())


def test_user_input_id_and_repeated_seeds_follow_pygs_numbering():
    data = toy_data()
    seeds = torch.tensor([8, 5, 8, 1])
    loader = NeighborLoader(data, [2], input_nodes=seeds, batch_size=4, input_id=torch.tensor([10, 11, 12, 13]))
    batch = next(iter(loader))
    assert sorted(batch.input_id.tolist()) == [10, 10, 11, 13]  # a repeat is numbered by its first place
    check_as_pyg(batch, data)  # a repeated seed's edges keep their edge attributes
    with pytest.raises(ValueError, match=r"input_id has shape \[3\], expected \[4\]"):
        NeighborLoader(data, [2], input_nodes=seeds, input_id=torch.arange(3))


def test_link_batches_carry_every_attribute_as_pygs():
    data = toy_data()
    loader = LinkNeighborLoader(data, [3, 2], batch_size=64, neg_sampling_ratio=1.0, shuffle=True)
    batch = next(iter(loader))
    check_as_pyg(batch, data)
    assert set(toy_data().keys()) - {"edge_index"} <= set(batch.keys())


def test_the_batchs_own_fields_win_over_the_datas_as_in_pyg():
    """PyG sets a batch's own fields after filtering: a Data from RandomLinkSplit holds its
    edge_label_index / edge_label, and a batch still gets its own (local) pairs and labels."""
    data = toy_data()
    data.edge_label_index = torch.randint(0, N, (2, 10))
    data.edge_label = torch.ones(10)
    data.input_id = torch.arange(5)
    batch = next(iter(LinkNeighborLoader(data, [2], edge_label_index=data.edge_label_index, batch_size=4,
                                         neg_sampling_ratio=1.0)))
    assert batch.edge_label_index.shape == (2, 8) and int(batch.edge_label_index.max()) < batch.n_id.numel()
    assert batch.edge_label.tolist() == [1, 1, 1, 1, 0, 0, 0, 0] and batch.input_id.tolist() == [0, 1, 2, 3]
    batch = next(iter(NeighborLoader(data, [2], input_nodes=torch.tensor([9, 4]), batch_size=2)))
    assert batch.input_id.tolist() == [0, 1] and torch.equal(batch.y, data.y[batch.n_id])


def test_heterodata_batches_carry_every_attribute_and_input_id_as_pygs():
    d = toy_hetero()
    seeds = torch.tensor([30, 4, 11, 25, 0])
    loader = NeighborLoader(d, num_neighbors=[3, 2], input_nodes=("paper", seeds), batch_size=2)
    for batch in loader:
        nodes = {nt: batch[nt].n_id for nt in d.node_types}
        rows = {et: batch[et].edge_index[0] for et in d.edge_types}
        cols = {et: batch[et].edge_index[1] for et in d.edge_types}
        edges = {et: batch[et].e_id for et in d.edge_types}
        ref = pyg_utils.filter_hetero_data(d, nodes, rows, cols, edges)
        for store in ref.node_types + ref.edge_types:
            for key in ref[store].keys():
                assert key in batch[store], f"batch[{store}] lacks {key!r}"
                assert same(batch[store][key], ref[store][key]), (store, key)
        assert batch.name == "toy-hetero"
        bs = batch["paper"].batch_size
        assert torch.equal(seeds[batch["paper"].input_id], batch["paper"].n_id[:bs])
        assert batch["paper"].train_mask[:bs].shape == (bs,)


def _inputs(cora_store):
    return {"Data": (lambda **kw: NeighborLoader(toy_data(), [2], **kw)),
            "HeteroData": (lambda **kw: NeighborLoader(toy_hetero(), [2], input_nodes="paper", **kw)),
            "store": (lambda **kw: NeighborLoader(cora_store, [2], **kw)),
            "store dir": (lambda **kw: NeighborLoader(str(cora_store.path), [2], **kw)),
            "Data, link": (lambda **kw: LinkNeighborLoader(toy_data(), [2], **kw))}


@pytest.mark.parametrize("arg", [dict(input_time=torch.zeros(3)), dict(edge_label_time=torch.zeros(3)),
                                 dict(temporal_strategy="last"), dict(disjoint=True),
                                 dict(subgraph_type="induced"), dict(transform_sampler_output=len),
                                 dict(neighbor_sampler=object())])
def test_every_input_refuses_an_unhonoured_argument_naming_it(cora_store, arg):
    name = next(iter(arg))
    for kind, make in _inputs(cora_store).items():
        with pytest.raises(ValueError, match=f"does not support {name}=.*: "):
            make(**arg)


def test_time_attr_is_temporal_sampling_on_every_input(cora_store):
    """time_attr= makes a temporal loader (tests/bgl/loader/test_pyg_temporal_loader.py); each input
    names what it lacks for it."""
    expected = {"Data": "time_attr='t' is not an attribute of the Data",
                "HeteroData": "time_attr='t' is on no node type and no edge type of the HeteroData",
                "store": "time_attr='t' is neither a node nor an edge array of the store",
                "store dir": "time_attr='t' is neither a node nor an edge array of the store",
                "Data, link": "edge_label_time= is required with time_attr="}
    for kind, make in _inputs(cora_store).items():
        with pytest.raises(ValueError, match=expected[kind]):
            make(time_attr="t")


def test_every_input_applies_transform_and_ignores_worker_tuning(cora_store):
    def mark(batch):
        batch.seen = True
        return batch

    for kind, make in _inputs(cora_store).items():
        loader = make(transform=mark, filter_per_worker=True, is_sorted=True, batch_size=64)
        assert next(iter(loader)).seen is True, kind
        loader.close()
        with pytest.raises(TypeError, match="transform must be callable"):
            make(transform=3)


def test_link_loader_on_a_heterodata_carries_its_fields():
    """A HeteroData link loader (bgl/pyg/hetero_link.py) gives the node loader's typed fields too."""
    data = toy_hetero()
    loader = LinkNeighborLoader(data, [2], edge_label_index=(("paper", "cites", "paper"), None), batch_size=16,
                                transform=lambda b: b)
    batch = next(iter(loader))
    n_id = batch["paper"].n_id
    assert torch.equal(batch["paper"].train_mask, data["paper"].train_mask[n_id])
    assert torch.equal(batch["author"].h_index, data["author"].h_index[batch["author"].n_id])
    writes = ("author", "writes", "paper")
    assert torch.equal(batch[writes].weight, data[writes].weight[batch[writes].e_id])
    assert batch.name == "toy-hetero"


def test_a_typed_store_is_refused_naming_what_to_pass(cora_store, tmp_path):
    """The README implied a typed store works with bgl.pyg; it is refused with what to do instead
    (was: a TypeError about {ntype: ids} seeds, or one about tuple input_nodes)."""
    from bgl.sources.paper_word import paper_word_store

    typed = paper_word_store(cora_store, tmp_path / "pw")
    for graph in (typed, str(typed.path)):
        for kw in (dict(input_nodes=("paper", torch.arange(4))), dict(input_nodes=torch.arange(4)), {}):
            with pytest.raises(ValueError, match="typed graph as a PyG HeteroData, not a typed store"):
                NeighborLoader(graph, [2], **kw)
