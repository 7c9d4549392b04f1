"""``bgl demo`` end to end: ingest -> BGL partition -> 2 servers + 2 DDP trainers on Cora."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from bgl.launch.backends import port_is_free


def test_demo_trains_graphsage_through_launched_servers(tmp_path, orphans):
    work = tmp_path / "demo"
    done = subprocess.run([sys.executable, "-m", "bgl", "demo", "--workdir", str(work)],
                          capture_output=True, text=True, timeout=170, cwd=tmp_path,
                          env={**os.environ, "DGLBACKEND": "pytorch"})
    log = f"exit {done.returncode}\n--- stdout\n{done.stdout[-5000:]}\n--- stderr\n{done.stderr[-3000:]}"
    assert done.returncode == 0, log
    out = done.stdout
    assert "[1/3] ingest cora: 2,708 nodes, 10,556 edges" in out, log  # the ingested store, one line
    assert re.search(r"\[2/3\] partition into 2 parts \(bgl\): edge cut [\d.]+ %, remote samples [\d.]+ %", out), log
    assert len(out.splitlines()) <= 12, log  # a line per phase and the trainers' lines; detail is behind -v
    assert "INFO" not in done.stderr and "OMP_NUM_THREADS" not in done.stderr, log
    # no library warning on either stack (torch >= 2.13 warns on float() of a loss that requires grad)
    assert "Warning" not in done.stdout + done.stderr, log
    assert "cache policy lookahead" in out, log  # the demo says which policy it runs
    assert re.search(r"\[127\.0\.0\.1:trainer:0\] feature cache: lookahead \(20% of nodes\)", out), log
    # Rank 0 reports every epoch (time, cache hit rate) and the final accuracy over both ranks.
    epochs = re.findall(r"\[127\.0\.0\.1:trainer:0\] epoch (\d+): time ([\d.]+) s .* "
                        r"cache hit rate ([\d.]+)% +\(cumulative, 2 trainer\(s\)\)", out)
    assert [int(e[0]) for e in epochs] == [0, 1, 2], log
    assert all(0.0 < float(e[2]) <= 100.0 for e in epochs), log  # the cache is in use
    acc = re.search(r"\[127\.0\.0\.1:trainer:0\] test accuracy ([\d.]+) \((\d+)/(\d+) test nodes\)", out)
    assert acc, log
    assert int(acc.group(3)) == 540  # both ranks' shares of Cora's test split
    # Cora has 7 classes (~30 % for the majority class): learning must clearly beat that.
    assert float(acc.group(1)) > 0.6, log
    assert out.count("test accuracy") == 1, log  # only rank 0 reports
    assert "SHUTDOWN" not in done.stderr, log  # servers stopped on the token
    # the launch's lifecycle line last; the trainers' lifecycle events themselves are not shown
    # ... and, since the demo's trainers report their loader's stats(), their wait share of every epoch
    assert re.search(r"^lifecycle: wall [\d.]+ s; first batch [\d.]+ s .*; training [\d.]+ s .* ETT [\d.]+ %; "
                     r"trainer wait [\d.]+ % of [1-9]\d* epoch\(s\)$", out.splitlines()[-1]), log
    assert "bgl-lifecycle" not in out, log
    assert orphans() == []
    ports = re.search(r"graph servers on ports (\d+)\.\.(\d+)", out)
    assert ports, log
    assert all(port_is_free("127.0.0.1", p) for p in range(int(ports.group(1)), int(ports.group(2)) + 1))


@pytest.mark.extended  # 27 s; link prediction over real servers stays in make test (tests/bgl/loader)
def test_demo_link_prediction_through_launched_servers(tmp_path, orphans):
    """``bgl demo --task link``: examples/train_link_pred.py under bgl launch, 2 servers + 2 DDP trainers."""
    done = subprocess.run([sys.executable, "-m", "bgl", "demo", "--task", "link", "--epochs", "2",
                           "--workdir", str(tmp_path / "demo")],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "DGLBACKEND": "pytorch"})
    log = f"exit {done.returncode}\n--- stdout\n{done.stdout[-5000:]}\n--- stderr\n{done.stderr[-3000:]}"
    assert done.returncode == 0, log
    assert "Warning" not in done.stdout + done.stderr, log
    out = done.stdout
    assert re.search(r"\[127\.0\.0\.1:trainer:0\] link prediction: \d+ train / \d+ test edges, cache lookahead, "
                     r"order proximity, 2 trainer\(s\)", out), log
    losses = [float(x) for x in re.findall(r"\[127\.0\.0\.1:trainer:0\] epoch \d+: time [\d.]+ s  loss ([\d.]+)", out)]
    assert len(losses) == 2 and losses[1] < losses[0], log
    mrr = re.search(r"\[127\.0\.0\.1:trainer:0\] test MRR ([\d.]+) \((\d+) test edges, 100 negatives each\)", out)
    assert mrr, log
    # a random scorer ranks the true edge ~50th of 101: MRR ~0.05; learning must clearly beat it
    assert float(mrr.group(1)) > 0.12, log
    assert out.count("test MRR") == 1, log
    assert orphans() == []


def test_demo_recommender_through_launched_servers(tmp_path, orphans):
    """``bgl demo --task recsys``: a generated user–item graph, examples/train_recsys.py under bgl launch (typed
    link prediction over 2 servers, 2 DDP trainers), recall@20 over all items well above chance."""
    done = subprocess.run([sys.executable, "-m", "bgl", "demo", "--task", "recsys", "--workdir", str(tmp_path / "demo")],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "DGLBACKEND": "pytorch"})
    log = f"exit {done.returncode}\n--- stdout\n{done.stdout[-5000:]}\n--- stderr\n{done.stderr[-3000:]}"
    assert done.returncode == 0, log
    out = done.stdout
    assert ("[1/3] generate generated-ratings: 2,000 users, 1,000 items (16-dim features), 44,912 edges of "
            "2 relations") in out, log
    assert re.search(r"\[127\.0\.0\.1:trainer:0\] recommendation: 2000 users, 1000 items, 22456 ratings, "
                     r"2 trainer\(s\)", out), log
    losses = [float(x) for x in re.findall(r"trainer:0\] epoch \d+: time [\d.]+ s  BPR loss ([\d.]+)", out)]
    assert len(losses) == 3 and losses[2] < losses[0], log
    found = re.search(r"trainer:0\] test recall@20 ([\d.]+)  NDCG@20 ([\d.]+) \(2000 users", out)
    assert found, log
    # 20 of 1,000 items: a random ranking finds the held-out item 2 % of the time
    assert float(found.group(1)) > 0.06 and float(found.group(2)) > 0.02, log
    assert "Warning" not in out and "Warning" not in done.stderr, log
    assert orphans() == []


def test_the_demos_kernel_log_is_absolute_for_its_processes_and_the_environment_restored(tmp_path, monkeypatch):
    """``bgl demo`` counts the run's compiles from ``$BGL_COMPILE_LOG``: its own file when unset, the user's
    (made absolute: servers and trainers run elsewhere) when set; either way the variable is as found after."""
    from bgl.commands.demo import kernel_log

    monkeypatch.delenv("BGL_COMPILE_LOG", raising=False)
    with kernel_log(tmp_path) as (path, offset):
        assert os.environ["BGL_COMPILE_LOG"] == path == str(tmp_path / "kernels.jsonl") and offset == 0
    assert "BGL_COMPILE_LOG" not in os.environ
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.jsonl").write_text("{}\n")
    monkeypatch.setenv("BGL_COMPILE_LOG", "mine.jsonl")
    with kernel_log(tmp_path / "run") as (path, offset):
        assert os.environ["BGL_COMPILE_LOG"] == path == str(tmp_path / "mine.jsonl") and offset == 3  # its end
    assert os.environ["BGL_COMPILE_LOG"] == "mine.jsonl"
