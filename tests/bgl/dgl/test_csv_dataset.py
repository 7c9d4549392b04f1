"""``CSVDataset`` from a ``meta.yaml`` and CSV files written here: DGL 2.1's graphs, fields and labels from the same
files (pinned lane), and bgl's reading (or its one-line refusal without pandas) in both lanes."""
from __future__ import annotations

import pytest
import torch

import bgl.dgl as bdgl

META = """dataset_name: toy
edge_data:
- file_name: plays.csv
  etype: [user, plays, game]
- file_name: follows.csv
  etype: [user, follows, user]
node_data:
- file_name: users.csv
  ntype: user
- file_name: games.csv
  ntype: game
graph_data:
  file_name: graphs.csv
"""


def write_csv(root):
    """Two graphs of users and games: node ids out of order, a vector column as strings, float and int fields,
    graph labels and a graph-level float."""
    (root / "meta.yaml").write_text(META)
    (root / "users.csv").write_text("graph_id,node_id,feat,age\n" + "".join(
        f"{g},{i},\"[{i}.5, {g}.0]\",{20 + i}\n" for g in (1, 0) for i in (30, 10, 20, 40)))
    (root / "games.csv").write_text("graph_id,node_id,price\n" + "".join(
        f"{g},{i},{i * 1.5}\n" for g in (0, 1) for i in (7, 3, 5)))
    (root / "plays.csv").write_text("graph_id,src_id,dst_id,hours\n" + "".join(
        f"{g},{u},{v},{h}\n" for g in (0, 1) for u, v, h in ((40, 3, 1.0), (10, 7, 2.5), (30, 5, 0.5), (10, 3, 4.0))))
    (root / "follows.csv").write_text("graph_id,src_id,dst_id\n" + "".join(
        f"{g},{u},{v}\n" for g in (1, 0) for u, v in ((10, 20), (20, 30), (40, 10))))
    (root / "graphs.csv").write_text("graph_id,label,score\n1,1,0.5\n0,0,0.25\n")
    return root


def _state(ds):
    out = []
    for i in range(len(ds)):
        g, data = ds[i]
        out.append((sorted(g.canonical_etypes), {nt: g.num_nodes(nt) for nt in g.ntypes},
                    {c: [t.tolist() for t in g.edges(etype=c)] for c in g.canonical_etypes},
                    {(nt, k): (str(v.dtype), v.tolist()) for nt in g.ntypes for k, v in g.nodes[nt].data.items()},
                    {(c, k): (str(v.dtype), v.tolist()) for c in g.canonical_etypes for k, v in g.edges[c].data.items()},
                    {k: (str(v.dtype), v.tolist()) for k, v in data.items()}))
    return out


@pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")
def test_csv_dataset_matches_dgl(tmp_path):
    dgl = pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")
    pytest.importorskip("pandas", reason="CSVDataset reads CSV files with pandas")
    (tmp_path / "dgl").mkdir(), (tmp_path / "bgl").mkdir()
    theirs = dgl.data.CSVDataset(str(write_csv(tmp_path / "dgl")), verbose=False)
    ours = bdgl.data.CSVDataset(str(write_csv(tmp_path / "bgl")), verbose=False)
    assert len(ours) == len(theirs) == 2 and _state(ours) == _state(theirs)
    sub = ours[torch.tensor([1])]
    assert len(sub) == 1 and sub[0][1]["label"].tolist() == theirs[1][1]["label"].tolist()
    homo = tmp_path / "homo"
    homo.mkdir()
    (homo / "meta.yaml").write_text("dataset_name: h\nnode_data:\n- file_name: n.csv\nedge_data:\n- file_name: e.csv\n")
    (homo / "n.csv").write_text("node_id,label,x\n5,1,0.5\n2,0,1.5\n9,1,2.5\n")
    (homo / "e.csv").write_text("src_id,dst_id,w\n9,2,1\n5,9,2\n2,2,3\n")
    theirs_g, ours_g = dgl.data.CSVDataset(str(homo), verbose=False)[0], bdgl.data.CSVDataset(str(homo))[0]
    assert [t.tolist() for t in ours_g.edges()] == [t.tolist() for t in theirs_g.edges()] == [[2, 1, 0], [0, 2, 0]]
    for ours_d, theirs_d in ((ours_g.ndata, theirs_g.ndata), (ours_g.edata, theirs_g.edata)):
        assert {k: (v.dtype, v.tolist()) for k, v in ours_d.items()} == {k: (v.dtype, v.tolist()) for k, v in theirs_d.items()}
    (tmp_path / "bgl" / "meta.yaml").write_text(META.replace("dataset_name: toy", "dataset_name: toy\nversion: 2.0.0"))
    for lib in (dgl, bdgl):
        with pytest.raises(lib.DGLError, match="Invalid CSVDataset version"):
            lib.data.CSVDataset(str(tmp_path / "bgl"), force_reload=True)


def test_csv_dataset_without_dgl(tmp_path):
    root = write_csv(tmp_path)
    with pytest.raises(bdgl.DGLError, match="cannot be found"):
        bdgl.data.CSVDataset(str(tmp_path / "nowhere"))
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pandas"):
            bdgl.data.CSVDataset(str(root))
        return
    ds = bdgl.data.CSVDataset(str(root))
    g, data = ds[0]  # graph id 1: the graph CSV's order
    assert g.nodes["user"].data["feat"].tolist()[0] == [10.5, 1.0] and g.nodes["user"].data["feat"].dtype == torch.float32
    assert data["label"].tolist() == [1] and g.num_edges(("user", "plays", "game")) == 4
