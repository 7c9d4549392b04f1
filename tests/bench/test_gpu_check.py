"""bench/gpu_check.sh --cpu: the GPU check's dry run must keep working (no GPU needed)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.extended
def test_gpu_check_cpu_dry_run_writes_results(tmp_path):
    env = {**os.environ, "PYTHON": sys.executable, "OUT": str(tmp_path),
           "BGL_GPU_CHECK_FORCE_TREE": "1",  # the no-install route the GPU machine may need
           "DGLBACKEND": "pytorch"}
    proc = subprocess.run(["bash", str(REPO / "bench" / "gpu_check.sh"), "--cpu"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=150)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    text = (tmp_path / "gpu_e2e.md").read_text()
    assert "CPU DRY RUN" in text
    assert "FAILED" not in text, text
    for title in ("## Environment", "## Graph", "## Miss paths", "## Feature cache on CPU",
                  "## End-to-end GraphSAGE training"):
        assert title in text
    # every cache policy produced a hit rate in [0, 1] and a positive throughput
    for policy in ("none", "fifo", "lru", "static-degree", "presample"):
        m = re.search(rf"^\| {policy} \| ([0-9.]+) \| ([0-9.]+) [KMG ]?ids/s", text, re.M)
        assert m, f"no row for {policy}"
        assert 0.0 <= float(m.group(1)) <= 1.0 and float(m.group(2)) > 0
    assert re.search(r"^\| none \| 0\.000 \|", text, re.M)  # no cache, no hits
    m = re.search(r"^\| bgl \(FIFO GPU cache, auto miss path\) \| ([0-9.]+) ", text, re.M)
    assert m and float(m.group(1)) > 0
    assert "ratio ablation/bgl epoch time" in text
    # bgl.DataLoader trained too (its inline pipeline in the dry run), not just the hand-built loop
    assert re.search(r"^\| bgl\.DataLoader \(inline pipeline.*\| ([0-9.]+) \(all", text, re.M), text
    assert "failed" not in text and "unavailable**: `No module named 'bgl" not in text
    assert not (tmp_path / "data").exists()  # the dry run's graph is cleaned up


def test_gpu_e2e_refuses_without_cuda_unless_dry_run(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "gpu" / "e2e.py"), "--out", str(tmp_path)],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--cpu" in proc.stderr
