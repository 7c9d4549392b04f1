"""A typed edge-list directory (``edges/<src>__<rel>__<dst>.*`` + per-type arrays) becomes the typed store of
the DGL heterograph built from the same edges; bad input is named with its file (and line)."""
from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
import torch

import bgl
from bgl.cli import main
from bgl.errors import IngestError

try:
    import dgl
except ImportError:  # the current stack: the reader's own checks run, the comparisons with DGL skip
    dgl = None
needs_dgl = pytest.mark.skipif(dgl is None, reason="compares with a DGL heterograph: needs DGL (the pinned lane)")

COUNTS = {"author": 9, "paper": 20, "venue": 3}


def graph_arrays(seed=0):
    rng = np.random.default_rng(seed)
    edges = {
        ("author", "writes", "paper"): (np.r_[rng.integers(0, 8, 49), 8], rng.integers(0, 20, 50)),
        ("paper", "cites", "paper"): (rng.integers(0, 20, 70), rng.integers(0, 20, 70)),
        ("paper", "in_venue", "venue"): (np.arange(20), rng.integers(0, 3, 20)),
    }
    feat = rng.standard_normal((20, 6)).astype(np.float32)
    venue_feat = rng.standard_normal((3, 2))  # its own width and dtype (float64)
    label = rng.integers(0, 4, 20)
    label[3] = -1
    return edges, feat, venue_feat, label


def write_dir(root, seed=0, declare=True):
    """The layout, one edge file per format: text, gzip csv, and .npy [2, E]."""
    edges, feat, venue_feat, label = graph_arrays(seed)
    (root / "edges").mkdir(parents=True)
    (root / "feat").mkdir()
    (root / "label").mkdir()
    (root / "split" / "paper").mkdir(parents=True)
    if declare:
        (root / "nodes.json").write_text(json.dumps(COUNTS))
    s, d = edges[("author", "writes", "paper")]
    (root / "edges" / "author__writes__paper.txt").write_text(
        "# author paper\n" + "".join(f"{a}\t{b}\n" for a, b in zip(s, d)))
    s, d = edges[("paper", "cites", "paper")]
    with gzip.open(root / "edges" / "paper__cites__paper.csv.gz", "wt") as f:
        f.write("".join(f"{a},{b}\n" for a, b in zip(s, d)))
    np.save(root / "edges" / "paper__in_venue__venue.npy", np.stack(edges[("paper", "in_venue", "venue")]))
    np.save(root / "feat" / "paper.npy", feat)
    np.save(root / "feat" / "venue.npy", venue_feat)
    np.save(root / "label" / "paper.npy", label)
    np.save(root / "split" / "paper" / "train_idx.npy", np.arange(0, 12))
    np.save(root / "split" / "paper" / "val_idx.npy", np.arange(12, 16))
    return root


def dgl_graph(seed=0):
    edges, feat, venue_feat, label = graph_arrays(seed)
    g = dgl.heterograph({k: (torch.from_numpy(s), torch.from_numpy(d)) for k, (s, d) in edges.items()},
                        num_nodes_dict=COUNTS)
    g.nodes["paper"].data["feat"] = torch.from_numpy(feat)
    g.nodes["venue"].data["feat"] = torch.from_numpy(venue_feat)
    g.nodes["paper"].data["label"] = torch.from_numpy(label)
    g.nodes["paper"].data["train_mask"] = torch.arange(20) < 12
    g.nodes["paper"].data["val_mask"] = (torch.arange(20) >= 12) & (torch.arange(20) < 16)
    return g


@needs_dgl
@pytest.mark.parametrize("declare", [True, False])
def test_the_directory_is_the_store_of_the_same_dgl_heterograph(tmp_path, declare, assert_same_typed_store):
    """With nodes.json, or with counts from the feature rows (paper, venue) and the largest id (author 8)."""
    ours = bgl.ingest(write_dir(tmp_path / "in", declare=declare), tmp_path / "ours")
    theirs = bgl.ingest(dgl_graph(), tmp_path / "theirs")
    assert ours.meta.extra["format"] == "typed-edgelist"
    assert ours.schema.ntypes == ["author", "paper", "venue"]
    assert_same_typed_store(ours, theirs)


@needs_dgl
def test_the_store_samples_as_the_heterograph_in_place(tmp_path, assert_fanouts_held, assert_same_batches):
    store = bgl.ingest(write_dir(tmp_path / "in"), tmp_path / "s")
    g = dgl_graph()
    seeds = {"paper": torch.arange(20)}
    fanouts = [{"writes": 2, "cites": 3, "in_venue": 1}, {"writes": -1, "cites": 1, "in_venue": 0}]
    torch.manual_seed(3)
    a = list(bgl.DataLoader(store, seeds, dgl.dataloading.NeighborSampler(fanouts), batch_size=8))
    torch.manual_seed(3)
    b = list(bgl.DataLoader(g, seeds, dgl.dataloading.NeighborSampler(fanouts), batch_size=8))
    assert_same_batches(a, b)
    assert_fanouts_held(store, g, [2, -1], seeds)


def test_the_cli_detects_the_layout_and_adds_reverses(tmp_path, capsys):
    src = write_dir(tmp_path / "in")
    assert main(["ingest", str(src), str(tmp_path / "s"), "--add-reverse", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "edge type    (paper, rev_writes, author): 50" in out and "(paper, cites, paper): 140" in out
    assert "node type    paper: 20  feat 6 (float32)  4 classes  train=12, val=4" in out
    assert "features     none" not in out and "built        5 B per edge stored" in out


def _error(tmp_path, capsys, src):
    capsys.readouterr()
    rc = main(["ingest", str(src), str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err.splitlines()
    assert rc == 1 and len(err) == 1 and not (tmp_path / "out").exists(), err
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no work dir left
    return err[0]


def test_an_id_past_its_types_count_names_the_file_line_value_and_count(tmp_path, capsys):
    src = write_dir(tmp_path / "in")
    f = src / "edges" / "author__writes__paper.txt"
    f.write_text(f.read_text().replace("\n", "\n3 20\n", 3).replace("\n3 20\n", "\n", 2))
    line = next(i for i, t in enumerate(f.read_text().splitlines(), 1) if t == "3 20")
    msg = _error(tmp_path, capsys, src)
    assert f"author__writes__paper.txt:{line}: destination id 20 >= 20, the node count of type 'paper'" in msg


def test_an_npy_id_past_its_type_names_the_file_and_edge(tmp_path, capsys):
    src = write_dir(tmp_path / "in")
    np.save(src / "edges" / "paper__in_venue__venue.npy", np.array([[0, 1, 2], [0, 3, 1]]))
    msg = _error(tmp_path, capsys, src)
    assert "paper__in_venue__venue.npy: edge type ('paper', 'in_venue', 'venue'): destination id 3 at edge 1" in msg
    assert "'venue'" in msg


def test_feature_rows_that_are_not_the_types_count_are_named(tmp_path, capsys):
    src = write_dir(tmp_path / "in")
    np.save(src / "feat" / "venue.npy", np.zeros((4, 2)))
    assert "venue.npy: 4 rows, but node type 'venue' has 3 nodes (nodes.json)" in _error(tmp_path, capsys, src)


def test_unknown_types_and_bad_names_are_named(tmp_path, capsys):
    src = write_dir(tmp_path / "in")
    (src / "edges" / "paper__cites__journal.txt").write_text("0 0\n")
    msg = _error(tmp_path, capsys, src)
    assert "paper__cites__journal.txt: names node type 'journal', which" in msg and "['author', 'paper', 'venue']" in msg
    (src / "edges" / "paper__cites__journal.txt").rename(src / "edges" / "paper_cites_paper.txt")
    assert "named <src type>__<relation>__<dst type>" in _error(tmp_path, capsys, src)


def test_reader_errors_in_python_are_ingest_errors(tmp_path):
    src = write_dir(tmp_path / "in")
    np.save(src / "label" / "paper.npy", np.zeros(20))
    with pytest.raises(IngestError, match="label.*paper.npy: labels must be a 1-D integer array"):
        bgl.ingest(src, tmp_path / "s")
