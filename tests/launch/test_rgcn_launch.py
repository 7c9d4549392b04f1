"""examples/train_rgcn.py under ``bgl launch``: a typed 2-part partition, 2 graph servers, 2 DDP trainers."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from bgl.partition import partition_graph

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "train_rgcn.py"


def test_rgcn_example_trains_on_a_typed_partition_under_launch(hetero_store, tmp_path, free_port_base, orphans):
    book = partition_graph(hetero_store, "random", 2, tmp_path / "parts", measure_samples=False)
    (tmp_path / "hosts").write_text("127.0.0.1\n")
    base = free_port_base(3)
    done = subprocess.run(
        [sys.executable, "-m", "bgl", "launch", "--backend", "local", "--hosts", str(tmp_path / "hosts"),
         "--partition", str(book.path), "--num-trainers", "2", "--num-servers-per-host", "2",
         "--port-base", str(base), "--master-port", str(base + 2), "--workdir", str(tmp_path), "--",
         sys.executable, str(EXAMPLE), "--graph", str(book.path), "--epochs", "2", "--batch-size", "32"],
        capture_output=True, text=True, timeout=240, cwd=tmp_path, env={**os.environ, "DGLBACKEND": "pytorch"})
    log = f"exit {done.returncode}\n--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-3000:]}"
    assert done.returncode == 0, log
    assert "[127.0.0.1:trainer:0] R-GCN on paper: 3 node types, 4 relations, 150 training nodes" in done.stdout, log
    losses = [float(x) for x in re.findall(r"trainer:0\] epoch \d: time [\d.]+ s  loss ([\d.]+)", done.stdout)]
    assert len(losses) == 2, log
    acc = re.search(r"trainer:0\] val accuracy ([\d.]+) \((\d+)/(\d+) val nodes of paper\)", done.stdout)
    assert acc and int(acc.group(3)) == 50, log  # both ranks' halves of the 50 validation papers
    assert orphans() == []
