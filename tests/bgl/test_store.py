"""Graph store format: round trip, atomic writes, and clear errors for damaged stores."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from bgl.errors import StoreFormatError
from bgl.store import GraphStore, StoreWriter, id_dtype_for, write_store


def _graph(seed=0, n=60, m=300, dim=5, k=3):
    rng = np.random.default_rng(seed)
    dst = np.sort(rng.integers(0, n, m))
    src = rng.integers(0, n, m)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=indptr[1:])
    feat = rng.standard_normal((n, dim)).astype(np.float32)
    label = rng.integers(0, k, n)
    perm = rng.permutation(n)
    splits = {"train": np.sort(perm[:30]), "val": np.sort(perm[30:45]), "test": np.sort(perm[45:])}
    return indptr, src, feat, label, splits


@pytest.fixture
def store_dir(tmp_path):
    indptr, indices, feat, label, splits = _graph()
    write_store(tmp_path / "g", indptr, indices, feat=feat, label=label, splits=splits, num_classes=3, name="g")
    return tmp_path / "g"


def _listing(path):
    return sorted(os.listdir(path))


def test_round_trip_keeps_every_array(tmp_path):
    indptr, indices, feat, label, splits = _graph(seed=3)
    s = write_store(tmp_path / "g", indptr, indices, feat=feat, label=label, splits=splits, num_classes=3)
    again = GraphStore(tmp_path / "g", validate="full")
    for st in (s, again):
        np.testing.assert_array_equal(st.indptr, indptr)
        np.testing.assert_array_equal(st.indices, indices)
        np.testing.assert_array_equal(st.feat, feat)
        np.testing.assert_array_equal(st.label, label)
        for name, ids in splits.items():
            np.testing.assert_array_equal(st.split(name), ids)
        assert st.indices.dtype == id_dtype_for(60) == np.int32
        assert (st.num_nodes, st.num_edges, st.feat_dim, st.num_classes) == (60, 300, 5, 3)
    np.testing.assert_array_equal(again.in_degrees(), np.diff(indptr))
    summ = again.summary()
    assert summ["in_degree_max"] == int(np.diff(indptr).max())
    assert summ["splits"] == {k: len(v) for k, v in splits.items()}
    assert isinstance(again.indices, np.memmap)  # opened lazily, not read into RAM


def test_exception_inside_writer_leaves_nothing(tmp_path):
    out = tmp_path / "g"
    with pytest.raises(RuntimeError, match="boom"):
        with StoreWriter(out, num_nodes=4, num_edges=2) as w:
            w.save_array("indptr", np.array([0, 1, 2, 2, 2]))
            w.create_array("indices", (2,), w.id_dtype)
            raise RuntimeError("boom")
    assert _listing(tmp_path) == []


def test_inconsistent_arrays_are_never_renamed_into_place(tmp_path):
    out = tmp_path / "g"
    with pytest.raises(StoreFormatError, match="indices.npy"):
        with StoreWriter(out, num_nodes=3, num_edges=2) as w:
            w.save_array("indptr", np.array([0, 1, 2, 2]))
            w.save_array("indices", np.array([0, 7]))  # 7 is not a node
    assert _listing(tmp_path) == []


def test_failed_overwrite_keeps_the_old_store(store_dir):
    before = GraphStore(store_dir).indices.copy()
    with pytest.raises(RuntimeError):
        with StoreWriter(store_dir, num_nodes=2, num_edges=0, overwrite=True) as w:
            w.save_array("indptr", np.zeros(3))
            raise RuntimeError("interrupted")
    np.testing.assert_array_equal(GraphStore(store_dir).indices, before)
    assert _listing(store_dir.parent) == ["g"]


def test_overwrite_semantics(store_dir):
    with pytest.raises(FileExistsError, match="overwrite"):
        write_store(store_dir, np.array([0, 0]), np.zeros(0, np.int64))
    assert GraphStore(store_dir).num_nodes == 60  # untouched
    s = write_store(store_dir, np.array([0, 1, 1]), np.array([1]), overwrite=True)
    assert (s.num_nodes, s.num_edges, s.feat) == (2, 1, None)
    assert "feat.npy" not in _listing(store_dir)  # old arrays do not leak into the new store
    assert _listing(store_dir.parent) == ["g"]


def test_a_users_dot_tmp_dir_next_to_the_store_is_left_alone(tmp_path):
    # The writer's work dir is its own hidden, locked one (bgl.output_dir); a user's g.tmp is not it.
    (tmp_path / "g.tmp").mkdir()
    (tmp_path / "g.tmp" / "junk.npy").write_bytes(b"junk")
    write_store(tmp_path / "g", np.array([0, 0]), np.zeros(0, np.int64))
    assert _listing(tmp_path) == ["g", "g.tmp"]
    assert _listing(tmp_path / "g.tmp") == ["junk.npy"]
    assert "junk.npy" not in _listing(tmp_path / "g")


@pytest.mark.parametrize("name", ["indptr", "indices", "feat", "label", "train_idx"])
def test_truncated_array_names_the_file(store_dir, name):
    f = store_dir / f"{name}.npy"
    data = f.read_bytes()
    f.write_bytes(data[: len(data) - 9])
    with pytest.raises(StoreFormatError, match=f"{name}.npy"):
        GraphStore(store_dir)


@pytest.mark.parametrize("name", ["indptr", "indices", "label", "val_idx"])
def test_missing_array_names_the_file(store_dir, name):
    (store_dir / f"{name}.npy").unlink()
    with pytest.raises(StoreFormatError, match=f"{name}.npy: missing"):
        GraphStore(store_dir)


def test_garbage_array_file(store_dir):
    (store_dir / "feat.npy").write_bytes(b"not numpy at all")
    with pytest.raises(StoreFormatError, match="feat.npy"):
        GraphStore(store_dir)


@pytest.mark.parametrize("content, match", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "JSON object"),
    (json.dumps({"format": "something-else", "version": 1}), "not a bgl graph store"),
])
def test_bad_meta_json(store_dir, content, match):
    (store_dir / "meta.json").write_text(content)
    with pytest.raises(StoreFormatError, match=match):
        GraphStore(store_dir)


def test_meta_json_version_and_missing_fields(store_dir):
    meta = json.loads((store_dir / "meta.json").read_text())
    (store_dir / "meta.json").write_text(json.dumps({**meta, "version": 99}))
    with pytest.raises(StoreFormatError, match="version 99"):
        GraphStore(store_dir)
    del meta["num_edges"]
    (store_dir / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(StoreFormatError, match="num_edges"):
        GraphStore(store_dir)


def test_missing_meta_and_missing_dir(store_dir, tmp_path):
    with pytest.raises(StoreFormatError, match="does not exist"):
        GraphStore(tmp_path / "nowhere")
    (store_dir / "meta.json").unlink()
    with pytest.raises(StoreFormatError, match="meta.json: missing"):
        GraphStore(store_dir)


def test_non_monotonic_indptr(store_dir):
    ip = np.load(store_dir / "indptr.npy")
    ip[10], ip[11] = ip[11] + 1, ip[10]
    np.save(store_dir / "indptr.npy", ip)
    with pytest.raises(StoreFormatError, match=r"indptr.npy: not monotonic at node"):
        GraphStore(store_dir)


def test_indptr_must_end_at_num_edges(store_dir):
    ip = np.load(store_dir / "indptr.npy")
    ip[-1] -= 1
    np.save(store_dir / "indptr.npy", ip)
    with pytest.raises(StoreFormatError, match="indptr.npy: must start at 0"):
        GraphStore(store_dir)


@pytest.mark.parametrize("bad", [60, 1000, -1])
def test_out_of_range_index_names_value_and_position(store_dir, bad):
    idx = np.load(store_dir / "indices.npy")
    idx[123] = bad
    np.save(store_dir / "indices.npy", idx)
    with pytest.raises(StoreFormatError, match=rf"indices.npy: node id {bad} at edge 123 outside \[0, 60\)"):
        GraphStore(store_dir)


def test_wrong_dtype_and_shape(store_dir):
    np.save(store_dir / "indptr.npy", np.load(store_dir / "indptr.npy").astype(np.int32))
    with pytest.raises(StoreFormatError, match="indptr.npy: dtype int32"):
        GraphStore(store_dir)


def test_feature_shape_mismatch(store_dir):
    np.save(store_dir / "feat.npy", np.zeros((59, 5), np.float32))
    with pytest.raises(StoreFormatError, match=r"feat.npy: shape \(59, 5\)"):
        GraphStore(store_dir)


def test_split_and_label_ranges(store_dir, tmp_path):
    np.save(store_dir / "test_idx.npy", np.load(store_dir / "test_idx.npy") + 100)
    with pytest.raises(StoreFormatError, match="test_idx.npy: ids outside"):
        GraphStore(store_dir)
    indptr, indices, feat, label, splits = _graph()
    label[5] = 3
    with pytest.raises(StoreFormatError, match="label.npy: labels outside"):
        write_store(tmp_path / "h", indptr, indices, label=label, num_classes=3)
    assert not (tmp_path / "h").exists() and not (tmp_path / "h.tmp").exists()


def test_part_store_holds_global_ids(tmp_path):
    # A part owning ids [100, 103) of a 500-node graph: indices and splits are global.
    s = write_store(tmp_path / "p", np.array([0, 2, 2, 3]), np.array([499, 7, 101]), node_offset=100,
                    global_num_nodes=500, splits={"train": np.array([100, 102])})
    assert (s.node_offset, s.global_num_nodes, s.num_nodes) == (100, 500, 3)
    with pytest.raises(StoreFormatError, match="ids outside owned range"):
        write_store(tmp_path / "q", np.array([0, 0, 0]), np.zeros(0, np.int64), node_offset=100,
                    global_num_nodes=500, splits={"train": np.array([5])})


def test_a_partition_dir_given_as_a_store_names_its_parts(tmp_path):
    from bgl.partition.format import write_partition

    s = write_store(tmp_path / "s", np.array([0, 1, 2]), np.array([1, 0]))
    write_partition(s, np.array([0, 1]), 2, tmp_path / "p", method="random")
    with pytest.raises(StoreFormatError, match=r"is a bgl partition directory, not a graph store.*p/part-0"):
        GraphStore(tmp_path / "p")
