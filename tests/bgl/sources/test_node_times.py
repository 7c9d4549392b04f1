"""Node times as a store's node array (``bgl ingest --node-time [NTYPE=]FILE``): read from ``.npy`` or text,
kept as int64 ``ndata/<name>.npy`` over global ids (typed graphs: per-type files in type order), old stores
still open, and every bad input one line naming the file (and line) with no store written."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from bgl.cli import main
from bgl.errors import IngestError
from bgl.sources.datasets import ingest
from bgl.store import GraphStore, write_store

BIG = 2**53 + 1  # a float64 on the way would round it


def edge_file(tmp_path, n=6):
    path = tmp_path / "edges.txt"
    path.write_text("".join(f"{v} {(v + 1) % n}\n" for v in range(n)))
    return path


def test_text_and_npy_node_times_round_trip(tmp_path, capsys):
    times = np.array([5, BIG, -3, 0, 7, 10**17 + 3], np.int64)
    (tmp_path / "t.txt").write_text("# node times\n" + "\n".join(map(str, times[:3])) + "\n\n% c\n"
                                    + "\n".join(map(str, times[3:])))  # no final newline
    np.save(tmp_path / "t.npy", times.astype(np.int64))
    for k, file in enumerate(["t.txt", "t.npy"]):
        assert main(["ingest", str(edge_file(tmp_path)), str(tmp_path / f"s{k}"), "--no-progress",
                     "--node-time", str(tmp_path / file), "--node-time-name", "since"]) == 0
        store = GraphStore(tmp_path / f"s{k}")
        arr = store.node_array("since")
        assert arr.dtype == np.int64 and np.array_equal(arr, times)
        assert store.meta.ndata["since"]["shape"] == [6] and store.summary()["ndata"]["since"]["dtype"] == "int64"
        assert np.array_equal(store.source_values("since"), times[np.asarray(store.indices)])
    with pytest.raises(KeyError, match=r"has no node array 'nope'; it has \['since'\]"):
        store.node_array("nope")
    assert main(["info", str(tmp_path / "s1")]) == 0
    assert "node data    since (int64)" in capsys.readouterr().out


def test_an_old_store_without_node_arrays_still_opens(tmp_path):
    store = write_store(tmp_path / "s", np.array([0, 1, 2]), np.array([1, 0]))
    meta = json.loads((tmp_path / "s" / "meta.json").read_text())
    del meta["ndata"]  # as a bgl from before node arrays wrote it
    (tmp_path / "s" / "meta.json").write_text(json.dumps(meta))
    old = GraphStore(tmp_path / "s")
    assert old.ndata == {} and old.meta.version == 1
    with pytest.raises(KeyError, match="has no node array 'timestamp'; it has none"):
        old.node_array("timestamp")


@pytest.mark.parametrize("content, message", [
    ("1\n2\nx3\n4\n5\n6\n", r"t.txt:3: node time is not an integer.*'x3'"),
    ("1\n2\n3.5\n4\n5\n6\n", r"t.txt:3: node time is not an integer.*'3.5'"),
    ("1\n2\n3\n", r"t.txt: 3 node times, the graph has 6 nodes"),
    ("1\n" * 7, r"t.txt: 7 node times, the graph has 6 nodes"),
    (np.arange(6, dtype=np.float64), r"t.npy: node times must be a 1-D integer array.*float64"),
    (np.arange(12).reshape(6, 2), r"t.npy: node times must be a 1-D integer array.*\(6, 2\)"),
    (np.arange(5), r"t.npy: 5 node times, the graph has 6 nodes"),
    (None, r"missing.txt: node time file does not exist"),
])
def test_bad_node_times_are_one_line_and_write_nothing(tmp_path, capsys, content, message):
    if isinstance(content, str):
        file = tmp_path / "t.txt"
        file.write_text(content)
    elif content is None:
        file = tmp_path / "missing.txt"
    else:
        file = tmp_path / "t.npy"
        np.save(file, content)
    out = tmp_path / "out"
    assert main(["ingest", str(edge_file(tmp_path)), str(out), "--no-progress", "--node-time", str(file)]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("bgl ingest: error:")
    assert re.search(message, err), err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_node_time_forms_that_do_not_fit_are_refused(tmp_path):
    (tmp_path / "t.txt").write_text("1\n" * 6)
    with pytest.raises(IngestError, match="NTYPE=FILE is for a typed graph"):
        ingest(edge_file(tmp_path), tmp_path / "o", node_time=["paper=" + str(tmp_path / "t.txt")])
    with pytest.raises(IngestError, match="takes none"):
        ingest("rmat:4", tmp_path / "o", node_time=str(tmp_path / "t.txt"))
    with pytest.raises(IngestError, match="node_time_name"):
        ingest(edge_file(tmp_path), tmp_path / "o", node_time=str(tmp_path / "t.txt"), node_time_name="a/b")
    assert not (tmp_path / "o").exists()


def typed_dir(root):
    """users 0..3 click items 0..2; items link to items."""
    (root / "edges").mkdir(parents=True)
    (root / "nodes.json").write_text(json.dumps({"item": 3, "user": 4}))
    (root / "edges" / "user__clicks__item.txt").write_text("0 0\n1 0\n2 1\n3 2\n1 2\n")
    (root / "edges" / "item__links__item.txt").write_text("0 1\n1 2\n")
    return root


def test_typed_node_times_one_file_per_type_in_type_order(tmp_path):
    src = typed_dir(tmp_path / "g")
    np.save(tmp_path / "user.npy", np.array([10, 11, BIG, 13]))
    (tmp_path / "item.txt").write_text("20\n21\n22\n")
    assert main(["ingest", str(src), str(tmp_path / "s"), "--no-progress", "--format", "typed-edgelist",
                 "--add-reverse", "--node-time", f"user={tmp_path / 'user.npy'}",
                 "--node-time", f"item={tmp_path / 'item.txt'}"]) == 0
    store = GraphStore(tmp_path / "s")
    assert store.is_typed and store.schema.ntypes == ["item", "user"]
    assert np.array_equal(store.node_array("timestamp"), [20, 21, 22, 10, 11, BIG, 13])  # global ids: items, users


@pytest.mark.parametrize("given, message", [
    ({"user": "user.npy"}, r"every node type needs its times.*missing \['item'\]"),
    ({"user": "user.npy", "item": "item.txt", "shop": "item.txt"}, r"unknown \['shop'\]"),
    ({"user": "user.npy", "item": "short.txt"}, r"short.txt: 2 node times, node type 'item' has 3 nodes"),
    ({None: "user.npy"}, r"user.npy: a typed graph takes node times per node type"),
])
def test_bad_typed_node_times_are_one_line(tmp_path, given, message):
    src = typed_dir(tmp_path / "g")
    np.save(tmp_path / "user.npy", np.arange(4))
    (tmp_path / "item.txt").write_text("1\n2\n3\n")
    (tmp_path / "short.txt").write_text("1\n2\n")
    arg = [str(tmp_path / f) if t is None else f"{t}={tmp_path / f}" for t, f in given.items()]
    with pytest.raises(IngestError, match=message) as info:
        ingest(src, tmp_path / "s", "typed-edgelist", node_time=arg)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "s").exists()
