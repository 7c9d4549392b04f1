"""bench/dgl/sweep.py's harness on a tiny DGL-style example folder written here (no DGL example code): every
module of the folder ported to bgl.dgl's imports, a script that runs reported with its last line, one that
fails with its error, one whose import has no one-line bgl.dgl form reported as such."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from .conftest import load_bench_script

BENCH = Path(__file__).resolve().parents[2] / "bench" / "dgl" / "sweep.py"

MAIN = """import argparse
p = argparse.ArgumentParser(); p.add_argument("--k", type=int, default=1); a = p.parse_args()
import dgl
from helper import score
g = dgl.graph(([0, 1], [1, 2]))
print("Test accuracy", score(g) * a.k)
"""
HELPER = """import dgl.function as fn
def score(g):
    return g.num_edges()
"""


@pytest.fixture(scope="module")
def bench():
    yield from load_bench_script(BENCH, "bench_dgl_sweep")


def test_a_folder_is_ported_and_run_and_failures_are_reported(bench, tmp_path):
    checkout = tmp_path / "dgl"
    (checkout / "examples" / "toy").mkdir(parents=True)
    (checkout / "examples" / "toy" / "main.py").write_text(MAIN)
    (checkout / "examples" / "toy" / "helper.py").write_text(HELPER)
    dest = tmp_path / "run"
    assert bench.port_folder(checkout, "v2.1.0", "examples/toy/main.py", dest) is None
    assert "import bgl.dgl as dgl" in (dest / "main.py").read_text()
    assert "import bgl.dgl.function as fn" in (dest / "helper.py").read_text()
    env = {"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}
    status, _, last = bench.run_one(Path(sys.executable), dest, "examples/toy/main.py", "--k 3", env, 120)
    assert (status, last) == ("ran", "Test accuracy 6")
    status, _, last = bench.run_one(Path(sys.executable), dest, "examples/toy/main.py", "--k x", env, 120)
    assert status == "failed" and "invalid int value" in last
    (checkout / "examples" / "toy" / "helper.py").write_text("import dgl.nn\n")
    why = bench.port_folder(checkout, "v2.1.0", "examples/toy/main.py", tmp_path / "again")
    assert why is not None and why.startswith("helper.py") and "no one-line bgl.dgl form" in why
