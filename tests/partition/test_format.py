"""Partition directories: every node and edge exactly once, contiguous ids, atomic writes, validation."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from bgl.errors import PartitionFormatError
from bgl.partition import format as pformat
from bgl.partition import open_partition, partition_graph


def edge_keys(indptr, indices, n, row_ids=None):
    """Sorted int64 keys dst * n + src of a CSC (rows ``row_ids`` or 0..)."""
    indptr = np.asarray(indptr)
    rows = np.arange(indptr.size - 1) if row_ids is None else np.asarray(row_ids)
    dst = np.repeat(rows, np.diff(indptr))
    return np.sort(dst.astype(np.int64) * n + np.asarray(indices, dtype=np.int64))


def check_partition_covers(book, store):
    """Every node once, contiguous ranges, every edge/feature/label/split mapped back exactly."""
    n = store.num_nodes
    orig = np.asarray(book.orig_ids)
    assert np.array_equal(np.sort(orig), np.arange(n)), "orig_ids is not a permutation"
    assert book.bounds[0] == 0 and book.bounds[-1] == n and np.all(np.diff(book.bounds) >= 0)
    keys = []
    for k in range(book.num_parts):
        part = book.part_store(k)
        s, e = int(book.bounds[k]), int(book.bounds[k + 1])
        assert (part.node_offset, part.num_nodes, part.global_num_nodes) == (s, e - s, n)
        # new ids -> original ids on both ends of each edge
        dst_orig = orig[s:e]
        src_orig = orig[np.asarray(part.indices, dtype=np.int64)]
        keys.append(np.repeat(dst_orig, np.diff(np.asarray(part.indptr))) * n + src_orig)
        assert np.array_equal(np.asarray(part.feat), np.asarray(store.feat)[orig[s:e]])
        assert np.array_equal(np.asarray(part.label), np.asarray(store.label)[orig[s:e]])
        assert np.all(book.owner(np.arange(s, e)) == k)
    got = np.sort(np.concatenate(keys))
    assert np.array_equal(got, edge_keys(store.indptr, store.indices, n)), "edge multiset differs"
    for name in store.splits:
        assert np.array_equal(np.sort(orig[book.split(name)]), np.sort(np.asarray(store.splits[name])))
    assert sum(p["num_train"] for p in book.meta["parts"]) == store.train_idx.size
    assert sum(p["num_edges"] for p in book.meta["parts"]) == store.num_edges


@pytest.mark.parametrize("method", ["random", "metis", "kaminpar", "bgl"])
@pytest.mark.parametrize("parts", [2, 4])
def test_partition_covers_every_node_and_edge_once(planted, tmp_path, method, parts):
    book = partition_graph(planted, method, parts, tmp_path / "p", num_batches=8)
    check_partition_covers(book, planted)
    meta = json.loads((tmp_path / "p" / "partition.json").read_text())
    assert meta["format"] == "bgl-partition" and meta["version"] == 1 and meta["method"] == method
    assert set(meta["metrics"]) >= {"edge_cut", "remote_sample_share", "balance_nodes", "balance_edges",
                                    "balance_train", "seconds", "peak_rss_bytes"}
    # new ids follow (part, original id) order
    orig = np.asarray(book.orig_ids)
    for k in range(parts):
        assert np.all(np.diff(orig[book.bounds[k]:book.bounds[k + 1]]) > 0)


def test_owner_rejects_out_of_range(planted, tmp_path):
    book = partition_graph(planted, "random", 3, tmp_path / "p", measure_samples=False)
    with pytest.raises(ValueError, match=str(planted.num_nodes)):
        book.owner([0, planted.num_nodes])
    assert book.owner(np.array([[0, planted.num_nodes - 1]])).shape == (1, 2)


def test_existing_output_refused_unless_overwrite(planted, tmp_path):
    out = tmp_path / "p"
    partition_graph(planted, "random", 2, out, measure_samples=False)
    with pytest.raises(FileExistsError, match="already exists"):
        partition_graph(planted, "random", 3, out, measure_samples=False)
    assert open_partition(out).num_parts == 2
    book = partition_graph(planted, "random", 3, out, overwrite=True, measure_samples=False)
    assert book.num_parts == 3 and open_partition(out).num_parts == 3
    assert not (tmp_path / "p.old").exists() and not (tmp_path / "p.tmp").exists()


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
def test_interrupted_write_leaves_no_output(planted, tmp_path, monkeypatch, exc):
    def crash(k):
        if k == 1:
            raise exc("simulated crash after part 1")

    monkeypatch.setattr(pformat, "_part_written_hook", crash)
    with pytest.raises(exc):
        partition_graph(planted, "bgl", 3, tmp_path / "p", measure_samples=False)
    assert list(tmp_path.iterdir()) == []


def test_interrupted_overwrite_keeps_old_partition(planted, tmp_path, monkeypatch):
    out = tmp_path / "p"
    partition_graph(planted, "random", 2, out, measure_samples=False)
    monkeypatch.setattr(pformat, "_part_written_hook", lambda k: (_ for _ in ()).throw(RuntimeError("boom")))
    with pytest.raises(RuntimeError):
        partition_graph(planted, "random", 4, out, overwrite=True, measure_samples=False)
    assert open_partition(out).num_parts == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p"]


@pytest.fixture
def good_partition(planted, tmp_path):
    out = tmp_path / "good"
    partition_graph(planted, "random", 2, out, measure_samples=False)
    return out


def _edit_meta(path, fn):
    meta = json.loads((path / "partition.json").read_text())
    fn(meta)
    (path / "partition.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("breakage, message", [
    (lambda p: (p / "partition.json").unlink(), "partition.json: missing"),
    (lambda p: (p / "partition.json").write_text("{not json"), "not valid JSON"),
    (lambda p: _edit_meta(p, lambda m: m.update(format="other")), "format='other'"),
    (lambda p: _edit_meta(p, lambda m: m.update(version=99)), "version 99"),
    (lambda p: _edit_meta(p, lambda m: m.pop("parts")), "lacks ['parts']"),
    (lambda p: _edit_meta(p, lambda m: m["parts"][1].update(node_start=5)), "not contiguous"),
    (lambda p: _edit_meta(p, lambda m: m.update(num_nodes=7)), "num_nodes is 7"),
    (lambda p: (p / "orig_ids.npy").unlink(), "orig_ids.npy: missing"),
    (lambda p: np.save(p / "orig_ids.npy", np.arange(3)), "orig_ids.npy: expected int64"),
    (lambda p: shutil.rmtree(p / "part-1"), "part store 1 missing"),
    (lambda p: np.save(p / "orig_eids.npy", np.arange(3)), "orig_eids.npy: expected int64"),
    (lambda p: (p / "orig_eids.npy").write_bytes(b"\x93NUMPY"), "orig_eids.npy: unreadable"),
])
def test_open_partition_names_the_problem(good_partition, breakage, message):
    breakage(good_partition)
    with pytest.raises(PartitionFormatError) as err:
        open_partition(good_partition)
    assert message in str(err.value)


def test_part_store_mismatch_detected(good_partition):
    _edit_meta(good_partition, lambda m: (m["parts"][0].update(node_end=m["parts"][0]["node_end"] - 1),
                                          m["parts"][1].update(node_start=m["parts"][1]["node_start"] - 1)))
    book = open_partition(good_partition)
    with pytest.raises(PartitionFormatError, match="partition.json says"):
        book.part_store(0)


def test_missing_dir(tmp_path):
    with pytest.raises(PartitionFormatError, match="does not exist"):
        open_partition(tmp_path / "nope")


def test_orig_eids_map_every_new_edge_to_its_source_edge(planted, good_partition):
    """A partition's edge e (part after part, CSC order) is the source store's edge orig_eids[e]."""
    book = open_partition(good_partition)
    src_ptr, src_idx = np.asarray(planted.indptr), np.asarray(planted.indices)
    orig_src_of = src_idx
    orig_dst_of = np.repeat(np.arange(planted.num_nodes), np.diff(src_ptr))
    orig = np.asarray(book.orig_ids)
    for k in range(book.num_parts):
        part = book.part_store(k)
        ptr = np.asarray(part.indptr)
        new_dst = np.repeat(np.arange(part.num_nodes), np.diff(ptr)) + part.node_offset
        e = np.asarray(book.orig_eids)[book.edge_bounds[k]:book.edge_bounds[k + 1]]
        assert np.array_equal(orig[np.asarray(part.indices)], orig_src_of[e])
        assert np.array_equal(orig[new_dst], orig_dst_of[e])
    assert np.array_equal(np.sort(np.asarray(book.orig_eids)), np.arange(planted.num_edges))
    (good_partition / "orig_eids.npy").unlink()  # a partition written before the file existed
    assert open_partition(good_partition).orig_eids is None
