"""Shared fixtures: small real and synthetic graph stores, built once per session."""
from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("DGLBACKEND", "pytorch")

from bgl.store import GraphStore, write_store  # noqa: E402
from bgl.loader.pipeline import quiet_numba_threads  # noqa: E402

# numba's OpenMP layer spin-waits next to torch's and slows model training ~8x on a
# 2-core box; choose numba's workqueue layer once, before any test or fixture runs a kernel.
quiet_numba_threads()


def random_csc(num_nodes: int, avg_degree: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A random directed graph as CSC (in-neighbours), no self-loops or duplicates."""
    rng = np.random.default_rng(seed)
    m = int(num_nodes * avg_degree)
    src = rng.integers(0, num_nodes, m)
    dst = rng.integers(0, num_nodes, m)
    keep = src != dst
    key = np.unique(dst[keep].astype(np.int64) * num_nodes + src[keep])
    dst, src = key // num_nodes, key % num_nodes
    indptr = np.zeros(num_nodes + 1, np.int64)
    np.cumsum(np.bincount(dst, minlength=num_nodes), out=indptr[1:])
    return indptr, src


def make_random_store(path, num_nodes=500, avg_degree=8.0, feat_dim=16, num_classes=4,
                      seed=0, train_frac=0.6) -> GraphStore:
    """A synthetic store with features, labels and a train/val/test split."""
    rng = np.random.default_rng(seed)
    indptr, indices = random_csc(num_nodes, avg_degree, seed)
    feat = rng.standard_normal((num_nodes, feat_dim)).astype(np.float32)
    label = rng.integers(0, num_classes, num_nodes)
    perm = rng.permutation(num_nodes)
    a, b = int(train_frac * num_nodes), int((train_frac + (1 - train_frac) / 2) * num_nodes)
    splits = {"train": np.sort(perm[:a]), "val": np.sort(perm[a:b]), "test": np.sort(perm[b:])}
    return write_store(path, indptr, indices, feat=feat, label=label, splits=splits,
                       num_classes=num_classes, name=f"random-{num_nodes}")


@pytest.fixture(scope="session")
def random_store(tmp_path_factory) -> GraphStore:
    """500 nodes, ~8 in-edges each, 16-dim float32 features, 4 classes."""
    return make_random_store(tmp_path_factory.mktemp("stores") / "random")


@pytest.fixture(scope="session")
def cora_store(tmp_path_factory) -> GraphStore:
    """The embedded default dataset (Cora), ingested once per session."""
    from bgl.data import default_dataset_path
    from bgl.sources.datasets import ingest

    return ingest(str(default_dataset_path()), tmp_path_factory.mktemp("stores") / "cora")


@pytest.fixture(scope="session")
def random_store_factory(tmp_path_factory):
    """Call ``factory(num_nodes=..., avg_degree=..., feat_dim=..., num_classes=..., seed=...)``
    to get a fresh synthetic store in its own temp directory."""
    def factory(**kwargs) -> GraphStore:
        return make_random_store(tmp_path_factory.mktemp("stores") / "random", **kwargs)

    return factory


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def free_port():
    """Call it for a TCP port on 127.0.0.1 that is free right now (servers, rendezvous, sshd)."""
    return _free_port
