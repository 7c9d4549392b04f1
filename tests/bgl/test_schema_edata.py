"""Named edge arrays in a graph store (bgl.schema): written, memory-mapped, listed, refused when bad."""
from __future__ import annotations

import json

import numpy as np
import pytest

from bgl.errors import StoreFormatError
from bgl.store import GraphStore, StoreWriter, write_store

INDPTR = np.array([0, 2, 3, 5])
INDICES = np.array([1, 2, 0, 0, 1])


def test_edge_arrays_round_trip_memory_mapped(tmp_path):
    w = np.array([0.5, 1.0, 2.0, 0.0, 3.0], np.float32)
    feat = np.arange(10, dtype=np.float64).reshape(5, 2)
    mask = np.array([True, False, True, True, False])
    write_store(tmp_path / "s", INDPTR, INDICES, edata={"w": w, "feat": feat, "m": mask})
    store = GraphStore(tmp_path / "s")
    assert sorted(store.edata) == ["feat", "m", "w"]
    assert isinstance(store.edge_array("w"), np.memmap)
    assert np.array_equal(store.edge_array("w"), w) and store.edge_array("w").dtype == np.float32
    assert np.array_equal(store.edge_array("feat"), feat)
    assert store.edge_array("m").dtype == np.bool_ and np.array_equal(store.edge_array("m"), mask)
    meta = json.loads((tmp_path / "s" / "meta.json").read_text())
    assert meta["edata"]["feat"] == {"dtype": "float64", "shape": [5, 2]}
    assert meta["version"] == 1  # older bgl ignores edata and reads the rest unchanged
    assert store.summary()["edata"]["w"]["shape"] == [5]


def test_chunked_edge_array_writer(tmp_path):
    with StoreWriter(tmp_path / "s", 3, 5) as wr:
        wr.save_array("indptr", INDPTR)
        wr.save_array("indices", INDICES)
        out = wr.create_edge_array("w", (5,), np.float32)
        out[:3] = 1.5
        out[3:] = 2.5
        out.flush()
        del out
    assert np.array_equal(wr.store.edge_array("w"), [1.5, 1.5, 1.5, 2.5, 2.5])


def test_missing_edge_array_names_what_there_is(tmp_path):
    store = write_store(tmp_path / "s", INDPTR, INDICES, edata={"w": np.ones(5)})
    with pytest.raises(KeyError, match=r"no edge data 'weight'.*\['w'\]"):
        store.edge_array("weight")


@pytest.mark.parametrize("edata, match", [
    ({"w": np.ones(4)}, r"num_edges=5 rows, got shape \(4,\)"),
    ({"../x": np.ones(5)}, "edge data name"),
    ({".hidden": np.ones(5)}, "edge data name"),
    ({"w": np.array(["a"] * 5)}, "bool, integer or float"),
])
def test_bad_edge_arrays_are_refused_and_nothing_is_written(tmp_path, edata, match):
    with pytest.raises(ValueError, match=match):
        write_store(tmp_path / "s", INDPTR, INDICES, edata=edata)
    assert not (tmp_path / "s").exists() and not (tmp_path / "s.tmp").exists()


def test_a_truncated_or_mislisted_edge_array_fails_to_open(tmp_path):
    write_store(tmp_path / "s", INDPTR, INDICES, edata={"w": np.ones(5, np.float32)})
    meta_path = tmp_path / "s" / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["edata"]["w"]["shape"] = [4]
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(StoreFormatError, match="does not start with num_edges=5|num_edges=5 rows"):
        GraphStore(tmp_path / "s")
    meta["edata"] = {"w": {"dtype": "float32", "shape": [5]}, "gone": {"dtype": "float32", "shape": [5]}}
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(StoreFormatError, match="gone.npy: missing"):
        GraphStore(tmp_path / "s")
