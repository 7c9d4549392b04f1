"""A graph server loads each request kind's kernels before it reports ready (sampler/kernel_warmup.py):
real requests of every kind, over a real socket, then load no kernel variant the warm-up did not.

Checked in a fresh interpreter, where nothing else can have loaded a variant first.  A variant
differs by the arrays' dtypes and flags (numba compiles one per read-only flag): on CI's cold
cache a request that found its variant missing compiled it past the client's 5 s deadline.
"""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from bgl.sources.hetero import schema_of, write_typed_store
from bgl.store import write_store

from .conftest import with_edge_arrays

PROBE = r'''
import json, os, sys, tempfile, threading, time
import numba
import numpy as np
from bgl.store import GraphStore
from bgl.sampler import _edge_kernels, _kernels, _labor_kernels, _weighted_kernels
from bgl.sampler.temporal import _kernels as _temporal_kernels
from bgl.sampler.typed import _kernels as _typed_kernels
from bgl.sampler.client import SamplingClient
from bgl.sampler.multilayer import Labor
from bgl.sampler.server import GraphServer

KERNELS = [(m.__name__, n, d) for m in (_edge_kernels, _kernels, _labor_kernels, _temporal_kernels, _typed_kernels,
                                            _weighted_kernels)
           for n, d in vars(m).items() if isinstance(d, numba.core.dispatcher.Dispatcher)]

def loaded():
    return {f"{m}.{n}": {str(s) for s in d.signatures} for m, n, d in KERNELS}

class Watched(GraphServer):
    """The server as served, noting every kernel variant a request loads inside ``handle``."""
    late = {}
    def handle(self, frames):
        before = loaded()
        reply = super().handle(frames)
        for name, sigs in loaded().items():
            if sigs - before[name]:
                self.late.setdefault(name, []).extend(sorted(sigs - before[name]))
        return reply

store = GraphStore(sys.argv[1])
time_name = sys.argv[2]  # the edge time array a temporal request names
server = Watched(store, threads=1)
ready = os.path.join(tempfile.mkdtemp(), "ready.json")
thread = threading.Thread(target=server.serve, kwargs={"ready_file": ready}, daemon=True)
thread.start()
while not os.path.exists(ready):  # the warm-up is done
    assert thread.is_alive(), "the server stopped before ready"
    time.sleep(0.05)
client = SamplingClient([server.address], timeout=120.0, local_stores=None)
requests = 0
try:
    seeds = np.arange(store.num_nodes // 2, dtype=np.int64)
    if store.is_typed:
        R = len(store.schema.edge_types)
        client.sample_typed_blocks(seeds, [np.full(R, 2), np.full(R, -1)], seed=1)
        client.sample_typed_blocks(seeds[:3].astype(np.int32), [np.full(R, 3)], replace=True, seed=2)
        client.sample_typed_blocks(seeds, [np.full(R, 2)], seed=3, exclude=np.array([0, 5, 9]))  # link prediction
        client.sample_typed_blocks(seeds, [np.full(R, 2)], seed=6, labor=Labor(seed2=3, mix=0.5))
        for nt in store.schema.node_types:
            client.fetch_type_features(nt.name, np.arange(5))
        requests = 5
        if "w" in store.meta.edata:  # weighted and masked: each relation draws by the weights
            client.sample_typed_blocks(seeds, [np.full(R, 2)], seed=4, prob="w")
            client.sample_typed_blocks(seeds, [np.full(R, 1)], replace=True, seed=5, prob="mask")
            requests += 2
    else:
        client.sample_blocks(seeds, [3, 2], seed=1)
        client.sample_blocks(seeds[1::2].astype(np.int32), [-1], replace=True, seed=2)
        client.sample_blocks(seeds, [2], seed=3, labor=Labor())
        client.sample_blocks(seeds, [2], seed=4, exclude=np.array([0, 5, 9]))
        client.sample_blocks(seeds, [2], seed=5, prob="w", edge_data=("vec",))
        client.sample_blocks(seeds, [2], seed=6, prob="mask")
        client.fetch_features_and_labels(seeds[::3], seeds[1::3].astype(np.int32))
        requests = 8
        if time_name in store.meta.edata:
            client.sample_temporal(seeds, np.full(seeds.shape[0], 50), [3, 2], "uniform", seed=7, time_name=time_name)
            client.sample_temporal(seeds[:5], np.arange(5), [-1], "last", seed=8, time_name=time_name)
            requests += 3  # the two-hop sample is two requests
finally:
    client.close()
    server.stop()
    thread.join(10)
print(json.dumps({"late": Watched.late, "requests": requests}))
'''


def probe(store, time_name: str = "timestamp") -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE, str(store.path), time_name], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("time_name", [pytest.param("timestamp", marks=pytest.mark.extended), "ts"])
def test_no_request_kind_loads_a_kernel_after_ready(tmp_path, time_name):
    """Times under another name than ``timestamp`` (a store's first int64 edge array) are warmed too.

    ``make test`` runs the ``ts`` store only: every request kind is warmed by the same path whatever
    the times are called; ``make test-extended`` adds the store whose times are named ``timestamp``."""
    rng = np.random.default_rng(0)
    n, deg = 50, 4
    indptr = np.arange(0, n * deg + 1, deg, dtype=np.int64)
    indices = rng.integers(0, n, n * deg).astype(np.int32)
    neg = rng.random(n * deg).astype(np.float32)
    neg[0] = -1.0  # not usable as weights: skipped by the warm-up, not an error
    store = write_store(tmp_path / "s", indptr, indices, feat=rng.random((n, 8), dtype=np.float32),
                        label=rng.integers(0, 3, n), num_classes=3,
                        edata={"w": rng.random(n * deg) + 0.1, "mask": rng.random(n * deg) < 0.5, "neg": neg,
                               "vec": rng.random((n * deg, 3)).astype(np.float32),
                               time_name: rng.integers(0, 100, n * deg)})  # rows out of time order
    seen = probe(store, time_name)
    assert seen["requests"] == 11 and seen["late"] == {}, seen


def test_no_typed_request_loads_a_kernel_after_ready(tmp_path):
    rng = np.random.default_rng(1)
    counts = {"paper": 40, "author": 30}
    etypes = [("author", "writes", "paper"), ("paper", "cites", "paper")]
    rel = [(rng.integers(0, counts[s], 120), rng.integers(0, counts[d], 120)) for s, _, d in etypes]
    store = write_typed_store(tmp_path / "h", schema_of(counts, etypes), rel,
                              feats={"paper": rng.standard_normal((40, 4)).astype(np.float32),
                                     "author": rng.standard_normal((30, 2)).astype(np.float16)})
    store = with_edge_arrays(store, tmp_path / "hw", {"w": rng.random(240) + 0.1, "mask": rng.random(240) < 0.5})
    seen = probe(store)
    assert seen["requests"] == 7 and seen["late"] == {}, seen
