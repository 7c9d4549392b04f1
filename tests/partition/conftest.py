"""Fixtures for partition tests: graphs with known structure, built once per session."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bgl.store import GraphStore, write_store


REPO = Path(__file__).resolve().parents[2]


def mpi_missing() -> str | None:
    """What the distributed path lacks here (Open MPI, mpi4py, PT-Scotch's library), or None."""
    if not shutil.which("mpirun"):
        return "mpirun (openmpi-bin)"
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return "mpi4py"
    from bgl.partition.ptscotch import library_dir

    return None if library_dir() else "scotch-int64/libptscotchparmetisv3.so (libptscotch-dev)"


@pytest.fixture(scope="session")
def mpi():
    """Install MPI, PT-Scotch and mpi4py through .ci/setup-mpi.sh if needed (``make test``'s venv step
    already ran it); skip, saying why, if impossible.  Tests that need mpi4py take this fixture rather
    than ``importorskip`` at collection, which ran before any install and skipped on a fresh venv."""
    if mpi_missing() is None:
        return
    setup = REPO / ".ci" / "setup-mpi.sh"
    done = subprocess.run(["bash", str(setup), sys.prefix], capture_output=True, text=True, timeout=900)
    if done.returncode != 0 or mpi_missing() is not None:
        pytest.skip(f"{mpi_missing()} is not installed and {setup} could not install it: "
                    f"{(done.stderr or done.stdout).strip()[-500:]}")


def csc_from_edges(num_nodes: int, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSC (in-neighbours) of a directed edge list, deduplicated, without self-loops."""
    keep = src != dst
    key = np.unique(dst[keep].astype(np.int64) * num_nodes + src[keep])
    d, s = key // num_nodes, key % num_nodes
    indptr = np.zeros(num_nodes + 1, np.int64)
    np.cumsum(np.bincount(d, minlength=num_nodes), out=indptr[1:])
    return indptr, s


def planted_store(path, *, communities=8, size=150, deg_in=8.0, deg_out=0.4, isolated=30,
                  train_frac=0.5, seed=0) -> GraphStore:
    """Planted-partition graph: ``communities`` dense groups of ``size`` nodes, few edges
    between them (both directions stored), plus ``isolated`` nodes with no edges.  Node
    ids are shuffled so the communities are not contiguous ranges."""
    rng = np.random.default_rng(seed)
    n_c = communities * size
    n = n_c + isolated
    comm = np.repeat(np.arange(communities), size)
    m_in = int(n_c * deg_in / 2)
    a = rng.integers(0, n_c, m_in)
    b = comm[a] * size + rng.integers(0, size, m_in)
    m_out = int(n_c * deg_out / 2)
    c, d = rng.integers(0, n_c, m_out), rng.integers(0, n_c, m_out)
    src = np.concatenate([a, b, c, d])
    dst = np.concatenate([b, a, d, c])
    perm = rng.permutation(n)  # hide the community layout
    indptr, indices = csc_from_edges(n, perm[src], perm[dst])
    label = np.full(n, -1, np.int64)
    label[perm[:n_c]] = comm
    feat = rng.standard_normal((n, 6)).astype(np.float32)
    order = rng.permutation(n)
    t = int(train_frac * n)
    v = t + (n - t) // 2
    splits = {"train": np.sort(order[:t]), "val": np.sort(order[t:v]), "test": np.sort(order[v:])}
    return write_store(path, indptr, indices, feat=feat, label=label, splits=splits,
                       num_classes=communities, name="planted")


@pytest.fixture(scope="session")
def planted(tmp_path_factory) -> GraphStore:
    """1,200 community nodes in 8 planted communities + 30 isolated nodes."""
    return planted_store(tmp_path_factory.mktemp("pstores") / "planted")


@pytest.fixture(scope="session")
def fragmented(tmp_path_factory) -> GraphStore:
    """Many small components: 60 communities of 5 nodes, no edges between, 40 isolated."""
    return planted_store(tmp_path_factory.mktemp("pstores") / "fragmented", communities=60, size=5,
                         deg_in=3.0, deg_out=0.0, isolated=40, seed=3)


@pytest.fixture(scope="session")
def no_train(tmp_path_factory) -> GraphStore:
    """A store without a train split (only val/test)."""
    rng = np.random.default_rng(5)
    n = 300
    indptr, indices = csc_from_edges(n, rng.integers(0, n, 1500), rng.integers(0, n, 1500))
    ids = rng.permutation(n)
    return write_store(tmp_path_factory.mktemp("pstores") / "notrain", indptr, indices,
                       splits={"val": np.sort(ids[:100]), "test": np.sort(ids[100:200])}, name="notrain")


@pytest.fixture(scope="session")
def rmat_stores(tmp_path_factory) -> dict[int, GraphStore]:
    """Small power-law graphs: R-MAT scale 10 and 11 (edge factor 8, symmetrised, 60/20/20 split)."""
    from bgl.sources.rmat import generate_rmat_store

    root = tmp_path_factory.mktemp("pstores")
    return {s: generate_rmat_store(root / f"rmat{s}", s, edge_factor=8, seed=0) for s in (10, 11)}
