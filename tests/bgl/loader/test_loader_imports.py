"""A loader without a feature cache does not import ``bgl.cache``, and the fetch stage's ``lookahead``
check is unchanged by importing it only when needed.

The cache package and its kernels (numba-decorated, and what numba imports for them) were imported by
every loader, cache or not: 20-30 ms of a process's first loader (bench/results/dataloader.md, 17:40
on 12-07).  Each case runs in a fresh interpreter, the only way to see what a first loader imports.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from bgl.loader.stages.map import FetchStage, _valid_lookahead
from bgl.loader.stages.specs import SamplingSpec

SCRIPT = textwrap.dedent("""
    import sys
    import torch
    import bgl
    import bgl.dgl as dgl

    graph = sys.argv[1]
    if graph == "bgl.dgl":
        graph = dgl.rand_graph(300, 3000)
        graph.ndata["feat"] = torch.randn(300, 4)
        graph.ndata["label"] = torch.randint(0, 3, (300,))
    extra = {"cache": "lookahead", "cache_ratio": 0.2} if sys.argv[2] == "cache" else {}
    loader = bgl.DataLoader(graph, torch.arange(100), bgl.NeighborSampler([3, 3]), batch_size=32, shuffle=True,
                            **extra)
    next(iter(loader))
    print("bgl.cache" in sys.modules)
""")


def _imports_cache(graph: str, cache: str) -> bool:
    done = subprocess.run([sys.executable, "-c", SCRIPT, graph, cache], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1] == "True"


@pytest.mark.parametrize("graph", ["store", "bgl.dgl"])
def test_a_loader_without_a_cache_does_not_import_the_cache_package(graph, random_store):
    assert not _imports_cache(str(random_store.path) if graph == "store" else graph, "none")


def test_a_loader_with_a_cache_still_imports_it(random_store):
    """The case above can fail: the same script imports the package once a cache is asked for."""
    assert _imports_cache(str(random_store.path), "cache")


def test_the_fetch_stages_lookahead_check():
    from bgl.cache.lookahead_feeder import CacheSizedWindow

    for good in (0, 3, "auto", CacheSizedWindow()):
        assert _valid_lookahead(good), good
    for bad in (-1, True, False, 1.5, "x", None, [2]):
        assert not _valid_lookahead(bad), bad
        with pytest.raises(ValueError, match="lookahead must be an int >= 0 or 'auto'"):
            FetchStage(source=SamplingSpec("store"), lookahead=bad)
