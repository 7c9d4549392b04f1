"""What a killed trainer costs under ``bgl launch --max-restarts``: the demo's run with and without one failure.

Builds the demo's data (embedded Cora, BGL partitioner, 2 parts; or ``--graph rmat:22`` and the like,
any ``bgl ingest`` source, with ``--max-batches`` bounding each epoch), then alternates, ``--runs`` times:

* **undisturbed** (the anchor): ``bgl launch --backend local`` -- 2 graph servers, 2 DDP trainers running
  ``examples/train_sage.py`` with the demo's settings (batch 32, lookahead cache, proximity order,
  ``--epochs``) plus ``--checkpoint-dir`` / ``--checkpoint-every``;
* **one failure**: the same, with one trainer worker SIGKILLed once the ``--kill-at-step`` checkpoint
  is complete (mid-epoch 1 by default); ``--max-restarts 1`` restarts the trainers, which resume.

Each launch's own lifecycle line (``bgl launch``'s last line, :mod:`bgl.launch.ett`) gives the split:
time to first batch, training, checkpointing, the failure's cost (since checkpoint + restart +
resume) and ETT %.  Prints each run's line and the median failure cost and ETT of each kind::

    nice -n 10 .venv/bin/python bench/launch/recovery.py --runs 2
    nice -n 10 .venv/bin/python bench/launch/recovery.py --runs 1 --graph rmat:22 --batch-size 1024 \
        --max-batches 60 --epochs 2 --checkpoint-every 10 --kill-at-step 3
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def complete_step(ck: Path) -> int:
    try:
        return int((ck / "complete").read_text())
    except (OSError, ValueError):
        return -1


def kill_one_worker(root: Path) -> None:
    """SIGKILL one torchrun worker of this run's train_sage.py (not torchrun itself)."""
    import psutil

    workers = sorted((p for p in psutil.process_iter(["cmdline", "pid"])
                      if len(p.info["cmdline"] or []) > 1 and p.info["cmdline"][1].endswith("train_sage.py")
                      and str(root) in " ".join(p.info["cmdline"])), key=lambda p: p.pid)
    if not workers:
        raise RuntimeError("no trainer worker to kill (the run ended first: lower --kill-at-step)")
    workers[-1].send_signal(signal.SIGKILL)


def launch(argv: list[str], ck: Path, root: Path, kill_at: int | None) -> str:
    """Run one launch; its lifecycle line."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=root,
                            env={**os.environ, "DGLBACKEND": "pytorch"})
    try:
        if kill_at is not None:
            while complete_step(ck) < kill_at and proc.poll() is None:
                time.sleep(0.01)
            kill_one_worker(root)
        _, err = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = [x for x in err.splitlines() if "lifecycle:" in x]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"launch exited {proc.returncode}:\n{err[-3000:]}")
    return lines[-1].split("bgl launch: ", 1)[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--checkpoint-every", type=int, default=1)
    parser.add_argument("--kill-at-step", type=int, default=4, help="kill once this checkpoint step is complete")
    parser.add_argument("--graph", default="", help="a bgl ingest source (default: the demo's embedded Cora)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-batches", type=int, default=0, help="per trainer and epoch (0: whole epochs)")
    parser.add_argument("--workdir", default="", help="keep the store and partition here (default: a temp dir)")
    args = parser.parse_args()
    from bgl.commands.demo import find_port_base
    from bgl.data import default_dataset_path
    from bgl.partition import partition_graph
    from bgl.sources.datasets import ingest

    with tempfile.TemporaryDirectory(prefix="bgl-bench-recovery-") as tmp:
        root = Path(args.workdir or tmp)
        root.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        if not (root / "parts" / "partition.json").is_file():
            synthetic = dict(feat_dim=128, num_classes=16) if args.graph.startswith("rmat") else {}
            store = ingest(args.graph or str(default_dataset_path()), root / "store", overwrite=True, **synthetic)
            partition_graph(store, "bgl", 2, root / "parts", seed=0, overwrite=True)
        print(f"data: {args.graph or 'cora (embedded)'} ingested and partitioned in {time.perf_counter() - t0:.0f} s "
              f"(or reused from {root})", flush=True)
        bounded = ["--max-batches", str(args.max_batches)] if args.max_batches else []
        (root / "hosts.txt").write_text("127.0.0.1\n")
        results: dict[str, list[tuple[float, float]]] = {"undisturbed": [], "one failure": []}
        for run in range(args.runs):
            for kind in results:
                ck = root / f"ck-{run}-{kind.replace(' ', '-')}"
                argv = [sys.executable, "-m", "bgl", "launch", "--backend", "local", "--hosts", str(root / "hosts.txt"),
                        "--partition", str(root / "parts"), "--num-trainers", "2", "--num-servers-per-host", "2",
                        "--port-base", str(find_port_base(3)), "--server-threads", "1", "--grace", "3",
                        "--max-restarts", "1", "--", sys.executable, str(REPO / "examples" / "train_sage.py"),
                        "--graph", str(root / "parts"), "--epochs", str(args.epochs), "--batch-size", str(args.batch_size),
                        "--cache", "lookahead", "--order", "proximity", "--checkpoint-dir", str(ck),
                        "--checkpoint-every", str(args.checkpoint_every), *bounded]
                line = launch(argv, ck, root, args.kill_at_step if kind == "one failure" else None)
                ett = float(re.search(r"ETT ([\d.]+) %", line).group(1))
                lost = re.search(r": ([\d.]+) s \[since checkpoint", line)
                results[kind].append((ett, float(lost.group(1)) if lost else 0.0))
                print(f"run {run} {kind} (load average {os.getloadavg()[0]:.1f}): {line}", flush=True)
        for kind, rows in results.items():
            print(f"median {kind}: ETT {statistics.median(r[0] for r in rows):.1f} %, "
                  f"failure cost {statistics.median(r[1] for r in rows):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
