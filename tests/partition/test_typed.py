"""Typed partitions (partition/typed_parts.py): every node and edge of every type exactly once,
typed part stores, typed views of the PartitionBook, typed sampling equal to the whole store."""
from __future__ import annotations

import json

import numpy as np
import pytest

from bgl.errors import PartitionFormatError
from bgl.partition import format as pformat
from bgl.partition import open_partition, partition_graph
from bgl.sampler.local import LocalSampler
from bgl.sampler.typed.sampling import relation_fanouts

from ..conftest import typed_edges


@pytest.fixture(scope="module")
def book(hetero_store, tmp_path_factory):
    return partition_graph(hetero_store, "random", 2, tmp_path_factory.mktemp("tparts") / "p", num_batches=8)


def test_every_node_of_every_type_once(hetero_store, book):
    schema, T = hetero_store.schema, len(hetero_store.schema.node_types)
    orig = np.asarray(book.orig_ids)
    assert book.meta["version"] == pformat.TYPED_FORMAT_VERSION
    for t, nt in enumerate(schema.node_types):
        got = np.concatenate([orig[book.type_bounds[k * T + t]:book.type_bounds[k * T + t + 1]]
                              for k in range(book.num_parts)])
        assert np.array_equal(np.sort(got), np.arange(nt.offset, nt.offset + nt.count))
        counts = [book.part_store(k).schema.node_types[t].count for k in range(book.num_parts)]
        assert sum(counts) == nt.count and counts == [int(book.type_bounds[k * T + t + 1] - book.type_bounds[k * T + t])
                                                      for k in range(book.num_parts)]
    new = np.arange(book.num_nodes)
    assert np.array_equal(book.type_of(new), schema.type_of(orig))
    types, local = book.to_orig(new)
    assert np.array_equal(local + schema.offsets[types], orig)
    for nt in schema.ntypes:
        ids = np.arange(schema.node_type(nt).count)
        assert np.array_equal(book.to_orig(book.to_new(nt, ids))[1], ids)


def test_every_edge_of_every_relation_once(hetero_store, book):
    orig, orig_eids = np.asarray(book.orig_ids), np.asarray(book.orig_eids)
    assert np.array_equal(np.sort(orig_eids), np.arange(hetero_store.num_edges))
    src_etype, src_idx = np.asarray(hetero_store.etype), np.asarray(hetero_store.indices)
    per_rel = np.zeros(len(hetero_store.schema.edge_types), np.int64)
    for k in range(book.num_parts):
        ps = book.part_store(k)
        e = orig_eids[book.edge_bounds[k]:book.edge_bounds[k + 1]]
        etype = np.asarray(ps.etype)
        assert np.array_equal(etype, src_etype[e])
        assert np.array_equal(orig[np.asarray(ps.indices)], src_idx[e])
        ptr = np.asarray(ps.indptr)
        for r in range(ptr.size - 1):  # each row keeps its relation grouping
            assert np.all(np.diff(etype[ptr[r]:ptr[r + 1]].astype(np.int64)) >= 0)
        counts = [et.count for et in ps.schema.edge_types]
        assert counts == np.bincount(etype, minlength=len(counts)).tolist()
        per_rel += counts
    assert per_rel.tolist() == [et.count for et in hetero_store.schema.edge_types]


def test_part_rows_and_splits_are_the_owned_nodes(hetero_store, book):
    for nt in hetero_store.schema.node_types:
        for k in range(book.num_parts):
            ps = book.part_store(k)
            t = ps.schema.ntype_id(nt.name)
            start = int(book.type_bounds[k * len(ps.schema.node_types) + t])
            _, local = book.to_orig(np.arange(start, start + ps.schema.node_types[t].count))
            if nt.feat_dim:
                assert ps.type_feat[nt.name].dtype == hetero_store.type_feat[nt.name].dtype
                assert np.array_equal(ps.type_feat[nt.name], hetero_store.type_feat[nt.name][local])
            if nt.has_label:
                assert np.array_equal(ps.type_label[nt.name], hetero_store.type_label[nt.name][local])
        for name, ids in hetero_store.type_splits[nt.name].items():
            got = book.to_orig(book.type_split(nt.name, name))[1]
            assert np.array_equal(np.sort(got), np.asarray(ids))
    assert sum(p["num_train"] for p in book.meta["parts"]) == hetero_store.type_splits["paper"]["train"].size
    assert 0 < book.metrics["remote_sample_share"] < 1  # measured by typed sampling


@pytest.mark.parametrize("layer", [{"writes": -1, "cites": -1, "in": 0, "by": -1}, {"writes": 2, "cites": 1, "in": 1, "by": 3}])
def test_typed_part_sampling_matches_whole_store(hetero_store, book, layer):
    """Part stores draw the store's edges, full or sampled: their rows' stream keys are the original ids."""
    schema = hetero_store.schema
    whole = LocalSampler(hetero_store)
    fan = relation_fanouts(layer, schema.canonical_etypes)
    checked = 0
    for k in range(book.num_parts):
        lo, hi = book.bounds[k], book.bounds[k + 1]
        seeds = np.arange(lo, hi, dtype=np.int64)
        got = typed_edges(LocalSampler(book.part_store(k)).sample_typed_blocks(seeds, [fan], seed=3)[0],
                         np.asarray(book.orig_ids))
        identity = np.arange(hetero_store.num_nodes)
        want = typed_edges(whole.sample_typed_blocks(np.sort(np.asarray(book.orig_ids)[seeds]), [fan], seed=3)[0],
                          identity)
        assert got == want and not any(r == 2 for _, r in got if layer["in"] == 0)
        checked += len(got)
    assert checked > 0


def test_bad_ids_of_a_type_are_named(book):
    with pytest.raises(ValueError, match="'author'.*outside \\[0, 200\\)"):
        book.to_new("author", [0, 200])
    with pytest.raises(ValueError, match="unknown node type 'user'"):
        book.to_new("user", [0])


def test_untyped_partition_has_no_typed_views(planted, tmp_path):
    b = partition_graph(planted, "random", 2, tmp_path / "p", measure_samples=False)
    assert b.meta["version"] == pformat.FORMAT_VERSION and b.schema is None
    with pytest.raises(ValueError, match="untyped partition"):
        b.type_of([0])


def test_bad_type_bounds_are_refused(book, tmp_path):
    import shutil

    copy = tmp_path / "p"
    shutil.copytree(book.path, copy)
    meta = json.loads((copy / "partition.json").read_text())
    meta["type_bounds"][1] += 1000
    (copy / "partition.json").write_text(json.dumps(meta))
    with pytest.raises(PartitionFormatError, match="type_bounds"):
        open_partition(copy)


def test_interrupted_typed_write_leaves_nothing(hetero_store, tmp_path, monkeypatch):
    def crash(k):
        if k == 0:
            raise RuntimeError("simulated crash after part 0")

    monkeypatch.setattr(pformat, "_part_written_hook", crash)
    with pytest.raises(RuntimeError):
        partition_graph(hetero_store, "random", 2, tmp_path / "p", measure_samples=False)
    assert list(tmp_path.iterdir()) == []


def test_the_engine_balances_the_typed_train_nodes_and_measures_typed_samples(hetero_store, tmp_path):
    from bgl.partition import metrics as M
    from bgl.partition.graph_input import GraphInput

    graph = GraphInput.from_store(hetero_store)
    assert graph.num_train == hetero_store.type_splits["paper"]["train"].size
    b = partition_graph(hetero_store, "bgl", 2, tmp_path / "p", num_batches=6)
    train = np.array([p["num_train"] for p in b.meta["parts"]], float)
    assert train.sum() == graph.num_train and b.metrics["balance_train"] == pytest.approx(train.max() / train.mean())
    part_of = b.owner(np.argsort(np.asarray(b.orig_ids)))  # original id -> its part
    # the engine's candidates are measured on the bare arrays: the same typed draws as on the store
    on_arrays = M.remote_sample_share(None, graph, part_of, 2, num_batches=6)
    assert on_arrays == M.remote_sample_share(hetero_store, graph, part_of, 2, num_batches=6)
    untyped = GraphInput(graph.num_nodes, graph.num_edges, graph.indptr, graph.indices, graph.is_train)
    assert on_arrays != M.remote_sample_share(None, untyped, part_of, 2, num_batches=6)


def test_a_parts_bad_stream_keys_are_refused(book, tmp_path):
    import shutil

    from bgl.errors import StoreFormatError
    from bgl.store import GraphStore

    copy = tmp_path / "part"
    shutil.copytree(book.part_path(0), copy)
    np.save(copy / "key_ids.npy", np.arange(3, dtype=np.int64))
    fan = np.full(len(book.schema.edge_types), 2, np.int64)
    with pytest.raises(StoreFormatError, match="key_ids.npy: expected int64"):
        LocalSampler(GraphStore(copy)).sample_typed_blocks(np.array([0]), [fan])
