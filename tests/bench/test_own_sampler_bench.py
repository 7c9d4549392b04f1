"""bench/dgl/own_sampler.py end to end on a tiny graph (pinned lane: it runs real DGL beside bgl.dgl): one JSON
line per run, both libraries sampling the same graph, and the ratio lines."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("dgl", reason="needs DGL (pinned lane) to compare against")

BENCH = Path(__file__).resolve().parents[2] / "bench" / "dgl" / "own_sampler.py"


def test_the_bench_runs_both_libraries_on_a_tiny_graph():
    out = subprocess.run([sys.executable, str(BENCH), "--nodes", "3000", "--edges", "20000", "--batches", "2",
                          "--repeats", "1", "--graphs", "uniform", "--model"], capture_output=True,
                         text=True, timeout=300, check=True).stdout.strip().splitlines()
    rows = [json.loads(line) for line in out if line.startswith("{")]
    assert [r["lib"] for r in rows] == ["dgl", "bgl"]
    assert rows[0]["edges"] == rows[1]["edges"] == 20000
    assert all(r["block_edges"] > 0 and r["batch_ms"] > 0 and r["peak_rss_mib"] > 0 for r in rows)
    assert all(r["model"] and r["workers"] == 0 and 0 <= r["wait_ms"] <= r["batch_ms"] for r in rows)
    assert out[-1].startswith("uniform, num_workers=0: wait ") and "x DGL" in out[-1]
