"""QM9 / QM9Edge / QM7b, BitcoinOTC / GDELT / ICEWS18, the fraud graphs, FakeNews and ZINC / CLUSTER / PATTERN
from tiny raw files written here in DGL's layout: DGL 2.1's datasets on the same files (pinned lane), and bgl's
reading of them in both lanes."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest
import torch

import bgl.dgl as bdgl
from bgl.dgl.data.utils import _get_dgl_url


def _folder(root, name, url):
    folder = root / f"{name}_{hashlib.sha1(url.encode()).hexdigest()[:8]}"
    folder.mkdir(parents=True)
    return folder


def write_qm9(root, seed=0):
    rng = np.random.default_rng(seed)
    n = np.array([3, 5, 2])
    r = rng.random((n.sum(), 3)) * 3
    r[np.cumsum(n) - 1] = r[np.cumsum(n) - n] + 0.1  # each molecule's last atom near its first (DGL's graph has it)
    root.mkdir(parents=True)
    np.savez(root / "qm9_eV.npz", N=n, R=r, Z=rng.integers(1, 9, n.sum()),
             mu=rng.random(3), gap=rng.random(3))
    np.savez(root / "qm9_edge.npz", n_node=n, n_edge=np.array([4, 6, 2]), node_attr=rng.random((n.sum(), 11)),
             node_pos=rng.random((n.sum(), 3)), edge_attr=rng.random((12, 4)),
             src=np.array([0, 1, 2, 0, 0, 4, 1, 2, 3, 4, 0, 1]), dst=np.array([1, 0, 0, 2, 4, 0, 2, 1, 4, 3, 1, 0]),
             targets=rng.random((3, 19)))
    return root


def write_qm7b(root, seed=0):
    from scipy import io

    rng = np.random.default_rng(seed)
    x = rng.random((3, 5, 5)) * (rng.random((3, 5, 5)) < 0.5)
    x[:, 4, 4] = 1.0  # every molecule names its last atom
    root.mkdir(parents=True)
    io.savemat(root / "qm7b.mat", {"X": x, "T": rng.random((3, 14))})
    return root


def write_temporal(root, seed=0):
    rng = np.random.default_rng(seed)
    url = "https://snap.stanford.edu/data/soc-sign-bitcoinotc.csv.gz"
    t = 1.3e9 + np.sort(rng.random(20)) * 86400 * 60
    rows = np.stack([rng.integers(3, 12, 20), rng.integers(3, 12, 20), rng.integers(-10, 11, 20), t], 1)
    np.savetxt(_folder(root, "bitcoinotc", url) / "bitcoinotc.csv", rows, delimiter=",", fmt="%.5f")
    for name, step, zipname in (("GDELT", 15, "gdelt"), ("ICEWS18", 24, "icews18")):
        facts = np.stack([rng.integers(0, 9, 16), rng.integers(0, 4, 16), rng.integers(0, 9, 16),
                          rng.integers(2, 6, 16) * step + rng.integers(0, step, 16)], 1)
        facts[:2, 3] = [2 * step, 5 * step]  # steps 2 to 5
        np.savetxt(_folder(root, name, _get_dgl_url(f"dataset/{zipname}.zip")) / "train.txt", facts,
                   delimiter="\t", fmt="%d")
    return root


def write_fraud_fakenews(root, seed=0, n=12):
    from scipy import io, sparse

    rng = np.random.default_rng(seed)
    rel = {r: (rng.random((n, n)) < 0.2) * 1.0 for r in ("net_rsr", "net_rtr", "net_rur")}
    rel["net_rur"][n - 1, 0] = 1.0
    rel = {r: sparse.csc_matrix(a) for r, a in rel.items()}
    io.savemat(_folder(root, "yelp", _get_dgl_url("dataset/FraudYelp.zip")) / "YelpChi.mat",
               {"features": sparse.csc_matrix(rng.random((n, 4)) * (rng.random((n, 4)) < 0.5)),
                "label": rng.integers(0, 2, (1, n)), **rel})
    folder = _folder(root, "politifact", _get_dgl_url("dataset/FakeNewsPOL.zip"))
    gid = np.array([0, 0, 1, 0, 1, 2, 2, 1, 2])  # trees interleaved: each node's id in its tree is its rank
    edges = np.array([[0, 1], [0, 3], [2, 4], [8, 5], [2, 7], [5, 6], [1, 2], [3, 1], [5, 8]])  # [1, 2] across
    np.savetxt(folder / "A.txt", edges, delimiter=",", fmt="%d")
    for key, value in (("node_graph_id", gid), ("graph_labels", np.array([1, 0, 1])), ("train_idx", [0, 2]),
                       ("val_idx", [1]), ("test_idx", [2])):
        np.save(folder / f"{key}.npy", np.asarray(value))
    sparse.save_npz(folder / "new_bert_feature.npz", sparse.csr_matrix(rng.random((9, 3)) * (rng.random((9, 3)) < .5)))
    return root


def _same_item(ours, theirs, same_graph):
    if isinstance(theirs, tuple):
        assert len(ours) == len(theirs)
        same_graph(ours[0], theirs[0])
        assert ours[0].idtype == theirs[0].idtype
        for a, b in zip(ours[1:], theirs[1:]):
            assert a.dtype == b.dtype and torch.equal(a, b)
    else:
        same_graph(ours, theirs)
        assert ours.idtype == theirs.idtype


CASES = [("QM9Dataset", (["mu", "gap"], 1.5), write_qm9), ("QM9EdgeDataset", (), write_qm9),
         ("QM9EdgeDataset", (["mu", "C"],), write_qm9), ("QM7bDataset", (), write_qm7b),
         ("BitcoinOTCDataset", (), write_temporal), ("GDELTDataset", (), write_temporal),
         ("ICEWS18Dataset", (), write_temporal), ("FakeNewsDataset", ("politifact", "bert"), write_fraud_fakenews)]


@pytest.mark.parametrize("cls,args,write", CASES)
def test_dataset_files_match_dgl(tmp_path, monkeypatch, cls, args, write, same_graph):
    dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
    pytest.importorskip("scipy", reason="the .mat files are written and read with SciPy")
    monkeypatch.setattr(dgl.data.QM7bDataset, "download", lambda self: None)  # DGL re-downloads, then checks SHA-1
    theirs = getattr(dgl.data, cls)(*args, raw_dir=str(write(tmp_path / "dgl")))
    ours = getattr(bdgl.data, cls)(*args, raw_dir=str(write(tmp_path / "bgl")))
    assert len(ours) == len(theirs) > 1
    for i in range(len(theirs)):
        _same_item(ours[i], theirs[i], same_graph)
    for key in ("num_tasks", "num_classes", "start_time", "end_time", "train_mask", "test_mask", "feature"):
        if hasattr(theirs, key):
            a, b = getattr(ours, key), getattr(theirs, key)
            assert (torch.equal(a, b) and a.dtype == b.dtype) if isinstance(b, torch.Tensor) else a == b, key


def test_fraud_matches_dgl(tmp_path, graph_state):
    dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
    pytest.importorskip("scipy", reason="the .mat files are written and read with SciPy")
    theirs = dgl.data.FraudYelpDataset(raw_dir=str(write_fraud_fakenews(tmp_path / "dgl")), random_seed=3)
    ours = bdgl.data.FraudYelpDataset(raw_dir=str(write_fraud_fakenews(tmp_path / "bgl")), random_seed=3)
    assert graph_state(ours[0]) == graph_state(theirs[0]) and ours[0].idtype == theirs[0].idtype
    assert ours.num_classes == theirs.num_classes
    with pytest.raises(TypeError):
        len(theirs)  # DGL's len() of a DGLGraph
    with pytest.raises(TypeError):
        len(ours)


def test_benchmarking_gnn_bins_match_dgl(tmp_path, same_graph):
    dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
    graphs = [dgl.rand_graph(4, 7), dgl.rand_graph(3, 2)]
    graphs[0].ndata["feat"] = torch.arange(4)
    labels = {"g_label": torch.tensor([0.5, 1.5])}
    for root in ("dgl", "bgl"):
        dgl.save_graphs(str(_folder(tmp_path / root, "zinc", _get_dgl_url("dataset/ZINC12k.zip")) /
                            "ZincDGL_val.bin"), graphs, labels)
    path = str(next((tmp_path / "bgl").glob("zinc_*")) / "ZincDGL_val.bin")
    with pytest.raises(ValueError, match="save_graphs"):
        bdgl.data.ZINCDataset("val", raw_dir=str(tmp_path / "bgl"))
    bdgl.data.save_graphs(path, *dgl.load_graphs(path))  # the rewrite the error message names
    theirs = dgl.data.ZINCDataset("val", raw_dir=str(tmp_path / "dgl"))
    ours = bdgl.data.ZINCDataset("val", raw_dir=str(tmp_path / "bgl"))
    assert len(ours) == len(theirs) == 2 and ours.num_atom_types == theirs.num_atom_types
    for i in range(2):
        _same_item(ours[i], theirs[i], same_graph)


def test_more_datasets_without_dgl(tmp_path):
    pytest.importorskip("scipy", reason="the .mat files are written and read with SciPy")
    qm9 = bdgl.data.QM9(["mu"], cutoff=10.0, raw_dir=str(write_qm9(tmp_path / "q")))
    g, label = qm9[1]
    assert g.num_edges() == 20 and label.shape == (1,) and g.ndata["R"].dtype == torch.float32  # all pairs
    assert bdgl.data.QM9Edge(raw_dir=str(tmp_path / "q"), verbose=False)[0][1].shape == (1, 19)
    qm7b = bdgl.data.QM7b(raw_dir=str(write_qm7b(tmp_path / "m")))
    x = torch.tensor(__import__("scipy").io.loadmat(str(tmp_path / "m" / "qm7b.mat"))["X"][2])
    assert qm7b[2][0].num_edges() == int((x != 0).sum()) and qm7b[2][1].shape == (14,)
    write_temporal(tmp_path / "t")
    btc = bdgl.data.BitcoinOTC(raw_dir=str(tmp_path / "t"))
    assert btc.is_temporal and btc[0].edata["h"].shape[1] == 1 and int(btc[0].edges()[0].min()) >= 0
    sizes = [btc[i].num_edges() for i in range(len(btc))]
    assert sizes == sorted(sizes) and sizes[-1] < 20  # cumulative; the last step left out, as DGL
    gdelt = bdgl.data.GDELT(raw_dir=str(tmp_path / "t"))
    assert len(gdelt) == 4 and gdelt[3].num_edges() == 16
    with pytest.raises(IndexError):
        gdelt[4]
    assert bdgl.data.ICEWS18(raw_dir=str(tmp_path / "t"))[-1].num_edges() == 16
    write_fraud_fakenews(tmp_path / "f")
    fraud = bdgl.data.FraudYelpDataset(raw_dir=str(tmp_path / "f"), verbose=False)[0]
    assert fraud.ntypes == ["review"] and int(fraud.ndata["train_mask"].sum()) == 8
    news = bdgl.data.FakeNewsDataset("politifact", "bert", raw_dir=str(tmp_path / "f"))
    assert [news[i][0].num_edges() for i in range(3)] == [3, 2, 3] and news.feature.shape == (9, 3)
    assert news[2][0].ndata[bdgl.NID].tolist() == [5, 6, 8] and news[2][0].edges()[0].tolist() == [0, 0, 2]
    with pytest.raises(FileNotFoundError, match="qm9_eV.npz"):
        bdgl.data.QM9(["mu"], raw_dir=str(tmp_path / "none"))


def test_converted_bins_and_refusals_without_dgl(tmp_path):
    from bgl.dgl.data.graph_files import DGL_MAGIC

    folder = _folder(tmp_path, "cluster", _get_dgl_url("dataset/SBM_CLUSTER.zip"))
    g = bdgl.graph(([0, 1], [1, 2]))
    g.ndata["label"] = torch.tensor([0, 5, 1])
    bdgl.data.save_graphs(str(folder / "CLUSTER_test.bin"), [g])
    data = bdgl.data.CLUSTERDataset("test", raw_dir=str(tmp_path))
    assert len(data) == 1 and data.num_classes == 6 and data[0].ndata["label"].tolist() == [0, 5, 1]
    (folder / "CLUSTER_train.bin").write_bytes(DGL_MAGIC + bytes(8))
    with pytest.raises(ValueError, match="DGL's binary format"):
        bdgl.data.CLUSTERDataset(raw_dir=str(tmp_path))
    for name in ("SST", "CoraBinary", "MovieLensDataset", "MNISTSuperPixelDataset"):
        with pytest.raises(NotImplementedError, match=name):
            getattr(bdgl.data, name)
