"""bench/dgl/examples.py's harness on a tiny DGL-style script written here: its line rewrites, the
import rewrite to bgl.dgl, the metric and epoch-time parse, seeding and the peak-RSS measure.

The script runs in a subprocess of this interpreter: on real DGL where it imports (pinned lane),
else (and in both lanes) with its imports made bgl.dgl's.  No DGL example code is used.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from .conftest import load_bench_script

BENCH = Path(__file__).resolve().parents[2] / "bench" / "dgl" / "examples.py"

TINY_SCRIPT = '''\
import argparse
import time

import dgl

import dgl.function as fn
import torch
from dgl.data import CoraGraphDataset
from somewhere_online import download_graph

parser = argparse.ArgumentParser()
parser.add_argument("--alloc-mib", type=int, default=0)
args = parser.parse_args()
g = download_graph()
g.ndata["h"] = torch.rand(g.num_nodes(), 4)
blob = b"\\x01" * (args.alloc_mib << 20)  # every page written: counted in the peak RSS
for epoch in range(1000):
    g.update_all(fn.copy_u("h", "m"), fn.sum("m", "s"))
    time.sleep(0.3)
    print("Epoch {:05d} | Loss {:.4f}".format(epoch, g.ndata["s"].sum().item()))
print("Test accuracy {:.6f}".format(torch.rand(1).item()))
hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM:")][0]
print("own peak MiB", int(hwm.split()[1]) / 1024.0)
'''


@pytest.fixture(scope="module")
def bench():
    yield from load_bench_script(BENCH, "bench_dgl_examples")


def rewrites(bench):
    return (bench.Rewrite(r"^from somewhere_online import download_graph$", "", "no download"),
            bench.Rewrite(r"^g = download_graph\(\)$", "g = dgl.graph(([0, 1, 2], [1, 2, 0]))", "a local graph"))


def test_rewrites_change_the_named_lines_only(bench):
    text = bench.apply_rewrites(TINY_SCRIPT, rewrites(bench), epochs=3, epoch_loop=r"^(\s*)for epoch in range\(\d+\):")
    changed = bench.changed_lines(TINY_SCRIPT, text)
    assert [old for old, _ in changed] == ["from somewhere_online import download_graph", "g = download_graph()",
                                           "for epoch in range(1000):"]
    assert "for epoch in range(3):" in text
    ported = bench.to_bgl_imports(text)
    assert [new for _, new in bench.changed_lines(text, ported)] == [
        "import bgl.dgl as dgl", "import bgl.dgl.function as fn", "from bgl.dgl.data import CoraGraphDataset"]


def test_a_rewrite_that_no_longer_matches_stops_the_bench(bench):
    with pytest.raises(ValueError, match="matched 0 times"):
        bench.apply_rewrites(TINY_SCRIPT, (bench.Rewrite(r"^import ogb$", "", "gone"),))
    with pytest.raises(ValueError, match="epoch loop"):
        bench.apply_rewrites(TINY_SCRIPT.replace("range(1000)", "range(n)"), (), epochs=2,
                             epoch_loop=r"^(\s*)for epoch in range\(\d+\):")
    with pytest.raises(ValueError, match="no one-line bgl.dgl form"):
        bench.to_bgl_imports("import dgl.nn\n")


def run(bench, tmp_path, stack: str, seed: int, alloc_mib: int = 0):
    text = bench.apply_rewrites(TINY_SCRIPT, rewrites(bench), epochs=3, epoch_loop=r"^(\s*)for epoch in range\(\d+\):")
    if stack == "bgl.dgl":
        text = bench.to_bgl_imports(text)
    folder = tmp_path / stack
    folder.mkdir(exist_ok=True)
    script = folder / "tiny.py"
    script.write_text(text)
    return bench.run_script(sys.executable, script, ["--alloc-mib", alloc_mib], seed, stack,
                            bench.stack_env(tmp_path, stack), r"Test accuracy ([\d.]+)", timeout=300)


@pytest.mark.parametrize("stack", ["dgl", "bgl.dgl"])
def test_a_run_parses_metric_and_epoch_time_seeds_and_measures_peak_rss(bench, tmp_path, stack):
    if stack == "dgl":
        pytest.importorskip("dgl", reason="needs DGL (pinned lane) to run the script as it is")
    small = run(bench, tmp_path, stack, seed=0)
    assert small.rc == 0, small.output_tail
    assert small.output_tail.count("Epoch ") == 3  # the epoch rewrite took
    assert 0.0 <= small.metric < 1.0
    assert 0.25 <= small.epoch_seconds < 5.0  # the script sleeps 0.3 s per epoch
    big = run(bench, tmp_path, stack, seed=0, alloc_mib=400)
    assert big.rc == 0, big.output_tail
    assert big.metric == small.metric  # seeded: unseeded, torch would draw from a random seed
    own = float(re.search(r"own peak MiB ([\d.]+)", big.output_tail).group(1))  # the kernel's VmHWM, read inside
    # the launcher reports that peak: wait4's figure would be a big parent's (this test process's)
    assert own > 400 and abs(big.peak_rss_mib - own) < 0.05 * own


def test_report_puts_each_stack_side_by_side_with_its_ratio_to_dgl(bench, tmp_path):
    def result(metric, seconds, rss, rc=0):
        return bench.RunResult(rc=rc, metric=metric, epoch_seconds=seconds, peak_rss_mib=rss, wall_seconds=1.0,
                               output_tail="boom" if rc else "")

    rows = [{"name": "GCN", "epochs": 5, "script_epochs": 200, "metric_name": "test accuracy",
             "dgl": [result(0.80, 2.0, 100.0), result(0.70, 4.0, 300.0)],
             "bgl.dgl": [result(0.75, 1.0, 150.0), result(None, None, 90.0, rc=1)]}]
    args = type("Args", (), {"stacks": ["dgl", "bgl.dgl"], "rev": "v2.1.0", "seeds": [0, 1]})()
    out = tmp_path / "report.md"
    bench.write_report(out, rows, args, {"GCN": [("import dgl", "import bgl.dgl as dgl")]}, "loaded",
                       {"dgl": 400.0, "bgl.dgl": 560.0})
    text = out.read_text()
    assert "| GCN (test accuracy) | 5 (200) | 0.750 (0.700-0.800) | 0.750 |" in text
    assert "| GCN | 5 (200) | 3.000 (2.000-4.000) | 1.000 | 0.33x |" in text  # failed run left out of the median
    assert "| GCN | 5 (200) | 200.000 (100.000-300.000) | 120.000 (90.000-150.000) | 0.60x |" in text
    assert "dgl 400; bgl.dgl 560" in text and "+import bgl.dgl as dgl" in text
    assert "**GCN** on bgl.dgl (rc 1)" in text and "boom" in text
