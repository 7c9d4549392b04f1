"""OGB's heterogeneous raw layout (ogbn-mag), on a small fixture written in that exact layout
(``ogb.io.read_csv_heterograph_raw`` / ``read_node_label_hetero`` / ``read_nodesplitidx_split_hetero``)."""
from __future__ import annotations

import gzip

import numpy as np
import pytest
import torch

import bgl
from bgl.errors import IngestError

try:
    import dgl
except ImportError:  # the current stack: the reader's own checks run, the comparisons with DGL skip
    dgl = None
needs_dgl = pytest.mark.skipif(dgl is None, reason="compares with a DGL heterograph: needs DGL (the pinned lane)")

COUNTS = {"author": 9, "field_of_study": 4, "institution": 3, "paper": 20}
TRIPLETS = [("author", "affiliated_with", "institution"), ("author", "writes", "paper"),
            ("paper", "cites", "paper"), ("paper", "has_topic", "field_of_study")]
SPLIT = {"train": np.arange(0, 12), "valid": np.arange(12, 16), "test": np.arange(16, 20)}


def mag_arrays(seed=0):
    rng = np.random.default_rng(seed)
    sizes = {"affiliated_with": 10, "writes": 45, "cites": 60, "has_topic": 30}
    edges = {t: (rng.integers(0, COUNTS[t[0]], sizes[t[1]]), rng.integers(0, COUNTS[t[2]], sizes[t[1]]))
             for t in TRIPLETS}
    feat = rng.standard_normal((20, 5)).astype(np.float32)
    label = rng.integers(0, 3, 20)
    return edges, feat, label


def _gz(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        f.write(text)


def write_ogbn_mag(root, seed=0):
    """ogbn-mag's files: header-ed type tables, headerless data files, all gzip csv."""
    edges, feat, label = mag_arrays(seed)
    raw = root / "raw"
    header = ",".join(COUNTS)
    _gz(raw / "num-node-dict.csv.gz", f"{header}\n" + ",".join(map(str, COUNTS.values())) + "\n")
    _gz(raw / "triplet-type-list.csv.gz", "".join(",".join(t) + "\n" for t in TRIPLETS))
    for t, (s, d) in edges.items():
        rel = raw / "relations" / "___".join(t)
        _gz(rel / "edge.csv.gz", "".join(f"{a},{b}\n" for a, b in zip(s, d)))
        _gz(rel / "num-edge-list.csv.gz", f"{len(s)}\n")
        _gz(rel / "edge_reltype.csv.gz", "".join("0\n" for _ in s))  # read by OGB as edge data; ignored here
    _gz(raw / "node-feat" / "paper" / "node-feat.csv.gz", "".join(",".join(repr(float(v)) for v in row) + "\n"
                                                                  for row in feat))
    _gz(raw / "node-feat" / "paper" / "node_year.csv.gz", "".join("2019\n" for _ in range(20)))
    _gz(raw / "nodetype-has-label.csv.gz", f"{header}\nFalse,False,False,True\n")
    _gz(raw / "node-label" / "paper" / "node-label.csv.gz", "".join(f"{y}\n" for y in label))
    split = root / "split" / "time"
    _gz(split / "nodetype-has-split.csv.gz", f"{header}\nFalse,False,False,True\n")
    for name, ids in SPLIT.items():
        _gz(split / "paper" / f"{name}.csv.gz", "".join(f"{i}\n" for i in ids))
    return root


def mag_dglgraph(seed=0):
    edges, feat, label = mag_arrays(seed)
    g = dgl.heterograph({t: (torch.from_numpy(s), torch.from_numpy(d)) for t, (s, d) in edges.items()},
                        num_nodes_dict=COUNTS)
    g.nodes["paper"].data["feat"] = torch.from_numpy(feat)
    g.nodes["paper"].data["label"] = torch.from_numpy(label)
    for ours, theirs in (("train", "train"), ("val", "valid"), ("test", "test")):
        mask = torch.zeros(20, dtype=torch.bool)
        mask[SPLIT[theirs]] = True
        g.nodes["paper"].data[f"{ours}_mask"] = mask
    return g


@pytest.fixture(scope="module")
def mag_dir(tmp_path_factory):
    return write_ogbn_mag(tmp_path_factory.mktemp("ogbn_mag"))


@needs_dgl
def test_ogbn_mag_layout_is_the_store_of_the_same_heterograph(mag_dir, tmp_path, assert_same_typed_store):
    ours = bgl.ingest(mag_dir, tmp_path / "ours")
    theirs = bgl.ingest(mag_dglgraph(), tmp_path / "theirs")
    assert ours.meta.extra["format"] == "ogb-hetero" and ours.meta.extra["split_name"] == "time"
    assert ours.schema.canonical_etypes == TRIPLETS and ours.schema.ntypes == sorted(COUNTS)
    assert ours.type_feat["paper"].shape == (20, 5) and "author" not in ours.type_feat
    assert_same_typed_store(ours, theirs)


@needs_dgl
def test_ogbn_mag_with_reverses_samples_as_dgls_addreverse_graph(mag_dir, tmp_path, assert_fanouts_held,
                                                                 assert_same_batches, assert_same_typed_store):
    """What DGL's ogbn-mag examples do: ``dgl.AddReverse()(g)``, then sample papers."""
    ours = bgl.ingest(mag_dir, tmp_path / "ours", add_reverse=True)
    rg = dgl.AddReverse()(mag_dglgraph())
    assert_same_typed_store(ours, bgl.ingest(rg, tmp_path / "theirs"))
    seeds = {"paper": torch.from_numpy(SPLIT["train"])}
    assert_same_batches(assert_fanouts_held(ours, rg, [4, 2], seeds), assert_fanouts_held(rg, rg, [4, 2], seeds))


def _copy(mag_dir, tmp_path):
    import shutil

    shutil.copytree(mag_dir, tmp_path / "mag")
    return tmp_path / "mag"


def test_an_id_past_its_types_count_names_file_and_line(mag_dir, tmp_path):
    root = _copy(mag_dir, tmp_path)
    f = root / "raw" / "relations" / "author___writes___paper" / "edge.csv.gz"
    _gz(f, "0,1\n9,2\n")
    with pytest.raises(IngestError, match=r"author___writes___paper/edge.csv.gz:2: source id 9 >= 9, the node count "
                                          r"of type 'author'"):
        bgl.ingest(root, tmp_path / "s")
    assert not (tmp_path / "s").exists()


def test_edge_counts_and_types_are_checked_against_the_metadata(mag_dir, tmp_path):
    root = _copy(mag_dir, tmp_path)
    _gz(root / "raw" / "relations" / "paper___cites___paper" / "num-edge-list.csv.gz", "61\n")
    with pytest.raises(IngestError, match="60 edges, but .*num-edge-list.csv.gz says 61"):
        bgl.ingest(root, tmp_path / "s")
    _gz(root / "raw" / "relations" / "paper___cites___paper" / "num-edge-list.csv.gz", "60\n")
    _gz(root / "raw" / "triplet-type-list.csv.gz", "paper,cites,journal\n")
    with pytest.raises(IngestError, match="node type 'journal' is not in .*num-node-dict"):
        bgl.ingest(root, tmp_path / "s")
    _gz(root / "raw" / "triplet-type-list.csv.gz", "".join(",".join(t) + "\n" for t in TRIPLETS))
    _gz(root / "raw" / "node-feat" / "paper" / "node-feat.csv.gz", "1.0,2.0\n")
    with pytest.raises(IngestError, match="node-feat.csv.gz: feature row count mismatch: 1 rows for 20 nodes"):
        bgl.ingest(root, tmp_path / "s")
    assert not (tmp_path / "s").exists()
