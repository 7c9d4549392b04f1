"""A graph server loads each request kind's kernels before it reports ready (sampler/kernel_warmup.py):
checked in a fresh interpreter, where nothing else can have loaded them first."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from bgl.store import write_store

PROBE = r'''
import json, sys
import numpy as np
from bgl.store import GraphStore
from bgl.sampler import _kernels as K, _labor_kernels as L, _weighted_kernels as W
from bgl.sampler.kernel_warmup import load_request_kernels

store = GraphStore(sys.argv[1])
load_request_kernels(store, np.asarray(store.indptr), None)
def sigs(kernel):
    return [" ; ".join(str(t) for t in s) for s in kernel.signatures]
print(json.dumps({"positions": sigs(K.sample_positions_serial), "weighted": sigs(W.sample_weighted_serial),
                  "gather": sigs(K.gather_rows_serial)}))
'''


def test_each_request_kind_is_loaded_for_the_stores_own_dtypes(tmp_path):
    rng = np.random.default_rng(0)
    n, deg = 50, 4
    indptr = np.arange(0, n * deg + 1, deg, dtype=np.int64)
    indices = rng.integers(0, n, n * deg).astype(np.int32)
    neg = rng.random(n * deg).astype(np.float32)
    neg[0] = -1.0  # not usable as weights: skipped, not an error
    store = write_store(tmp_path / "s", indptr, indices, feat=rng.random((n, 8), dtype=np.float32),
                        label=rng.integers(0, 3, n), num_classes=3,
                        edata={"w": rng.random(n * deg) + 0.1, "mask": rng.random(n * deg) < 0.5, "neg": neg,
                               "vec": rng.random((n * deg, 3)).astype(np.float32)})
    done = subprocess.run([sys.executable, "-c", PROBE, str(store.path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert any("readonly array(int64, 1d, C)" in s for s in loaded["positions"]), loaded  # seeds from a frame
    weighted = " ".join(loaded["weighted"])
    assert "readonly array(float64, 1d, C)" in weighted and "readonly array(uint8, 1d, C)" in weighted, loaded
    assert "float32" not in weighted  # "neg" was not taken for weights
    assert any("float32, 2d" in s for s in loaded["gather"]), loaded  # FEATURES rows
