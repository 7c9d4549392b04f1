"""Fixtures for sampler tests: part stores cut from a random store, and real `bgl serve` processes."""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from bgl.store import GraphStore, write_store

SERVER_START_TIMEOUT = 120.0  # first start may compile (cached) numba kernels on a loaded machine


def slice_store(store: GraphStore, lo: int, hi: int, path: Path) -> GraphStore:
    """A PART store owning global ids [lo, hi) of ``store`` (same global ids, same CSC order, its
    in-edges' rows of every edge array, its nodes' rows of every node array with the in-edges'
    source values, as ``bgl partition`` writes them)."""
    ip = np.asarray(store.indptr)
    indptr = ip[lo:hi + 1] - ip[lo]
    indices = np.asarray(store.indices[ip[lo]:ip[hi]])
    splits = {k: v[(v >= lo) & (v < hi)] for k, v in store.splits.items()}
    edata = {k: np.asarray(store.edge_array(k)[ip[lo]:ip[hi]]) for k in store.meta.edata} or None
    return write_store(path, indptr, indices, feat=None if store.feat is None else np.asarray(store.feat[lo:hi]),
                       label=None if store.label is None else np.asarray(store.label[lo:hi]), splits=splits,
                       num_classes=store.num_classes, node_offset=lo, global_num_nodes=store.num_nodes,
                       name=f"part-{lo}-{hi}", edata=edata,
                       ndata={k: np.asarray(v[lo:hi]) for k, v in store.ndata.items()},
                       ndata_source={k: store.source_values(k)[ip[lo]:ip[hi]] for k in store.ndata})


def hub_csc(rng, n: int, max_degree: int, hub: int, hub_degree: int) -> tuple[np.ndarray, np.ndarray]:
    """(indptr int64, indices int32) of ``n`` nodes with up to ``max_degree`` random in-edges each and
    ``hub_degree`` for node ``hub`` (what a time order must handle: one long row)."""
    deg = rng.integers(0, max_degree, n)
    deg[hub] = hub_degree
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(deg, out=indptr[1:])
    return indptr, rng.integers(0, n, int(indptr[-1])).astype(np.int32)


def with_edge_arrays(store: GraphStore, path: Path, arrays: dict) -> GraphStore:
    """A copy of ``store`` (typed or not) at ``path`` with edge arrays ``{name: [num_edges, ...]}`` (CSC
    order) added as a store writer lays them out (``edata/<name>.npy``, listed in ``meta.json``): typed
    ingest writes none, and weighted typed sampling needs some."""
    from bgl.schema import edge_spec

    return _with_arrays(store, path, arrays, "edata", lambda n, v: edge_spec(n, v.shape, v.dtype, store.num_edges))


def with_node_arrays(store: GraphStore, path: Path, arrays: dict) -> GraphStore:
    """A copy of ``store`` (typed or not) at ``path`` with node arrays ``{name: [num_nodes, ...]}`` (over
    global ids) added as a store writer lays them out (``ndata/<name>.npy``, listed in ``meta.json``)."""
    from bgl.node_arrays import node_spec

    return _with_arrays(store, path, arrays, "ndata", lambda n, v: node_spec(n, v.shape, v.dtype, store.num_nodes))


def _with_arrays(store: GraphStore, path: Path, arrays: dict, key: str, spec) -> GraphStore:
    import shutil

    shutil.copytree(store.path, path)
    meta = json.loads((path / "meta.json").read_text())
    (path / key).mkdir(exist_ok=True)
    for name, values in arrays.items():
        values = np.ascontiguousarray(values)
        meta.setdefault(key, {})[name] = spec(name, values)
        np.save(path / key / f"{name}.npy", values, allow_pickle=False)
    (path / "meta.json").write_text(json.dumps(meta))
    return GraphStore(path)


@contextlib.contextmanager
def started_servers(arg_lists, workdir: Path):
    """Addresses of real `bgl serve` processes, one per argument list, started together (each start
    loads numba kernels), all killed on exit; ``part_args`` gives a partition's."""
    with ThreadPoolExecutor(len(arg_lists)) as pool:
        futures = [pool.submit(ServerProcess, a, workdir) for a in arg_lists]
    started = [f.result() for f in futures if f.exception() is None]
    try:
        for f in futures:
            if f.exception() is not None:
                raise f.exception()
        yield [s.address for s in started]
    finally:
        for s in started:
            s.kill()


def part_args(book) -> list[list[str]]:
    """`bgl serve` arguments of each part of partition ``book``."""
    return [["--partition", str(book.path), "--part", str(k)] for k in range(book.num_parts)]


@pytest.fixture(scope="session")
def part_slicer():
    """:func:`slice_store`, for tests that cut their own module's store into parts."""
    return slice_store


@pytest.fixture(scope="session")
def partition_dir(random_store, tmp_path_factory) -> Path:
    """A 2-part partition dir (partition.json + part-0/ + part-1/) of ``random_store``, split at 230."""
    out = tmp_path_factory.mktemp("partition")
    bounds = [0, 230, random_store.num_nodes]
    parts = []
    for k in range(2):
        ps = slice_store(random_store, bounds[k], bounds[k + 1], out / f"part-{k}")
        parts.append({"part": k, "store": f"part-{k}", "node_start": bounds[k], "node_end": bounds[k + 1],
                      "num_nodes": ps.num_nodes, "num_edges": ps.num_edges,
                      "num_train": int(ps.splits["train"].size)})
    meta = {"format": "bgl-partition", "version": 1, "method": "range", "params": {}, "num_parts": 2,
            "num_nodes": random_store.num_nodes, "num_edges": random_store.num_edges, "parts": parts,
            "metrics": {}}
    (out / "partition.json").write_text(json.dumps(meta))
    np.save(out / "orig_ids.npy", np.arange(random_store.num_nodes, dtype=np.int64))
    return out


class ServerProcess:
    """A `bgl serve` subprocess; ``address`` once ready."""

    def __init__(self, args: list[str], workdir: Path, token: str = "test-token",
                 bind: str = "tcp://127.0.0.1:*"):
        self.token = token
        self.ready = workdir / f"ready-{time.monotonic_ns()}.json"
        cmd = [sys.executable, "-m", "bgl.cli", "serve", *args, "--bind", bind,
               "--token", token, "--threads", "2", "--ready-file", str(self.ready)]
        env = {**os.environ, "NUMBA_NUM_THREADS": "2"}
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while not self.ready.exists():
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}: {self.proc.stdout.read()}")
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"server not ready within {SERVER_START_TIMEOUT} s")
            time.sleep(0.05)
        self.address = json.loads(self.ready.read_text())["address"]

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        if self.proc.stdout:
            self.proc.stdout.close()


@pytest.fixture
def serve(tmp_path):
    """``serve(*cli_args, bind=ENDPOINT) -> ServerProcess``; every started server is killed at teardown."""
    started: list[ServerProcess] = []

    def start(*args: str, bind: str = "tcp://127.0.0.1:*") -> ServerProcess:
        s = ServerProcess(list(args), tmp_path, bind=bind)
        started.append(s)
        return s

    try:
        yield start
    finally:
        for s in started:
            s.kill()


@pytest.fixture(scope="module")
def module_servers(tmp_path_factory, random_store, partition_dir):
    """Module-wide servers: one for the whole random store and two for its parts."""
    work = tmp_path_factory.mktemp("servers")
    started: list[ServerProcess] = []
    try:
        started.append(ServerProcess(["--store", str(random_store.path)], work))
        for k in range(2):
            started.append(ServerProcess(["--partition", str(partition_dir), "--part", str(k)], work))
        yield {"whole": started[0], "parts": started[1:]}
    finally:
        for s in started:
            s.kill()


@pytest.fixture(scope="session")
def curve_keydir(tmp_path_factory):
    """A key directory (server pair, one allowed client pair) and the client's keys.

    Yields ``{"dir", "server_secret", "clients", "client"}``; ``client`` is a ClientKeys.
    """
    from bgl.sampler import curve_keys as ck

    d = tmp_path_factory.mktemp("curve") / "keys"
    client = ck.new_keypair()
    ck.write_key_dir(d, server=ck.new_keypair(), client=client, allowed=[client.public])
    return {"dir": d, "server_secret": d / ck.SERVER_SECRET, "clients": d / ck.ALLOWED_DIR,
            "client": ck.load_client_keys(d)}


@pytest.fixture(scope="module")
def curve_server(tmp_path_factory, random_store, curve_keydir):
    """A CURVE `bgl serve` of the whole random store admitting only ``curve_keydir``'s client."""
    work = tmp_path_factory.mktemp("curve-server")
    s = ServerProcess(["--store", str(random_store.path), "--curve-secret", str(curve_keydir["server_secret"]),
                       "--curve-clients", str(curve_keydir["clients"])], work)
    try:
        yield s
    finally:
        s.kill()
