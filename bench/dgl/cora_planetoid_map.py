"""Make (and check) ``data/cora_planetoid.npz``: the embedded Cora in Planetoid's node order, as DGL reads it.

The embedded ``data/cora.npz`` (gnn-benchmark) and the Planetoid files DGL downloads hold the same
graph under different node ids.  This script finds the correspondence once, from the raw Planetoid
files, and writes it; ``bgl.dgl.data.CoraGraphDataset()`` then needs no download
(:mod:`bgl.dgl.data.embedded_cora`).

Nodes are matched by colour refinement (Weisfeiler-Leman) started from each node's feature row
and label-free: rows and neighbourhoods identify 2,693 of 2,708 nodes; the rest are twins (same
row, same neighbours), separated by pinning one pair of a twin class and refining again, which
gives an isomorphism because twins are interchangeable.  The script then checks, array for array,
that ``embedded_cora()`` equals :func:`bgl.dgl.data.citation_layout.read_citation` of the raw files
(edges in DGL's order, features, labels, masks), and exits non-zero otherwise.

    python bench/dgl/cora_planetoid_map.py /work/shared/datasets/planetoid [--write]

One-off tool over a 2,708-node graph: the refinement loops over nodes in Python.
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]


def _neighbours(src: np.ndarray, dst: np.ndarray, n: int) -> list[np.ndarray]:
    order = np.argsort(src, kind="stable")
    bounds = np.searchsorted(src[order], np.arange(n + 1))
    return [dst[order[bounds[i]:bounds[i + 1]]] for i in range(n)]


def _refine(colours: list, nbrs: list[np.ndarray]) -> list:
    while True:
        new = [hash((colours[i], tuple(sorted(colours[j] for j in nbrs[i])))) for i in range(len(colours))]
        if len(set(new)) == len(set(colours)):
            return new
        colours = new


def match(feat_a, edges_a, feat_b, edges_b) -> np.ndarray:
    """``perm`` with node ``i`` of graph a = node ``perm[i]`` of graph b (features + undirected edges)."""
    n = feat_a.shape[0]
    ca = [hash((r > 0).tobytes()) for r in feat_a]
    cb = [hash((r > 0).tobytes()) for r in feat_b]
    na, nb = _neighbours(*edges_a, n), _neighbours(*edges_b, n)
    while True:
        ca, cb = _refine(ca, na), _refine(cb, nb)
        ga, gb = defaultdict(list), defaultdict(list)
        for i, c in enumerate(ca):
            ga[c].append(i)
        for i, c in enumerate(cb):
            gb[c].append(i)
        if sorted(map(len, ga.values())) != sorted(map(len, gb.values())):
            raise SystemExit("the two graphs are not isomorphic")
        twins = [c for c in ga if len(ga[c]) > 1]
        if not twins:
            break
        i, j = ga[twins[0]][0], gb[twins[0]][0]
        ca[i], cb[j] = hash((ca[i], "pinned")), hash((cb[j], "pinned"))
    where = {c: i for i, c in enumerate(cb)}
    return np.array([where[c] for c in ca], np.int64)


def main() -> int:
    sys.path.insert(0, str(REPO))
    from bgl.dgl.data.citation_layout import read_citation
    from bgl.dgl.data.embedded_cora import embedded_cora

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("planetoid_dir", type=Path, help="folder holding ind.cora.* (or ind.cora_v2.*)")
    ap.add_argument("--write", action="store_true", help="write data/cora_planetoid.npz before checking")
    args = ap.parse_args()
    name = "cora" if (args.planetoid_dir / "ind.cora.graph").is_file() else "cora_v2"
    dgl_cora = read_citation(args.planetoid_dir / f"ind.{name}", "cora")
    if args.write:
        with np.load(REPO / "data" / "cora.npz", allow_pickle=False) as z:
            n = int(z["attr_shape"][0])
            attr = np.zeros((n, int(z["attr_shape"][1])), np.float32)
            attr[np.repeat(np.arange(n), np.diff(z["attr_indptr"])), z["attr_indices"]] = z["attr_data"]
            rows = np.repeat(np.arange(n), np.diff(z["adj_indptr"]))
            cols = z["adj_indices"].astype(np.int64)
            labels = z["labels"].astype(np.int64)
        keep = rows != cols
        both = np.unique(np.concatenate([rows[keep] * n + cols[keep], cols[keep] * n + rows[keep]]))
        sym = (both // n, both % n)  # each undirected citation once per direction
        perm = match(attr, sym, dgl_cora.feat, (dgl_cora.src, dgl_cora.dst))
        class_ids = np.zeros(labels.max() + 1, np.int64)
        class_ids[labels] = dgl_cora.label[perm]
        src, dst = perm[sym[0]], perm[sym[1]]
        pairs = np.unique(dst * n + src)
        edge_order = np.searchsorted(pairs, dgl_cora.dst * n + dgl_cora.src)
        out = REPO / "data" / "cora_planetoid.npz"
        np.savez(out, node_ids=perm.astype(np.int16), class_ids=class_ids.astype(np.int8),
                 edge_order=edge_order.astype(np.int16),
                 test_ids=np.flatnonzero(dgl_cora.test_mask).astype(np.int16))
        print(f"wrote {out}")
    ours = embedded_cora()
    ok = True
    for field in ("src", "dst", "feat", "label", "train_mask", "val_mask", "test_mask"):
        same = np.array_equal(getattr(ours, field), getattr(dgl_cora, field))
        ok &= same
        print(f"{field:>10}: {'equal' if same else 'DIFFERENT'}")
    print(f"num_classes: {ours.num_classes} vs {dgl_cora.num_classes}")
    return 0 if ok and ours.num_classes == dgl_cora.num_classes else 1


if __name__ == "__main__":
    raise SystemExit(main())
