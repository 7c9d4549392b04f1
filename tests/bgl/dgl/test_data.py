"""``bgl.dgl.data``: DGL's citation datasets from raw Planetoid files, the embedded Cora, graph files.

Pinned lane: DGL 2.1 reads the same generated raw files (placed where it looks before downloading)
and every array must be equal, edge order included.  Current lane: the reading is checked against
bgl's own Planetoid reader (:mod:`bgl.sources.planetoid`, written independently for ``bgl ingest``)
and against the definitions (both directions of every entry, row sums, split sizes).
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

import bgl.dgl as bdgl
from bgl.dgl.data import CiteseerGraphDataset, CoraGraphDataset, PubmedGraphDataset, load_graphs, save_graphs
from bgl.errors import IngestError


def _planetoid_files():
    spec = importlib.util.spec_from_file_location("planetoid_files", Path(__file__).with_name("planetoid_files.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pf = _planetoid_files()
CLASSES = {"cora": CoraGraphDataset, "citeseer": CiteseerGraphDataset, "pubmed": PubmedGraphDataset}


def _write(tmp_path: Path, name: str, seed: int = 0, layout: str = "dgl") -> tuple[Path, dict]:
    """Raw files of a random dataset for ``name`` (CiteSeer with isolated test-range ids); returns
    (the raw_dir to pass, the dataset written).  ``layout``: ``dgl`` (DGL's extracted download),
    ``flat`` (``raw_dir/ind.<name>.*``, Planetoid's own file names)."""
    data = pf.random_dataset(np.random.default_rng(seed), gaps=7 if name == "citeseer" else 0)
    dgl_name, folder = pf.DGL_FOLDERS[name]
    where = tmp_path / folder if layout == "dgl" else tmp_path
    pf.write_planetoid(where, dgl_name if layout == "dgl" else name, **data)
    return tmp_path, data


def _arrays(g) -> dict:
    src, dst = g.edges()
    out = {"src": src, "dst": dst}
    out.update({k: g.ndata[k] for k in ("train_mask", "val_mask", "test_mask", "label", "feat")})
    return out


def _difference(key: str, mine: torch.Tensor, dgls: torch.Tensor) -> str:
    """Where and by how much two arrays differ, for the failure message (a full pinned lane once failed
    on ``feat`` with nothing but the key to go by: one ulp on a few % of rows, see
    :func:`test_row_normalisation_is_the_same_in_every_call`)."""
    if mine.shape != dgls.shape:
        return f"{key}: shape {tuple(mine.shape)} against DGL's {tuple(dgls.shape)}"
    differ = (mine != dgls).nonzero()
    first = tuple(differ[0].tolist())
    gap = (mine.double() - dgls.double()).abs().max().item()
    return (f"{key}: {differ.shape[0]} of {mine.numel()} elements differ, the largest by {gap!r}; first at {first}: "
            f"{mine[first].item()!r} against DGL's {dgls[first].item()!r}")


# ----------------------------------------------------------------- pinned lane: DGL itself
@pytest.mark.parametrize("name, reverse_edge, reorder", [(name, reverse, False) for name in ("cora", "citeseer", "pubmed")
                                                           for reverse in (True, False)]
                         + [("cora", True, True), ("citeseer", False, True)])
def test_same_graph_as_dgl(tmp_path, name, reverse_edge, reorder):
    dgl = pytest.importorskip("dgl", reason="DGL is needed to compare with (pinned lane)")
    raw_dir, _ = _write(tmp_path / "ours", name, seed=3)
    theirs_dir, _ = _write(tmp_path / "theirs", name, seed=3)  # DGL writes its cache beside the files
    ours = CLASSES[name](raw_dir=raw_dir, verbose=False, reverse_edge=reverse_edge, reorder=reorder)
    theirs = getattr(dgl.data, CLASSES[name].__name__)(raw_dir=str(theirs_dir), verbose=False,
                                                     reverse_edge=reverse_edge, reorder=reorder)
    g, h = ours[0], theirs[0]
    assert ours.num_classes == theirs.num_classes and ours.name == theirs.name
    assert g.num_nodes() == h.num_nodes() and g.num_edges() == h.num_edges()
    assert list(g.ndata.keys()) == [k for k in h.ndata.keys()]
    mine, dgls = _arrays(g), _arrays(h)
    for key in mine:
        assert mine[key].dtype == dgls[key].dtype, key
        # bit for bit, edge order included
        assert torch.equal(mine[key], dgls[key]), _difference(key, mine[key], dgls[key])


def test_dgl_reads_the_file_locations_we_read(tmp_path):
    """The DGL folder name (name + URL hash) is DGL's: DGL loads from it without trying to download."""
    dgl = pytest.importorskip("dgl", reason="DGL is needed to compare with (pinned lane)")
    raw_dir, _ = _write(tmp_path, "cora", seed=1)
    dgl.data.CoraGraphDataset(raw_dir=str(raw_dir), verbose=False)  # raises after retries if it downloads
    assert CoraGraphDataset(raw_dir=raw_dir, verbose=False).raw_path.startswith(str(raw_dir))


def test_save_graphs_of_dgl_graph_loads_without_dgl(tmp_path):
    """``from_dgl`` in the pinned lane writes what ``load_graphs`` reads: typed graph, data, labels."""
    dgl = pytest.importorskip("dgl", reason="DGL is needed to write a DGL graph (pinned lane)")
    from bgl.dgl.data import from_dgl

    h = dgl.heterograph({("user", "buys", "item"): (torch.tensor([0, 1, 2, 2]), torch.tensor([1, 0, 3, 1])),
                         ("item", "bought_by", "user"): (torch.tensor([1, 0]), torch.tensor([0, 2]))},
                        num_nodes_dict={"user": 4, "item": 5})
    h.nodes["user"].data["feat"] = torch.randn(4, 3)
    h.nodes["item"].data["label"] = torch.tensor([1, 0, 2, 1, 0])
    h.edges["buys"].data["w"] = torch.rand(4, dtype=torch.float64)
    path = tmp_path / "graphs.npz"
    from_dgl([h, dgl.graph(([0, 1], [1, 2]), num_nodes=4)], path)
    (g, homo), labels = load_graphs(path)[0], load_graphs(path)[1]
    assert labels == {}
    assert g.ntypes == h.ntypes and g.canonical_etypes == h.canonical_etypes
    for c in h.canonical_etypes:
        assert all(torch.equal(a, b) for a, b in zip(g.edges(etype=c), h.edges(etype=c)))
    assert torch.equal(g.nodes["user"].data["feat"], h.nodes["user"].data["feat"])
    assert torch.equal(g.nodes["item"].data["label"], h.nodes["item"].data["label"])
    assert torch.equal(g.edges["buys"].data["w"], h.edges["buys"].data["w"])
    assert homo.num_nodes() == 4 and homo.num_edges() == 2


def test_dgl_binary_file_refused_with_the_way_out(tmp_path):
    dgl = pytest.importorskip("dgl", reason="DGL is needed to write its binary format (pinned lane)")
    path = tmp_path / "g.bin"
    dgl.save_graphs(str(path), [dgl.graph(([0], [1]))])
    with pytest.raises(ValueError, match=r"DGL's own binary format.*from_dgl"):
        load_graphs(path)


# ----------------------------------------------------------------- both lanes
def test_reading_agrees_with_bgl_planetoid_reader(tmp_path):
    """Same files through ``bgl ingest``'s reader: the same edge set (both directions), feature rows
    up to DGL's row normalisation, labels, and the standard split."""
    from bgl.sources.planetoid import read_planetoid

    raw_dir, data = _write(tmp_path, "citeseer", seed=5, layout="flat")
    g = CiteseerGraphDataset(raw_dir=raw_dir, verbose=False)[0]
    src = read_planetoid(raw_dir, name="citeseer")
    s, d = (np.concatenate(x) for x in zip(*src.edges()))
    n = src.num_nodes
    expected = np.unique(np.concatenate([s * n + d, d * n + s]))
    gs, gd = (t.numpy() for t in g.edges())
    assert np.array_equal(np.sort(gs * n + gd), expected)  # each pair once per direction
    feat = g.ndata["feat"].numpy()
    sums = src.feat.astype(np.float64).sum(1, keepdims=True)
    want = np.divide(src.feat, sums, out=np.zeros_like(src.feat), where=sums > 0)
    np.testing.assert_allclose(feat, want, rtol=1e-6, atol=1e-7)
    labelled = src.label >= 0
    assert np.array_equal(g.ndata["label"].numpy()[labelled], src.label[labelled])
    assert not g.ndata["label"].numpy()[~labelled].any()  # DGL: a row without a class is class 0
    for split, mask in (("train", "train_mask"), ("test", "test_mask")):
        assert np.array_equal(np.flatnonzero(g.ndata[mask].numpy()), src.splits[split]), split
    # DGL's 500 validation ids run on past the labelled rows (bgl ingest's reader stops there)
    num_train = src.splits["train"].shape[0]
    assert np.array_equal(np.flatnonzero(g.ndata["val_mask"].numpy()), np.arange(num_train, num_train + 500))


def test_reverse_edge_false_keeps_each_pair_once(tmp_path):
    raw_dir, data = _write(tmp_path, "cora", seed=2)
    both = CoraGraphDataset(raw_dir=raw_dir, verbose=False)[0]
    once = CoraGraphDataset(raw_dir=raw_dir, verbose=False, reverse_edge=False)[0]
    s, d = (t.numpy() for t in once.edges())
    n = both.num_nodes()
    pairs = np.minimum(s, d) * n + np.maximum(s, d)
    assert np.unique(pairs).shape[0] == pairs.shape[0]
    bs, bd = (t.numpy() for t in both.edges())
    assert set(pairs.tolist()) == set((np.minimum(bs, bd) * n + np.maximum(bs, bd)).tolist())


def test_embedded_cora_is_planetoid_cora():
    """Without raw files: the copy in bgl, with Planetoid Cora's published statistics and split."""
    ds = CoraGraphDataset(raw_dir="/nonexistent-bgl-test-dir", verbose=False)
    g = ds[0]
    assert ds.raw_path == "embedded" and ds.name == "cora_v2" and len(ds) == 1
    assert (g.num_nodes(), g.num_edges(), ds.num_classes) == (2708, 10556, 7)
    assert g.ndata["feat"].shape == (2708, 1433) and g.ndata["feat"].dtype == torch.float32
    masks = [g.ndata[m] for m in ("train_mask", "val_mask", "test_mask")]
    assert [int(m.sum()) for m in masks] == [140, 500, 1000]
    assert torch.equal(masks[0].nonzero().flatten(), torch.arange(140))  # Planetoid: 20 per class first
    assert torch.equal(torch.bincount(g.ndata["label"][masks[0]]), torch.full((7,), 20))
    assert torch.equal(masks[2].nonzero().flatten(), torch.arange(1708, 2708))
    s, d = g.edges()
    assert torch.equal(torch.sort(s * 2708 + d).values, torch.sort(d * 2708 + s).values)  # symmetric
    assert not bool((s == d).any())
    rowsum = g.ndata["feat"].double().sum(1)
    assert torch.allclose(rowsum, torch.ones_like(rowsum), atol=1e-5)


def test_embedded_cora_matches_its_raw_files(tmp_path):
    """The embedded Cora written back as raw files reads back to the same arrays (its features are 0/1
    rows scaled by DGL's normalisation, so the raw rows are recoverable)."""
    g = CoraGraphDataset(raw_dir=tmp_path, verbose=False)[0]
    raw_dir = _write_cora_files(tmp_path, g)
    h = CoraGraphDataset(raw_dir=raw_dir, verbose=False)[0]
    assert torch.equal(g.ndata["feat"], h.ndata["feat"]) and torch.equal(g.ndata["label"], h.ndata["label"])
    for m in ("train_mask", "val_mask", "test_mask"):
        assert torch.equal(g.ndata[m], h.ndata[m])
    n = g.num_nodes()
    key = [torch.sort(a * n + b).values for a, b in (g.edges(), h.edges())]
    assert torch.equal(*key)


def _write_cora_files(tmp_path: Path, g) -> Path:
    s, d = (t.numpy() for t in g.edges())
    order = np.lexsort((d, s))
    adjacency = {}
    for u, v in zip(s[order].tolist(), d[order].tolist()):
        adjacency.setdefault(u, []).append(v)
    dgl_name, folder = pf.DGL_FOLDERS["cora"]
    pf.write_planetoid(tmp_path / "raw" / folder, dgl_name, (g.ndata["feat"].numpy() > 0).astype(np.float32),
                       g.ndata["label"].numpy(), 7, adjacency, 140, np.arange(1708, 2708), 1708)
    return tmp_path / "raw"


def test_transform_runs_on_every_access():
    calls = []
    ds = CoraGraphDataset(raw_dir="/nonexistent-bgl-test-dir", verbose=False,
                          transform=lambda g: calls.append(1) or g)
    ds[0], ds[0]
    assert len(calls) == 2


def test_missing_files_refused_with_where_to_put_them(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"does not download.*" + str(tmp_path / "pubmed")):
        PubmedGraphDataset(raw_dir=tmp_path, verbose=False)
    with pytest.raises(FileNotFoundError, match="citeseer"):
        CiteseerGraphDataset(raw_dir=tmp_path, verbose=False)
    with pytest.raises(FileNotFoundError, match="reverse_edge=False"):
        CoraGraphDataset(raw_dir=tmp_path, verbose=False, reverse_edge=False)


def test_bad_arguments_and_files(tmp_path):
    with pytest.raises(IndexError, match="one graph"):
        CoraGraphDataset(raw_dir=tmp_path, verbose=False)[1]
    raw_dir, _ = _write(tmp_path / "bad", "cora")
    folder = raw_dir / pf.DGL_FOLDERS["cora"][1]
    (folder / "ind.cora_v2.test.index").write_text("1\nnot-a-number\n")
    with pytest.raises(IngestError, match="test.index"):
        CoraGraphDataset(raw_dir=raw_dir, verbose=False)


def test_dgl_name_resolves_the_modules():
    assert bdgl.data.CoraGraphDataset is CoraGraphDataset
    assert bdgl.load_graphs is load_graphs and bdgl.save_graphs is save_graphs


def test_graph_files_round_trip(tmp_path):
    g = bdgl.heterograph({("a", "r", "b"): (torch.tensor([0, 1, 1]), torch.tensor([2, 0, 1])),
                          ("b", "s", "a"): (torch.tensor([0]), torch.tensor([1]))},
                         num_nodes_dict={"a": 2, "b": 3})
    g.nodes["a"].data["x"] = torch.randn(2, 4).to(torch.bfloat16)
    g.nodes["b"].data["mask"] = torch.tensor([True, False, True])
    g.edges["r"].data["w"] = torch.arange(3, dtype=torch.int32)
    path = tmp_path / "sub" / "g.npz"
    save_graphs(path, [g, g], {"y": torch.tensor([1, 2])})
    (back,), labels = load_graphs(path, [1])
    assert torch.equal(labels["y"], torch.tensor([1, 2]))
    assert back.canonical_etypes == g.canonical_etypes
    assert torch.equal(back.nodes["a"].data["x"].view(torch.int16), g.nodes["a"].data["x"].view(torch.int16))
    assert back.nodes["a"].data["x"].dtype == torch.bfloat16
    assert torch.equal(back.nodes["b"].data["mask"], g.nodes["b"].data["mask"])
    assert torch.equal(back.edges["r"].data["w"], g.edges["r"].data["w"])
    assert [p.name for p in path.parent.iterdir()] == ["g.npz"]  # no temporary left behind
    with pytest.raises(ValueError, match="index 2"):
        load_graphs(path, [2])


def test_graph_files_refuse_other_files(tmp_path):
    fake = tmp_path / "dgl.bin"
    fake.write_bytes(bytes.fromhex("3fa1b446f04f2edd") + b"\0" * 16)
    with pytest.raises(ValueError, match="DGL's own binary format"):
        load_graphs(fake)
    other = tmp_path / "x.txt"
    other.write_text("hello")
    with pytest.raises(ValueError, match="not a graph file"):
        load_graphs(other)
    with pytest.raises(FileNotFoundError, match="no such graph file"):
        load_graphs(tmp_path / "missing.npz")
    block = bdgl.create_block({("_N", "_E", "_N"): (torch.tensor([0]), torch.tensor([0]))})
    with pytest.raises(ValueError, match="block"):
        save_graphs(tmp_path / "b.npz", [block])


def test_row_normalisation_is_the_same_in_every_call():
    """The row sums' inverse is one computation whatever the heap looks like: ``np.power`` of a strided
    column took NumPy's vector loop in some calls and its scalar one in others (1.26, AVX-512), one ulp
    apart for a few % of rows, which failed DGL's bit-for-bit comparison once in a full pinned lane."""
    from bgl.dgl.data.citation_layout import row_normalised

    rng = np.random.default_rng(3)
    features = (rng.random((600, 9)) * (rng.random((600, 9)) < 0.4)).astype(np.float32)
    results, held = set(), []
    for _ in range(400):
        held.append(np.empty(int(rng.integers(1, 5000)), np.float32))  # a different heap for each call
        held = held[-3:]
        results.add(row_normalised(features).tobytes())
    assert len(results) == 1


def test_register_data_args_and_load_data_as_dgl_examples_call_them(tmp_path, monkeypatch):
    """DGL's older example scripts: ``register_data_args(parser)`` then ``load_data(args)``."""
    import argparse

    import bgl.dgl as dgl

    parser = argparse.ArgumentParser()
    dgl.data.register_data_args(parser)
    args = parser.parse_args(["--dataset", "cora"])
    assert dgl.data.load_data(args).num_classes == 7
    with pytest.raises(ValueError, match="Unknown dataset: nope"):
        dgl.data.load_data(parser.parse_args(["--dataset", "nope"]))
    monkeypatch.setenv("DGL_DOWNLOAD_DIR", str(tmp_path))  # Reddit's raw files are looked for there
    with pytest.raises(FileNotFoundError, match="RedditDataset: .*reddit_self_loop_"):
        dgl.data.load_data(parser.parse_args(["--dataset", "reddit-self-loop"]))
