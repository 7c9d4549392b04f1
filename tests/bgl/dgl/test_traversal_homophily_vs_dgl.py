"""bgl.dgl.graph_utils' traversals, propagation, homophily measures and structural encodings against DGL 2.1 on
the same small graphs (pinned lane): frontiers in DGL's order (BFS / topological by level, DFS and its labels),
prop_* results, the six homophily / informativeness values, SVD encodings up to sign, SEAL labels; DGL's
frontiers as literals where the current lane checks them without DGL."""
from __future__ import annotations

import importlib.util

import pytest
import torch

import bgl.dgl as bdgl
import bgl.dgl.function as bfn

HAS_DGL = importlib.util.find_spec("dgl") is not None
SRC, DST = [0, 0, 1, 2, 3, 4, 4, 1, 0], [1, 2, 2, 3, 1, 0, 5, 3, 3]  # cycle 1 -> 2 -> 3 -> 1
DAG = ([0, 0, 3, 1, 2, 2], [3, 1, 2, 4, 5, 4])  # discovery order differs from id order


def _libs():
    if not HAS_DGL:
        return [(bdgl, bfn)]
    import dgl
    import dgl.function as fn

    return [(bdgl, bfn), (dgl, fn)]


def _lists(frontiers):
    if isinstance(frontiers, tuple) and frontiers and isinstance(frontiers[0], tuple):
        return [_lists(f) for f in frontiers]
    return [(t.tolist(), t.dtype) for t in frontiers]


def test_traversal_frontiers_in_dgls_order():
    out = []
    for lib, _ in _libs():
        g = lib.graph((torch.tensor(SRC), torch.tensor(DST)), num_nodes=7)
        h = lib.graph(DAG, num_nodes=6, idtype=torch.int32)
        out.append([_lists(f) for f in (
            lib.bfs_nodes_generator(h, 0), lib.bfs_nodes_generator(h, [3, 0]), lib.bfs_edges_generator(g, [4, 6]),
            lib.bfs_nodes_generator(g, torch.tensor([0, 4]), reverse=True), lib.topological_nodes_generator(h),
            lib.topological_nodes_generator(h, reverse=True), lib.dfs_edges_generator(g, [0, 4]),
            lib.dfs_edges_generator(h, [3, 3], reverse=True),
            lib.dfs_labeled_edges_generator(g, 0, has_reverse_edge=True, has_nontree_edge=True),
            lib.dfs_labeled_edges_generator(h, [0, 2], has_nontree_edge=True, return_labels=False))])
        with pytest.raises(lib.DGLError):
            lib.topological_nodes_generator(g)
    ours = out[0]
    assert [f[0] for f in ours[0]] == [[0], [3, 1], [2, 4], [5]] and ours[0][0][1] == torch.int32
    assert [f[0] for f in ours[4]] == [[0], [3, 1], [2], [5, 4]]
    assert [f[0] for f in ours[6]] == [[0, 5], [2, 0], [3, 2], [3], [6]]
    assert [f[0] for f in ours[8][1]] == [[0], [0], [0], [2], [1], [1], [2], [1], [2], [2]]
    if HAS_DGL:
        assert out[0] == out[1]


def test_prop_nodes_and_edges_along_frontiers():
    out = []
    for lib, fn in _libs():
        res = []
        for run in ("bfs", "topo", "dfs", "plain"):
            g = lib.graph(DAG, num_nodes=6) if run == "topo" else lib.graph((SRC, DST), num_nodes=7)
            g.ndata["h"] = torch.arange(1.0, g.num_nodes() + 1)
            if run == "bfs":
                lib.prop_nodes_bfs(g, 4, fn.copy_u("h", "m"), fn.sum("m", "h"))
            elif run == "topo":  # h = 1 + the sum over predecessors: the number of paths that end at each node
                lib.prop_nodes_topo(g, fn.copy_u("h", "m"), fn.sum("m", "h"),
                                    apply_node_func=lambda nodes: {"h": nodes.data["h"] + 1})
            elif run == "dfs":
                lib.prop_edges_dfs(g, 0, fn.copy_u("h", "m"), fn.sum("m", "h"), has_reverse_edge=True)
            else:
                g.prop_nodes([[3, 1], [4]], fn.copy_u("h", "m"), fn.max("m", "h"))
                g.prop_edges([[0], [2, 3]], fn.copy_u("h", "m"), fn.sum("m", "h"))
            res.append(g.ndata["h"].tolist())
        out.append(res)
    assert out[0][1] == [1.0, 2.0, 3.0, 2.0, 6.0, 4.0]
    if HAS_DGL:
        assert out[0] == out[1]


def test_homophily_and_label_informativeness():
    gen = torch.Generator().manual_seed(3)
    src, dst = torch.randint(0, 30, (90,), generator=gen), torch.randint(0, 30, (90,), generator=gen)
    y = torch.randint(0, 4, (30,), generator=gen)
    y[29] = 3  # node 29 may have no in-edge: its share counts 0
    names = ["node_homophily", "edge_homophily", "linkx_homophily", "adjusted_homophily",
             "edge_label_informativeness", "node_label_informativeness"]
    out = []
    for lib, _ in _libs():
        g = lib.graph((src, dst), num_nodes=30)
        out.append([getattr(lib, name)(g, y) for name in names])
    assert all(isinstance(v, float) for v in out[0])
    same = (y[src] == y[dst]).float()
    assert out[0][1] == pytest.approx(same.mean().item())
    if HAS_DGL:
        assert out[0] == pytest.approx(out[1], rel=1e-5, abs=1e-6)


def test_svd_pe_and_double_radius_labels():
    out = []
    for lib, _ in _libs():
        g = lib.graph((torch.tensor(SRC), torch.tensor(DST)), num_nodes=7)
        pe = lib.svd_pe(g, 3, random_flip=False)
        padded = lib.svd_pe(g, 9, padding=True, random_flip=False)
        with pytest.raises(ValueError):
            lib.svd_pe(g, 9)
        und = lib.to_bidirected(lib.graph(([0, 1, 2, 3, 0, 5], [1, 2, 3, 4, 4, 6]), num_nodes=8))
        labels = [lib.double_radius_node_labeling(und, s, t) for s, t in ((0, 1), (3, 1), (2, 4))]
        out.append((pe, padded, labels))
    assert out[0][0].shape == (7, 6) and out[0][0].dtype == torch.float32 and out[0][1].shape == (7, 18)
    assert not out[0][1][:, 14:].any()  # n < k: 2 (k - n) zero columns
    assert out[0][2][0].dtype == torch.int64 and out[0][2][0][[0, 1, 6, 7]].tolist() == [1, 1, 0, 0]
    assert bdgl.apply_each({"a": 1, "b": 2}, lambda v, k: v * k, 3) == {"a": 3, "b": 6}
    assert bdgl.apply_each((1, 2), lambda v: -v) == [-1, -2] and bdgl.apply_each(4, lambda v: v + 1) == 5
    if HAS_DGL:
        import dgl

        ours, theirs = out[0][0], out[1][0]  # a singular vector's sign is LAPACK's choice
        sign = torch.where((ours * theirs).sum(0) < 0, -1.0, 1.0)
        assert torch.allclose(ours * sign, theirs, atol=1e-4)
        assert all(torch.equal(a, b) for a, b in zip(out[0][2], out[1][2]))
        assert dgl.apply_each({"a": 1, "b": 2}, lambda v, k: v * k, 3) == {"a": 3, "b": 6}
