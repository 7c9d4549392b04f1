"""Seeded synthetic labels and features for graphs that ship none (SNAP, R-MAT, PubMed adj).

Features are ``centroid[label] + noise`` so a model can actually learn the
labels, which keeps a convergence check meaningful on a synthetic graph.
Both are generated in node-range chunks whose random streams depend only on
``(seed, chunk index)``, so the output never depends on memory or chunk size
of the caller and a billion-node feature matrix never sits in RAM.
"""
from __future__ import annotations

import numpy as np

NODE_CHUNK = 1 << 20
NOISE = 1.0


def synthetic_labels(num_nodes: int, num_classes: int, seed: int) -> np.ndarray:
    """int64 [num_nodes], uniform in ``[0, num_classes)``."""
    rng = np.random.default_rng([seed, 0x1ABE1])
    return rng.integers(0, num_classes, num_nodes, dtype=np.int64)


def fill_synthetic_features(out: np.ndarray, label: np.ndarray | None, seed: int,
                            chunk: int = NODE_CHUNK, progress: bool = False) -> None:
    """Fill ``out`` (float32 [num_nodes, dim], e.g. a store memmap) chunk by chunk.

    With ``label`` given, row ``v`` is ``centroid[label[v]] + N(0, NOISE)``;
    unlabelled rows (-1) and the label-free case get pure noise.
    """
    from tqdm import tqdm

    num_nodes, dim = out.shape
    centroids = None
    if label is not None and label.size:
        k = int(np.max(label)) + 1
        centroids = np.random.default_rng([seed, 0xCE7]).standard_normal((max(k, 1), dim)).astype(np.float32)
    starts = range(0, num_nodes, chunk)
    for i, s in enumerate(tqdm(starts, desc="features", unit="chunk", disable=not progress, leave=False)):
        e = min(s + chunk, num_nodes)
        rng = np.random.default_rng([seed, 0xFEA7, i])
        block = rng.standard_normal((e - s, dim), dtype=np.float32)
        block *= NOISE
        if centroids is not None:
            lab = np.asarray(label[s:e])
            has = lab >= 0
            block[has] += centroids[lab[has]]
        out[s:e] = block
