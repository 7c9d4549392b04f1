"""LLVM's library pages leave a process's resident set once its kernels are loaded (sampler/jit_pages.py).

Checked in fresh interpreters: one that loads a kernel, releases (in the caller, or in the background
as a loader's first batch does), then runs kernels again; one with ``BGL_KEEP_JIT_PAGES=1``.  The probes
load a private copy of LLVM's library (``private_llvm``), so no other process shares its pages.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bgl.sampler.jit_pages import llvm_mappings

PROBE = r'''
import json
import sys
import threading
import numpy as np
from bgl.sampler import ops
from bgl.sampler.jit_pages import release_jit_pages, release_jit_pages_soon

def file_kb():
    return int(next(l for l in open("/proc/self/status") if l.startswith("RssFile")).split()[1])

def sample():
    return ops.sample_neighbors(np.array([0, 2], np.int64), np.array([1, 0], np.int32), np.array([0], np.int64),
                                0, 2, False, 0, parallel=False)[1].tolist()
first = sample()
before = file_kb()
if sys.argv[1:] == ["soon"]:
    advised = release_jit_pages_soon()  # True: a release thread started
    workers = [t for t in threading.enumerate() if t.name == "llvm-pages-release"]
    for t in workers:
        t.join()
    again = release_jit_pages_soon()
else:
    advised, workers = release_jit_pages(), []
    again = release_jit_pages()
after = file_kb()
print(json.dumps({"advised": advised, "dropped_kb": before - after, "again": again, "same": sample() == first,
                  "workers": len(workers)}))
'''


@pytest.fixture(scope="module")
def private_llvm(tmp_path_factory) -> str:
    """A directory holding a copy of the llvmlite package, for the probes' PYTHONPATH: MADV_PAGEOUT
    leaves a page that another process maps too, and with another numba process alive (the other worker
    of ``make test``'s lane, a graph server of a concurrent test) the venv's LLVM library is mapped there
    too.  A copy of the file (written and synced: clean pages, distinct from the venv's) is the probe's
    alone, so what it drops is what the release drops."""
    import llvmlite

    site = tmp_path_factory.mktemp("private-llvmlite")
    copy = site / "llvmlite"
    shutil.copytree(Path(llvmlite.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__", "tests"))
    for library in copy.rglob("*.so"):
        with open(library, "rb+") as f:
            os.fsync(f.fileno())
    return str(site)


def _probe(private_llvm: str, *args, **env) -> dict:
    path = os.pathsep.join(p for p in (private_llvm, os.environ.get("PYTHONPATH", "")) if p)
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": path, **env})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_llvm_mappings_are_read_from_a_maps_text():
    text = ("7f00a0000000-7f00a0100000 r--p 00000000 08:01 12 /venv/llvmlite/binding/libllvmlite.so\n"
            "7f00a0100000-7f00a0900000 r-xp 00100000 08:01 12 /venv/llvmlite/binding/libllvmlite.so\n"
            "7f00b0000000-7f00b0001000 rw-p 00000000 00:00 0 \n"
            "7f00c0000000-7f00c0010000 r--p 00000000 08:01 13 /usr/lib/libllvmlite-notes.txt (deleted)\n"
            "7f00d0000000-7f00d0010000 r-xp 00000000 08:01 14 /usr/lib/libtorch.so\n")
    assert llvm_mappings(text) == [(0x7F00A0000000, 0x100000), (0x7F00A0100000, 0x800000)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise(MADV_PAGEOUT) is Linux's")
def test_a_release_drops_llvms_file_pages_and_kernels_still_run(private_llvm):
    seen = _probe(private_llvm)
    if seen["advised"] == 0:
        pytest.skip("MADV_PAGEOUT refused by this kernel (before Linux 5.4)")
    assert seen["dropped_kb"] > 8 * 1024, seen  # ~65 MB here
    assert seen["again"] == 0  # nothing new resident: no second walk
    assert seen["same"]
    kept = _probe(private_llvm, BGL_KEEP_JIT_PAGES="1")
    assert kept["advised"] == 0 and kept["dropped_kb"] < 4 * 1024 and kept["same"], kept


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise(MADV_PAGEOUT) is Linux's")
def test_a_background_release_drops_the_same_pages_in_its_own_thread(private_llvm):
    """What a loader's first batch does (release_jit_pages_soon): the caller only starts a thread."""
    seen = _probe(private_llvm, "soon")
    if seen["dropped_kb"] <= 8 * 1024 and _probe(private_llvm)["advised"] == 0:
        pytest.skip(f"MADV_PAGEOUT refused by this kernel (before Linux 5.4): {seen}")
    assert seen["advised"] is True and seen["workers"] == 1, seen
    assert seen["dropped_kb"] > 8 * 1024, seen
    assert seen["again"] is False, seen  # nothing loaded since: no second thread
    assert seen["same"]  # (BGL_KEEP_JIT_PAGES=1 stops both calls alike: the test above)


WALKS = r'''
import json
import sys
import numpy as np
from bgl.sampler import jit_pages, ops

walks = []
real = jit_pages.llvm_mappings
jit_pages.llvm_mappings = lambda text: walks.append(1) or real(text)

def sample(dtype):
    return ops.sample_neighbors(np.array([0, 2], np.int64), np.array([1, 0], dtype), np.array([0], np.int64),
                                0, 2, False, 0, parallel=False)

seen = {"symbols_before": jit_pages.jit_symbols()}
sample(np.int32)
seen["symbols_loaded"] = jit_pages.jit_symbols()
jit_pages.release_jit_pages()
seen["walks_first"] = len(walks)
features = np.memmap(sys.argv[1], np.uint8, "r")
for part in np.array_split(np.arange(features.shape[0]), 3):
    # later epochs, later loaders: the same kernels, nothing compiled, while memory-mapped
    # feature pages (file-backed, as LLVM's library is) come into the resident set
    int(features[part[0]:part[-1] + 1].sum())
    sample(np.int32)
    jit_pages.release_jit_pages()
seen["walks_same_kernels"] = len(walks)
sample(np.int64)  # a new signature: compiled or loaded from numba's cache
seen["symbols_new"] = jit_pages.jit_symbols()
jit_pages.release_jit_pages()
seen["walks_after_new"] = len(walks)
print(json.dumps(seen))
'''


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise(MADV_PAGEOUT) is Linux's")
def test_pages_are_released_only_after_numba_compiled_or_loaded_a_kernel(tmp_path):
    features = tmp_path / "feat.bin"
    features.write_bytes(np.random.default_rng(0).integers(0, 255, 48 << 20, np.uint8).tobytes())
    done = subprocess.run([sys.executable, "-c", WALKS, str(features)], capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "BGL_KEEP_JIT_PAGES"})
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["symbols_loaded"] > seen["symbols_before"], seen  # the count this rests on moves
    assert seen["walks_first"] == 1, seen
    assert seen["walks_same_kernels"] == 1, seen  # no /proc/self/maps walk per epoch
    assert seen["symbols_new"] > seen["symbols_loaded"], seen
    assert seen["walks_after_new"] == 2, seen
