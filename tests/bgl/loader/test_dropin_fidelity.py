"""Issue #23's table: DGL idioms that ran with DGL's loader and failed (silently or not) with bgl's.

Each test is one row: the idiom as DGL 2.1 users write it, checked against what DGL does.
"""
from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
import torch

dgl = pytest.importorskip("dgl")

import bgl  # noqa: E402
from bgl.loader.seeds.duplicates import distinct_seeds, expand_to_seeds  # noqa: E402


def _graph(num_nodes=60, num_edges=500, seed=0, ntype="_N", etype="_E"):
    """A random one-type DGLGraph with feat/label/pos/other ndata and w edata (edge ids not in CSC order)."""
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(0, num_nodes, (num_edges,), generator=gen)
    dst = torch.randint(0, num_nodes, (num_edges,), generator=gen)
    g = dgl.heterograph({(ntype, etype, ntype): (src, dst)}, num_nodes_dict={ntype: num_nodes})
    g.ndata["feat"] = torch.randn(num_nodes, 6, generator=gen)
    g.ndata["label"] = torch.randint(0, 3, (num_nodes,), generator=gen)
    g.ndata["pos"] = torch.randn(num_nodes, 2, generator=gen)
    g.ndata["other"] = torch.arange(num_nodes) * 10
    g.edata["w"] = torch.rand(num_edges, generator=gen)
    return g


SAMPLER = dgl.dataloading.NeighborSampler([3, 2])


# ------------------------------------------------------------------ iterators own their epoch
def test_loader_held_by_no_variable_yields_every_batch():
    g = _graph()
    ids = torch.arange(40)
    count = sum(1 for _ in bgl.DataLoader(g, ids, SAMPLER, batch_size=8))
    assert count == 5


def test_next_iter_of_a_temporary_loader_is_a_batch():
    g = _graph()
    input_nodes, output_nodes, blocks = next(iter(bgl.DataLoader(g, torch.arange(40), SAMPLER, batch_size=8)))
    assert output_nodes.shape[0] == 8 and len(blocks) == 2


def _bgl_threads() -> set[str]:
    return {t.name for t in threading.enumerate() if t.name.startswith("bgl-")}


@pytest.mark.extended
def test_loader_dropped_while_its_processes_epoch_runs_finishes_the_epoch():
    g = _graph()
    loader = bgl.DataLoader(g, torch.arange(40), SAMPLER, batch_size=8, pipeline="processes",
                            stage_cores={"sample": [0], "fetch": [0]})
    it = iter(loader)
    first = next(it)
    pids = list(loader.stage_pids().values())
    del loader
    gc.collect()
    rest = list(it)
    assert len(rest) == 4 and first[1].shape[0] == 8
    del it
    gc.collect()
    for pid in pids:  # the epoch ended and nothing holds the loader: its processes are gone
        _wait_gone(pid)


def _wait_gone(pid: int, timeout: float = 10.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        try:  # a zombie still answers kill(0); it is reaped by its parent (us) in join
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(")")[-1].split()[0] == "Z":
                    return
        except FileNotFoundError:
            return
        time.sleep(0.05)
    raise AssertionError(f"stage process {pid} still running {timeout} s after its iterator was dropped")


@pytest.mark.extended
def test_abandoned_processes_iterator_stops_its_stages():
    g = _graph()
    shm_before = set(os.listdir("/dev/shm"))
    loader = bgl.DataLoader(g, torch.arange(40), SAMPLER, batch_size=8, pipeline="processes",
                            stage_cores={"sample": [0], "fetch": [0]})
    it = iter(loader)
    next(it)
    pids = list(loader.stage_pids().values())
    assert len(pids) == 3
    del it  # abandoned mid-epoch: no break, no close
    gc.collect()
    for pid in pids:
        _wait_gone(pid)
    assert loader.stage_pids() == {}
    # The loader is still usable: a new epoch starts new stages and yields every batch.
    assert sum(1 for _ in loader) == 5
    loader.close()
    gc.collect()
    assert set(os.listdir("/dev/shm")) - shm_before == set()


def test_abandoned_thread_iterator_joins_its_thread():
    g = _graph()
    before = _bgl_threads()
    loader = bgl.DataLoader(g, torch.arange(40), SAMPLER, batch_size=8, pipeline="thread")
    it = iter(loader)
    next(it)
    assert _bgl_threads() - before
    del it
    gc.collect()
    assert _bgl_threads() - before == set()
    loader.close()


# ------------------------------------------------------------------ blocks DGL's layers train on
def _layers(dim):
    nn = dgl.nn
    return {
        "SAGEConv": nn.SAGEConv(dim, 4, "mean"),
        "GraphConv": nn.GraphConv(dim, 4, allow_zero_in_degree=True),
        "GATConv": nn.GATConv(dim, 4, 2, allow_zero_in_degree=True),
        "GATv2Conv": nn.GATv2Conv(dim, 4, 2, allow_zero_in_degree=True),
        "GINConv": nn.GINConv(torch.nn.Linear(dim, 4), "sum"),
        "DotGatConv": nn.DotGatConv(dim, 4, 2, allow_zero_in_degree=True),
    }


@pytest.mark.parametrize("name", list(_layers(6)))
def test_dgl_layers_train_on_bgl_blocks_with_default_kernels(name):
    """Forward and backward on bgl's block equal those on the same block built by dgl.create_block."""
    g = _graph()
    _, _, blocks = next(iter(bgl.DataLoader(g, torch.arange(16), SAMPLER, batch_size=16)))
    b = blocks[0]
    u, v = b.edges(order="eid")
    ref = dgl.create_block((u, v), num_src_nodes=b.num_src_nodes(), num_dst_nodes=b.num_dst_nodes())
    x = b.srcdata["feat"]
    torch.manual_seed(0)
    layer = _layers(6)[name]
    outs, grads = [], []
    for block in (b, ref):
        xi = x.clone().requires_grad_(True)
        out = layer(block, xi)
        out.sum().backward()
        outs.append(out.detach())
        grads.append(xi.grad)
    assert torch.allclose(outs[0], outs[1], atol=1e-5)
    assert torch.allclose(grads[0], grads[1], atol=1e-5)
    assert torch.isfinite(grads[0]).all()


def test_one_type_graph_keeps_its_type_names():
    g = _graph(ntype="user", etype="follows")
    _, _, blocks = next(iter(bgl.DataLoader(g, torch.arange(8), SAMPLER, batch_size=8)))
    for b in blocks:
        assert b.srctypes == ["user"] and b.dsttypes == ["user"]
        assert b.canonical_etypes == [("user", "follows", "user")]


# ------------------------------------------------------------------ the graph's fields
def _check_node_fields(b, g, keys, side):
    data, ids = (b.srcdata, b.srcdata[dgl.NID]) if side == "src" else (b.dstdata, b.dstdata[dgl.NID])
    for key in keys:
        assert torch.equal(data[key], g.ndata[key][ids]), (side, key)


@pytest.mark.parametrize("pipeline", ["inline", "processes"])
def test_every_ndata_and_edata_field_reaches_the_blocks(pipeline):
    g = _graph()
    loader = bgl.DataLoader(g, torch.arange(16), SAMPLER, batch_size=8, pipeline=pipeline,
                            stage_cores={"sample": [0], "fetch": [0]} if pipeline == "processes" else None)
    for _, _, blocks in loader:
        for b in blocks:
            _check_node_fields(b, g, ["feat", "label", "pos", "other"], "src")
            _check_node_fields(b, g, ["feat", "label", "pos", "other"], "dst")
            assert torch.equal(b.edata["w"], g.edata["w"][b.edata[dgl.EID]])
    loader.close()


def test_several_prefetched_node_feats_and_edge_feats():
    g = _graph()
    sampler = dgl.dataloading.NeighborSampler([3, 2], prefetch_node_feats=["feat", "pos"],
                                              prefetch_labels=["label"], prefetch_edge_feats=["w"])
    for blocks_kind in ("dgl", "bgl"):
        _, _, blocks = next(iter(bgl.DataLoader(g, torch.arange(8), sampler, batch_size=8, blocks=blocks_kind)))
        first = blocks[0]
        src_ids = first.srcdata[dgl.NID] if blocks_kind == "dgl" else first.src_ids
        assert torch.equal(first.srcdata["pos"], g.ndata["pos"][src_ids])
        assert torch.equal(first.srcdata["feat"], g.ndata["feat"][src_ids])
        for b in blocks:
            eids = b.edata[dgl.EID] if blocks_kind == "dgl" else b.edge_ids
            assert torch.equal(b.edata["w"], g.edata["w"][eids])


def test_bgl_sampler_takes_prefetch_edge_feats():
    g = _graph()
    sampler = bgl.NeighborSampler([2], prefetch_edge_feats=["w"])
    _, _, blocks = next(iter(bgl.DataLoader(g, torch.arange(8), sampler, batch_size=8)))
    assert torch.equal(blocks[0].edata["w"], g.edata["w"][blocks[0].edata[dgl.EID]])


def test_fields_a_store_lacks_fail_at_construction(cora_store):
    two = dgl.dataloading.NeighborSampler([2], prefetch_node_feats=["feat", "pos"])
    with pytest.raises(ValueError, match="one node feature array"):
        bgl.DataLoader(cora_store, torch.arange(8), two)
    edges = dgl.dataloading.NeighborSampler([2], prefetch_edge_feats=["w"])
    with pytest.raises(ValueError, match="'w', which the graph does not have; it has no edge data"):
        bgl.DataLoader(cora_store, torch.arange(8), edges)
    g = _graph()
    with pytest.raises(ValueError, match="'nope'.*ndata"):
        bgl.DataLoader(g, torch.arange(8), dgl.dataloading.NeighborSampler([2], prefetch_node_feats=["feat", "nope"]))
    with pytest.raises(ValueError, match="edge data 'nope', which the graph does not have"):
        bgl.DataLoader(g, torch.arange(8), dgl.dataloading.NeighborSampler([2], prefetch_edge_feats=["nope"]))


def test_a_stores_edge_features_come_with_the_sampled_edges(tmp_path):
    """prefetch_edge_feats on a store: each block's edata holds the store's rows of its edges (by edge id)."""
    g = _graph()
    store = bgl.ingest(g, tmp_path / "s", remove_self_loops=False, dedupe=False)
    sampler = dgl.dataloading.NeighborSampler([3, 2], prefetch_edge_feats=["w"])
    _, _, blocks = next(iter(bgl.DataLoader(store, torch.arange(16), sampler, batch_size=16)))
    weights = torch.from_numpy(np.array(store.edge_array("w")))
    for block in blocks:
        assert block.num_edges() > 0
        assert torch.equal(block.edata["w"], weights[block.edata[dgl.EID]])


@pytest.mark.parametrize("pipeline,cache", [("inline", None), ("inline", 0.5), ("processes", None)])
def test_features_assigned_or_edited_after_the_loader_is_built_are_seen(pipeline, cache):
    g = _graph()
    kwargs = {"stage_cores": {"sample": [0], "fetch": [0]}} if pipeline == "processes" else {}
    loader = bgl.DataLoader(g, torch.arange(16), SAMPLER, batch_size=16, pipeline=pipeline, cache=cache, **kwargs)
    _, _, blocks = next(iter(loader))
    assert torch.equal(blocks[0].srcdata["feat"], g.ndata["feat"][blocks[0].srcdata[dgl.NID]])
    g.ndata["feat"] = torch.full((g.num_nodes(), 6), 7.0)  # replaced
    if pipeline != "processes":  # stage processes: one refresh (each epoch starts new processes, ~10 s)
        _, _, blocks = next(iter(loader))
        assert (blocks[0].srcdata["feat"] == 7.0).all()
    g.ndata["feat"][:] = 3.0  # edited in place
    g.ndata["label"] = torch.full((g.num_nodes(),), 2)
    _, _, blocks = next(iter(loader))
    assert (blocks[0].srcdata["feat"] == 3.0).all()
    assert (blocks[-1].dstdata["label"] == 2).all()
    loader.close()


# ------------------------------------------------------------------ seeds
def test_repeated_seed_ids_are_kept_as_dgl_keeps_them():
    g = _graph()
    seeds = torch.tensor([1, 2, 2, 5, 1])
    input_nodes, output_nodes, blocks = next(iter(bgl.DataLoader(g, seeds, SAMPLER, batch_size=5)))
    assert torch.equal(output_nodes, seeds)
    for b in blocks:  # every layer: dst nodes lead src nodes, and each edge is a real edge of g
        src, dst = b.srcdata[dgl.NID], b.dstdata[dgl.NID]
        assert torch.equal(src[: b.num_dst_nodes()], dst)
        u, v = b.edges()
        gu, gv = g.find_edges(b.edata[dgl.EID])
        assert torch.equal(src[u], gu) and torch.equal(dst[v], gv)
    last = blocks[-1]
    # Each copy of a repeated seed has its node's in-edges (samples are per (seed, node id)).
    rows = [last.edata[dgl.EID][last.in_edges(i, form="eid")].sort().values for i in range(5)]
    assert torch.equal(rows[1], rows[2]) and torch.equal(rows[0], rows[4])
    assert torch.equal(input_nodes, blocks[0].srcdata[dgl.NID])


def test_expand_to_seeds_matches_sampling_each_copy():
    """Expansion equals the blocks built by hand from the distinct seeds' rows (independent check)."""
    g = _graph()
    sampler = bgl.sampler.LocalSampler(bgl.loader.graph_arrays.dglgraph_arrays(g, "feat", "label"))
    seeds = torch.tensor([4, 9, 4, 4, 0])
    uniq, inverse = distinct_seeds(seeds)
    blocks = expand_to_seeds(sampler.sample_blocks(uniq, [2, 3], seed=11), inverse)
    plain = sampler.sample_blocks(uniq, [2, 3], seed=11)
    last, ref = blocks[-1], plain[-1]
    assert torch.equal(last.dst_ids, seeds)
    for i, j in enumerate(inverse.tolist()):  # row i is a copy of distinct row j, same global edges
        a = last.src_ids[last.indices[last.indptr[i]:last.indptr[i + 1]]]
        b = ref.src_ids[ref.indices[ref.indptr[j]:ref.indptr[j + 1]]]
        assert torch.equal(a, b)
    assert distinct_seeds(torch.tensor([3, 1, 2]))[1] is None


def test_repeated_seeds_with_proximity_order_fail_at_construction():
    g = _graph()
    with pytest.raises(ValueError, match="distinct seed ids"):
        bgl.DataLoader(g, torch.tensor([1, 1, 2]), SAMPLER, order="proximity")


def test_edge_dir_out_is_refused_with_what_to_do():
    g = _graph()
    with pytest.raises(ValueError, match="dgl.reverse"):
        bgl.DataLoader(g, torch.arange(8), dgl.dataloading.NeighborSampler([2], edge_dir="out"))



def _full_blocks(module, g, seeds, sampler):
    """(input nodes as sets, per-block (edges, dst count)) of each batch, deterministic for full sampling."""
    out = []
    for inp, _, blocks in module.DataLoader(g, seeds, sampler, batch_size=16):
        sets = {t: set(v.tolist()) for t, v in inp.items()} if isinstance(inp, dict) else set(inp.tolist())
        out.append((sets, [(b.num_edges(), b.num_dst_nodes()) for b in blocks]))
    return out


def test_multi_layer_full_neighbor_sampler_takes_what_dgls_takes():
    g = _graph()
    mine = _full_blocks(bgl, g, torch.arange(40), bgl.MultiLayerFullNeighborSampler(2))
    assert mine == _full_blocks(dgl.dataloading, g, torch.arange(40), dgl.dataloading.MultiLayerFullNeighborSampler(2))
    gen = torch.Generator().manual_seed(1)
    hg = dgl.heterograph({("user", "clicks", "item"): (torch.randint(0, 30, (200,), generator=gen),
                                                      torch.randint(0, 40, (200,), generator=gen)),
                          ("item", "by", "user"): (torch.randint(0, 40, (200,), generator=gen),
                                                   torch.randint(0, 30, (200,), generator=gen))})
    hg.nodes["user"].data["feat"] = torch.randn(30, 3)
    hg.nodes["item"].data["feat"] = torch.randn(40, 5)
    seeds = {"item": torch.arange(40)}
    assert _full_blocks(bgl, hg, seeds, bgl.MultiLayerFullNeighborSampler(2)) == _full_blocks(
        dgl.dataloading, hg, seeds, dgl.dataloading.MultiLayerFullNeighborSampler(2))
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="num_layers"):
            bgl.MultiLayerFullNeighborSampler(bad)
    with pytest.raises(ValueError, match="edge_dir"):
        bgl.MultiLayerFullNeighborSampler(2, edge_dir="out")


# ------------------------------------------------------------------ num_workers in an unguarded script
UNGUARDED = '''
import sys
import torch, dgl, bgl
print("BODY", flush=True)
g = dgl.graph((torch.randint(0, 50, (300,)), torch.randint(0, 50, (300,))), num_nodes=50)
g.ndata["feat"] = torch.randn(50, 4)
loader = bgl.DataLoader(g, torch.arange(40), dgl.dataloading.NeighborSampler([2, 2]), batch_size=8,
                        num_workers=2)
n = sum(1 for _ in loader)
print("BATCHES", n, flush=True)
'''


def test_num_workers_in_a_script_without_main_guard(tmp_path):
    script = tmp_path / "unguarded.py"
    script.write_text(textwrap.dedent(UNGUARDED))
    env = {**os.environ, "DGLBACKEND": "pytorch"}
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240, env=env,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.count("BODY") == 1, r.stdout  # the stage processes did not re-run the script
    assert "BATCHES 5" in r.stdout


# ------------------------------------------------------------------ PyG
def test_pyg_loader_has_a_dataset_of_its_seeds():
    pytest.importorskip("torch_geometric")
    from torch_geometric.data import Data

    from bgl.pyg import NeighborLoader

    data = Data(x=torch.randn(30, 4), edge_index=torch.randint(0, 30, (2, 120)), y=torch.randint(0, 2, (30,)))
    loader = NeighborLoader(data, num_neighbors=[2], input_nodes=torch.arange(12), batch_size=5)
    assert len(loader.dataset) == 12
    seen = sum(batch.batch_size for batch in loader)
    assert seen == len(loader.dataset)
