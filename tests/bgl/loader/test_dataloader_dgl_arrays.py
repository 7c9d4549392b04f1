"""bgl.DataLoader on a DGLGraph reads the graph's own arrays: same batches, no copies, graph untouched."""
from __future__ import annotations

import os
import pickle

import numpy as np
import pytest
import torch

dgl = pytest.importorskip("dgl")

import bgl  # noqa: E402
from bgl.dgl.real_dgl.graph_reader import dglgraph_to_csc  # noqa: E402
from bgl.loader.graph_arrays import GraphArrays, dglgraph_arrays  # noqa: E402
from bgl.store import write_store  # noqa: E402

FANOUTS = [4, 3]


@pytest.fixture
def graph(random_store):
    """A DGLGraph whose edge ids are NOT in CSC order, with a duplicate edge, a self-loop and extra ndata."""
    st = random_store
    src = np.asarray(st.indices).astype(np.int64)
    dst = np.repeat(np.arange(st.num_nodes), np.diff(st.indptr))
    perm = np.random.default_rng(1).permutation(src.shape[0])
    src = np.concatenate([src[perm], [src[0], 7]])
    dst = np.concatenate([dst[perm], [dst[0], 7]])
    g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=st.num_nodes)
    g.ndata["feat"] = torch.from_numpy(np.array(st.feat))
    g.ndata["label"] = torch.from_numpy(np.array(st.label))
    g.ndata["train_mask"] = torch.zeros(st.num_nodes, dtype=torch.bool)
    return g, torch.from_numpy(np.array(st.train_idx))


def snapshot(g) -> dict:
    return {"ndata": {k: (v.clone(), v.data_ptr(), v.is_shared()) for k, v in g.ndata.items()},
            "edges": [t.clone() for t in g.edges()], "num_nodes": g.num_nodes()}


def assert_unchanged(g, before: dict) -> None:
    assert g.num_nodes() == before["num_nodes"]
    assert sorted(g.ndata.keys()) == sorted(before["ndata"])
    for key, (value, ptr, shared) in before["ndata"].items():
        now = g.ndata[key]
        assert torch.equal(now, value), key
        assert now.data_ptr() == ptr and now.is_shared() == shared, f"ndata[{key!r}] storage was moved"
    assert all(torch.equal(a, b) for a, b in zip(g.edges(), before["edges"]))


def epochs_of(loader, n=2) -> list:
    out = []
    for _ in range(n):
        batches = []
        for inp, outp, blocks in loader:
            batches.append((inp.clone(), outp.clone(), [tuple(t.clone() for t in b.edges()) for b in blocks],
                            blocks[0].srcdata["feat"].clone(), blocks[-1].dstdata["label"].clone()))
        out.append(batches)
    return out


def assert_same_epochs(a, b) -> None:
    assert len(a) == len(b)
    for ea, eb in zip(a, b):
        assert len(ea) == len(eb) > 0
        for (ia, oa, edges_a, fa, la), (ib, ob, edges_b, fb, lb) in zip(ea, eb):
            assert torch.equal(ia, ib) and torch.equal(oa, ob)
            assert all(torch.equal(x, y) for ab, bb in zip(edges_a, edges_b) for x, y in zip(ab, bb))
            assert torch.equal(fa, fb) and torch.equal(la, lb)


def test_batches_equal_those_from_a_store_of_the_same_graph_and_the_graph_is_untouched(graph, tmp_path):
    g, train = graph
    before = snapshot(g)
    indptr, indices, _ = dglgraph_to_csc(g)
    store = write_store(tmp_path / "store", indptr, indices, feat=g.ndata["feat"].numpy(),
                        label=g.ndata["label"].numpy(), num_classes=int(g.ndata["label"].max()) + 1)
    runs = []
    for source in (g, store):
        torch.manual_seed(5)
        with bgl.DataLoader(source, train, bgl.NeighborSampler(FANOUTS), batch_size=64, shuffle=True,
                            blocks="dgl") as loader:
            runs.append(epochs_of(loader))
    assert_same_epochs(*runs)
    for inp, outp, _, feat, label in runs[0][0]:
        assert torch.equal(feat, g.ndata["feat"][inp]) and torch.equal(label, g.ndata["label"][outp])
    assert_unchanged(g, before)


def test_the_loader_reads_views_of_the_graphs_tensors(graph):
    g, train = graph
    feat, label = g.ndata["feat"], g.ndata["label"]
    loader = bgl.DataLoader(g, train, bgl.NeighborSampler(FANOUTS), batch_size=64)
    arrays = loader._info.spec.arrays
    assert isinstance(arrays, GraphArrays)
    assert arrays.feat.__array_interface__["data"][0] == feat.data_ptr()
    assert arrays.label.__array_interface__["data"][0] == label.data_ptr()
    csc_indptr, csc_indices, _ = g.adj_tensors("csc")
    assert arrays.indptr.__array_interface__["data"][0] == csc_indptr.data_ptr()
    assert arrays.indices.__array_interface__["data"][0] == csc_indices.data_ptr()
    # bgl's views are read-only; the caller's tensor stays writable.
    with pytest.raises(ValueError, match="read-only"):
        arrays.feat[0, 0] = 1.0
    assert feat.numpy().flags.writeable
    # The first batch's features are gathered from those very rows.
    inp, _, blocks = next(iter(loader))
    assert torch.equal(blocks[0].srcdata["feat"], feat[inp])
    loader.close()


def test_construction_draws_no_random_numbers(graph):
    g, train = graph
    torch.manual_seed(0)
    expected = torch.rand(4)
    torch.manual_seed(0)
    bgl.DataLoader(g, train, bgl.NeighborSampler(FANOUTS), batch_size=64, shuffle=True).close()
    assert torch.equal(torch.rand(4), expected)  # the kernel warm-up uses a fixed seed


def test_arrays_pickle_only_from_shared_memory_copies(graph):
    g, _ = graph
    arrays = dglgraph_arrays(g, "feat", "label")
    with pytest.raises(TypeError, match="share_memory"):
        pickle.dumps(arrays)
    shared = arrays.share_memory()
    assert shared.is_shared and not g.ndata["feat"].is_shared()
    assert not np.shares_memory(shared.feat, arrays.feat)
    back = pickle.loads(pickle.dumps(shared))
    for name in ("indptr", "indices", "feat", "label"):
        assert np.array_equal(getattr(back, name), getattr(arrays, name)), name
    assert back.num_classes == arrays.num_classes and back.num_nodes == g.num_nodes()


def test_stage_processes_get_shared_copies_and_match_inline(spawned_children, graph):
    g, train = graph
    before = snapshot(g)
    cores = sorted(os.sched_getaffinity(0))
    runs = {}
    for mode in ("inline", "processes"):
        torch.manual_seed(3)
        extra = {"stage_cores": {"sample": [cores[0]], "fetch": [cores[-1]]}} if mode == "processes" else {}
        with bgl.DataLoader(g, train, bgl.NeighborSampler(FANOUTS), batch_size=64, shuffle=True,
                            pipeline=mode, **extra) as loader:
            if mode == "processes":
                assert loader._info.spec.arrays.is_shared
            runs[mode] = epochs_of(loader, 1)
    assert_same_epochs(runs["inline"], runs["processes"])
    assert_unchanged(g, before)
    assert not spawned_children()


def test_bad_node_data_is_named(graph):
    g, train = graph
    g.ndata["feat"] = torch.zeros(g.num_nodes())
    with pytest.raises(ValueError, match=r"ndata\['feat'\] must be 2-D"):
        bgl.DataLoader(g, train, bgl.NeighborSampler(FANOUTS))


@pytest.mark.parametrize("pipeline", ["inline", "processes"])
def test_blocks_carry_the_graphs_own_edge_ids(spawned_children, graph, pipeline):
    """edata[dgl.EID] names each sampled edge by the DGLGraph's id, as DGL's loader does (the
    fixture's edge ids are not in CSC order, so CSC positions would name other edges)."""
    g, train = graph
    extra = {"stage_cores": {"sample": 1, "fetch": 1}} if pipeline == "processes" else {}
    with bgl.DataLoader(g, train, dgl.dataloading.NeighborSampler(FANOUTS), batch_size=64, pipeline=pipeline,
                        **extra) as loader:
        checked = 0
        for _, _, blocks in loader:
            for block in blocks:
                u, v = block.edges()
                src, dst = g.find_edges(block.edata[dgl.EID])
                assert torch.equal(src, block.srcdata[dgl.NID][u.long()])
                assert torch.equal(dst, block.dstdata[dgl.NID][v.long()])
                checked += int(u.numel())
    assert checked > 0
