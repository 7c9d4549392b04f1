"""bgl.pyg.NeighborLoader: PyG's mini-batch layout from bgl blocks, and PyG's GraphSAGE loop on it."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from bgl.pyg import NeighborLoader, PygBatch, blocks_to_pyg
from bgl.sampler.local import LocalSampler

try:
    from torch_geometric.data import Data
except ImportError:
    Data = None


def neighbour_lists(block):
    """{dst global id: sorted in-neighbour global ids} of one block."""
    src, ptr, idx = block.src_ids.numpy(), block.indptr.numpy(), block.indices.numpy()
    return {int(src[j]): sorted(src[idx[ptr[j]:ptr[j + 1]]].tolist()) for j in range(block.num_dst)}


def pyg_lists(n_id, edge_index):
    """{target global id: sorted source global ids} of a PyG edge_index over local ids."""
    n_id, (s, t) = n_id.numpy(), edge_index.numpy()
    out: dict[int, list] = {}
    for a, b in zip(n_id[s], n_id[t]):
        out.setdefault(int(b), []).append(int(a))
    return {k: sorted(v) for k, v in out.items()}


def in_neighbours(store, v):
    return np.asarray(store.indices[store.indptr[v]:store.indptr[v + 1]]).tolist()


@pytest.mark.parametrize("num_neighbors", [[4, 3], [-1, -1], [2, 2, 2]])
def test_blocks_to_pyg_layout_and_edge_set(cora_store, num_neighbors):
    seeds = np.asarray(cora_store.train_idx)[:50]
    blocks = LocalSampler(cora_store).sample_blocks(seeds, list(reversed(num_neighbors)), seed=7)
    out = blocks_to_pyg(blocks)
    n_id, ei, bs = out["n_id"], out["edge_index"], out["batch_size"]
    assert bs == 50 and np.array_equal(n_id[:bs].numpy(), seeds)
    assert torch.equal(n_id, blocks[0].src_ids) and len(set(n_id.tolist())) == n_id.shape[0]
    assert ei.shape[0] == 2 and ei.dtype == torch.int64 and int(ei.min()) >= 0 and int(ei.max()) < n_id.shape[0]
    # Edge set = each node's sampled in-edges from the block of the hop that first reached it.
    want: dict[int, list] = {}
    for block in reversed(blocks):
        for dst, nbrs in neighbour_lists(block).items():
            if dst not in want and nbrs:
                want[dst] = nbrs
    assert pyg_lists(n_id, ei) == want
    assert sum(out["num_sampled_edges"]) == ei.shape[1] and sum(out["num_sampled_nodes"]) == n_id.shape[0]
    for target, sources in want.items():  # every edge is a real in-edge
        assert set(sources) <= set(in_neighbours(cora_store, target))
    if num_neighbors == [-1, -1]:  # full neighbourhoods of the seeds and of their neighbours
        hop1 = n_id[: out["num_sampled_nodes"][0] + out["num_sampled_nodes"][1]].tolist()
        assert want == {v: sorted(in_neighbours(cora_store, v)) for v in hop1 if in_neighbours(cora_store, v)}


@pytest.mark.parametrize("with_ids", [True, False])
def test_numpy_and_torch_layouts_give_the_same_batch(cora_store, with_ids):
    """The CPU path (a numba pass per hop) and the device path (torch ops, run here on CPU
    tensors) of ``blocks_to_pyg`` agree field by field, edge ids and edge rows included."""
    from bgl.pyg.loader import _pyg_layout_cpu, _pyg_layout_torch

    seeds = np.asarray(cora_store.train_idx)[:64]
    blocks = LocalSampler(cora_store).sample_blocks(seeds, [5, 4, 3], seed=3)
    for b in blocks:  # edge ids and an edge array, as a Data input's blocks carry them
        b.edge_ids = torch.randperm(10 ** 6)[: b.num_edges] if with_ids else None
        b.edata["w"] = torch.rand(b.num_edges, 2)
    fast, ref = _pyg_layout_cpu(blocks), _pyg_layout_torch(blocks)
    assert fast.keys() == ref.keys() == {"n_id", "batch_size", "edge_index", "num_sampled_nodes",
                                         "num_sampled_edges", "w"} | ({"e_id"} if with_ids else set())
    for key, want in ref.items():
        got = fast[key]
        assert torch.equal(got, want) if torch.is_tensor(want) else got == want, key
        assert not torch.is_tensor(want) or got.dtype == want.dtype, key


def cora_data(store):
    src = np.asarray(store.indices).astype(np.int64)
    dst = np.repeat(np.arange(store.num_nodes), np.diff(store.indptr))
    return dict(x=torch.from_numpy(np.array(store.feat)), y=torch.from_numpy(np.array(store.label)),
                edge_index=torch.from_numpy(np.stack([src, dst])))


def check_batches(loader, store, seeds, fanouts):
    got_seeds = []
    feat, label = np.asarray(store.feat), np.asarray(store.label)
    for batch in loader:
        n_id, bs = batch.n_id.numpy(), batch.batch_size
        got_seeds.append(n_id[:bs])
        assert np.array_equal(batch.x.numpy(), feat[n_id])
        # PyG's y covers every n_id (a Data's own y); from a store, bgl's pipeline gives the seeds'
        assert np.array_equal(batch.y[:bs].numpy(), label[n_id[:bs]])
        deg = np.bincount(batch.edge_index[1].numpy(), minlength=n_id.size)
        assert deg[:bs].max() <= fanouts[0] and deg.max() <= max(fanouts)
        assert deg[sum(batch.num_sampled_nodes[:-1]):].sum() == 0  # the last hop's nodes have no edges
    assert np.array_equal(np.concatenate(got_seeds), seeds)


def test_loader_over_store_and_data(cora_store):
    seeds = np.array(cora_store.train_idx)
    with NeighborLoader(cora_store, num_neighbors=[5, 3], batch_size=128, input_nodes=seeds) as loader:
        assert len(loader) == -(-seeds.size // 128)
        check_batches(loader, cora_store, seeds, [5, 3])
        loader._data_class = None  # what a user without PyG gets
        batch = next(iter(loader))
        assert isinstance(batch, PygBatch) and batch.num_nodes == batch.n_id.shape[0]
    if Data is None:
        pytest.skip("torch_geometric not installed: Data input untested")
    data = Data(**cora_data(cora_store))
    mask = torch.zeros(cora_store.num_nodes, dtype=torch.bool)
    mask[torch.from_numpy(seeds)] = True
    with NeighborLoader(data, num_neighbors=[4, 4], batch_size=256, input_nodes=mask) as loader:
        assert isinstance(next(iter(loader)), Data)
        check_batches(loader, cora_store, np.sort(seeds), [4, 4])
    with pytest.raises(ValueError, match="input_time"):
        NeighborLoader(data, num_neighbors=[2], input_time=torch.zeros(3))


@pytest.mark.parametrize("input_nodes", [torch.arange(10), torch.arange(500) < 10], ids=["ids", "mask"])
def test_tensor_seeds_are_taken_without_a_warning(random_store, input_nodes):
    """numpy 2 warns when ``np.array`` copies a tensor (torch's ``__array__`` takes no ``copy``)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loader = NeighborLoader(random_store, num_neighbors=[2], input_nodes=input_nodes, batch_size=5)
    assert len(loader.dataset) == 10


@pytest.mark.parametrize("pipeline", ["inline", "processes"])
def test_data_is_read_in_place_and_its_edges_kept(cora_store, spawned_children, pipeline):
    """A Data's x and y are the loader's feature and label arrays (no store written, no copy
    inline); the CSC holds edge_index's edges, duplicates and order within a row as given."""
    if Data is None:
        pytest.skip("torch_geometric not installed")
    from bgl.pyg.loader import data_arrays

    fields = cora_data(cora_store)
    shuffle = torch.from_numpy(np.random.default_rng(3).permutation(fields["edge_index"].shape[1]))
    fields["edge_index"] = torch.cat([fields["edge_index"][:, shuffle], fields["edge_index"][:, :1]], 1)
    data = Data(**fields)
    arrays = data_arrays(data)
    assert arrays.tensor("feat").data_ptr() == data.x.data_ptr()
    assert arrays.tensor("label").data_ptr() == data.y.data_ptr()
    src, dst = data.edge_index.numpy()
    for v in (0, int(dst[0]), cora_store.num_nodes - 1):
        row = arrays.indices[arrays.indptr[v]:arrays.indptr[v + 1]]
        assert row.tolist() == src[dst == v].tolist()  # stable: edge_index order within a row
    extra = {"stage_cores": {"sample": 1, "fetch": 1}} if pipeline == "processes" else {}
    seeds = np.array(cora_store.train_idx)
    with NeighborLoader(data, num_neighbors=[5, 3], batch_size=128, input_nodes=torch.from_numpy(seeds),
                        pipeline=pipeline, **extra) as loader:
        if pipeline == "inline":
            assert loader._loader._info.store.tensor("feat").data_ptr() == data.x.data_ptr()
        check_batches(loader, cora_store, seeds, [5, 3])


# ------------------------------------------------------------- PyG's GraphSAGE loop, import swapped
def _sage_conv(in_size, out_size):
    try:
        from torch_geometric.nn import SAGEConv
        return SAGEConv(in_size, out_size)
    except ImportError:
        return _MeanSAGEConv(in_size, out_size)


class _MeanSAGEConv(torch.nn.Module):
    """PyG's SAGEConv maths (mean of sources + root) for when PyG is absent."""

    def __init__(self, in_size, out_size):
        super().__init__()
        self.lin_l = torch.nn.Linear(in_size, out_size)
        self.lin_r = torch.nn.Linear(in_size, out_size, bias=False)

    def forward(self, x, edge_index):
        s, t = edge_index
        agg = torch.zeros_like(x).index_add_(0, t, x[s])
        deg = torch.bincount(t, minlength=x.shape[0]).clamp(min=1).unsqueeze(1)
        return self.lin_l(agg / deg) + self.lin_r(x)


class PygSAGE(torch.nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        super().__init__()
        self.convs = torch.nn.ModuleList([_sage_conv(in_size, hid_size), _sage_conv(hid_size, out_size)])

    def forward(self, x, edge_index):
        x = torch.nn.functional.dropout(torch.relu(self.convs[0](x, edge_index)), 0.5, self.training)
        return self.convs[1](x, edge_index)


def pyg_train_and_test(loader, full, test_idx, seed, epochs=3):
    torch.manual_seed(seed)
    model = PygSAGE(full["x"].shape[1], 32, int(full["y"].max()) + 1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=5e-4)
    for _ in range(epochs):
        model.train()
        for batch in loader:  # PyG's example loop
            out = model(batch.x, batch.edge_index)[: batch.batch_size]
            loss = torch.nn.functional.cross_entropy(out, batch.y[: batch.batch_size])
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        pred = model(full["x"], full["edge_index"]).argmax(1)
    return 100.0 * (pred[test_idx] == full["y"][test_idx]).float().mean().item()


def dgl_train_and_test(loader, g, test_idx, seed, epochs=3):
    """The same model on bgl's DGL path: dgl.nn.SAGEConv on dgl blocks, full-graph evaluation."""
    import dgl

    torch.manual_seed(seed)
    convs = torch.nn.ModuleList([dgl.nn.SAGEConv(g.ndata["feat"].shape[1], 32, "mean"),
                                 dgl.nn.SAGEConv(32, int(g.ndata["label"].max()) + 1, "mean")])
    opt = torch.optim.Adam(convs.parameters(), lr=1e-2, weight_decay=5e-4)

    def forward(blocks, x, training):
        x = torch.nn.functional.dropout(torch.relu(convs[0](blocks[0], x)), 0.5, training)
        return convs[1](blocks[1], x)

    for _ in range(epochs):
        for _, _, blocks in loader:
            loss = torch.nn.functional.cross_entropy(forward(blocks, blocks[0].srcdata["feat"], True),
                                                     blocks[-1].dstdata["label"])
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        pred = forward([g, g], g.ndata["feat"], False).argmax(1)
    return 100.0 * (pred[test_idx] == g.ndata["label"][test_idx]).float().mean().item()


def test_pyg_graphsage_loop_matches_bgl_dgl_path(cora_store, one_torch_thread):
    dgl = pytest.importorskip("dgl")
    import bgl

    full = cora_data(cora_store)
    train_idx = torch.from_numpy(np.array(cora_store.train_idx))
    test_idx = torch.from_numpy(np.array(cora_store.test_idx))
    seeds = (0, 1, 2)
    data = Data(**full) if Data is not None else cora_store
    with NeighborLoader(data, num_neighbors=[10, 10], batch_size=256, input_nodes=train_idx, shuffle=True) as loader:
        pyg_accs = [pyg_train_and_test(loader, full, test_idx, s) for s in seeds]
    g = dgl.graph((full["edge_index"][0], full["edge_index"][1]), num_nodes=cora_store.num_nodes)
    g.ndata["feat"], g.ndata["label"] = full["x"], full["y"]
    sampler = dgl.dataloading.NeighborSampler([10, 10])
    with bgl.DataLoader(g, train_idx, sampler, batch_size=256, shuffle=True) as loader:
        dgl_accs = [dgl_train_and_test(loader, g, test_idx, s) for s in seeds]
    report = f"bgl.pyg {np.round(pyg_accs, 1)} vs bgl DGL path {np.round(dgl_accs, 1)}"
    print("\ntest accuracy (%):", report)
    assert min(pyg_accs) > 75, report
    assert abs(np.mean(pyg_accs) - np.mean(dgl_accs)) <= 1.5, report
