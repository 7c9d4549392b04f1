"""``dgl.slice_batch`` (bgl/dgl/batching.py) against real DGL 2.1 (structure, features, stored ids, typed
batches, ``gid`` out of range), and ``dir(bgl.dgl)``: it lists every name loaded on first use, and lacks only
the names of DGL's top level that bgl.dgl refuses by design."""
from __future__ import annotations

import importlib.util

import pytest
import torch

import bgl.dgl as bdgl

HAS_DGL = importlib.util.find_spec("dgl") is not None


def _batch(lib):
    gen = torch.Generator().manual_seed(0)
    graphs = []
    for n, e in [(4, 6), (0, 0), (5, 7)]:
        src, dst = (torch.randint(0, max(n, 1), (e,), generator=gen) for _ in range(2))
        g = lib.graph((src, dst), num_nodes=n)
        g.ndata["x"] = torch.randn(n, 2, generator=gen)
        g.edata["e"] = torch.randn(e, generator=gen)
        graphs.append(g)
    return lib.batch(graphs)


@pytest.mark.parametrize("gid, store_ids", [(0, False), (2, True), (1, True)])
def test_slice_batch_matches_dgl(gid, store_ids, graph_state):
    bg = _batch(bdgl)
    ours = bdgl.slice_batch(bg, gid, store_ids=store_ids)
    assert ours.batch_size == 1 and torch.equal(ours.ndata["x"], bdgl.unbatch(bg)[gid].ndata["x"])
    if HAS_DGL:
        import dgl

        theirs = dgl.slice_batch(_batch(dgl), gid, store_ids=store_ids)
        assert graph_state(ours) == graph_state(theirs) and ours.idtype == theirs.idtype


def test_typed_slice_batch_matches_dgl(graph_state, user_item):
    ours = bdgl.slice_batch(bdgl.batch([user_item(bdgl, seed, 4, 3, 6, "e") for seed in (1, 2)]), 1, store_ids=True)
    assert ours.num_nodes("user") == 4 and ours.edges["rates"].data["_ID"].tolist() == list(range(6, 12))
    with pytest.raises(IndexError):
        bdgl.slice_batch(bdgl.batch([user_item(bdgl, 1, 4, 3, 6, "e")]), 1)
    with pytest.raises(RuntimeError):
        bdgl.slice_batch(bdgl.batch([user_item(bdgl, 1, 4, 3, 6, "e")] * 2), -1)
    if HAS_DGL:
        import dgl

        theirs = dgl.slice_batch(dgl.batch([user_item(dgl, seed, 4, 3, 6, "e") for seed in (1, 2)]), 1,
                                 store_ids=True)
        assert graph_state(ours) == graph_state(theirs)
        with pytest.raises(IndexError):
            dgl.slice_batch(dgl.batch([user_item(dgl, 1, 4, 3, 6, "e")]), 1)
        with pytest.raises(RuntimeError):
            dgl.slice_batch(dgl.batch([user_item(dgl, 1, 4, 3, 6, "e")] * 2), -1)


# DGL 2.1's public top-level names that bgl.dgl refuses by design (each raises its one-line refusal)
REFUSED = {"distributed", "graphbolt",  # bgl's servers (bgl launch) and bgl.DataLoader instead
           "from_cugraph", "to_cugraph",  # cuGraph interop
           # DGL's C++ runtime, backend and IPC plumbing
           "TypeCode", "backend", "backend_name", "load_backend", "container", "core", "cuda", "ndarray",
           "graph_index", "heterograph_index", "extract_ext_funcs", "get_global_func", "list_global_func_names",
           "register_func", "enable_verbose_logging", "logging", "global_config", "hetero_from_shared_memory",
           "storages", "utils", "view", "socket",
           # DGL's module names whose public functions are bgl.dgl's top-level names
           "edgewise", "nodewise", "fused", "functional", "generators", "homophily", "label_informativeness",
           "module", "mpops", "partition", "propagate", "readout", "subgraph", "traversal"}


def test_dir_lists_the_lazy_names():
    listed = set(dir(bdgl))
    lazy = {*bdgl._LAZY_MODULES, *bdgl._LAZY_NAMES, "nn"}
    assert lazy <= listed and set(bdgl.__all__) <= listed
    assert all(hasattr(bdgl, name) for name in sorted(bdgl._LAZY_NAMES)[:3])  # loads, as a scan would
    if HAS_DGL:
        import dgl

        missing = {n for n in set(dir(dgl)) - listed if not n.startswith("_")}
        assert missing <= REFUSED, sorted(missing - REFUSED)
        assert all(not hasattr(bdgl, name) for name in missing)


def _lazy_loader(lib):
    """One batch of a user's own sampler that leaves lazy features for ``lib``'s DataLoader to fill."""

    class LazyBlocks(lib.dataloading.Sampler):
        def sample(self, g, seeds):
            block = lib.to_block(lib.in_subgraph(g, seeds), seeds)
            for data in (block.srcdata, block.dstdata, block.edata):  # only the ids: the loader adds the rest
                for name in [k for k in data if k != "_ID"]:
                    del data[name]
            lib.dataloading.set_src_lazy_features(block, ["x"])
            lib.dataloading.set_edge_lazy_features(block, ["w"])
            block.dstdata["h"] = lib.LazyFeature("x")  # another key, the graph's field "x"
            assert type(block.srcdata["x"]).__name__ == "LazyFeature"  # unfilled until the loader runs
            return seeds, block

    g = lib.graph((torch.tensor([0, 1, 2, 3, 4, 0]), torch.tensor([1, 2, 3, 4, 0, 2])))
    g.ndata["x"] = torch.arange(10.0).view(5, 2)
    g.edata["w"] = torch.arange(6.0)
    return next(iter(lib.dataloading.DataLoader(g, torch.tensor([2, 0]), LazyBlocks(), batch_size=2)))


def _block_data(block) -> dict:
    return {(side, k): v.tolist() for side, data in (("src", block.srcdata), ("dst", block.dstdata),
                                                     ("edge", block.edata)) for k, v in data.items()}


def test_lazy_features_are_filled_as_dgl():
    seeds, block = _lazy_loader(bdgl)
    assert torch.equal(block.srcdata["x"], torch.arange(10.0).view(5, 2)[block.srcdata["_ID"]])
    assert torch.equal(block.dstdata["h"], block.srcdata["x"][:2])
    assert torch.equal(block.edata["w"], block.edata["_ID"].float())
    if HAS_DGL:
        import dgl

        assert _block_data(block) == _block_data(_lazy_loader(dgl)[1])
