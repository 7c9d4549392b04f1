"""Time from submission to the first batch: ``bgl launch`` under Slurm vs local, side by side.

Builds the demo's data (embedded Cora, BGL partitioner, 2 parts), then alternates, ``--runs``
times each:

* **local** (the anchor): ``bgl launch --backend local`` on 127.0.0.1, 2 graph servers, 2 trainers;
* **slurm**: ``salloc -N2 bgl launch --backend slurm`` on a real Slurm (slurmctld + two slurmd +
  munge in network namespaces, the set-up of ``tests/launch/test_slurm_launch.py``), one
  server and one trainer per node.

The trainer notes the wall time of its first sampled batch (2 hops, fanouts 10,10, 32 seeds,
features read); submission is the moment the launch command is started.  Prints one line
per run and the median ratio slurm / local.  Needs root (namespaces, daemons)::

    nice -n 10 .venv/bin/python bench/launch/first_batch.py --runs 2
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

TRAINER = textwrap.dedent("""
    import os, time
    import torch
    import torch.distributed as dist
    from bgl.sampler import SamplingClient

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    with SamplingClient(os.environ["BGL_SERVERS"], timeout=30.0) as client:
        seeds = torch.arange(rank, client.num_nodes, world)[:32]
        blocks = client.sample_blocks(seeds, [10, 10], seed=rank)
        client.fetch_features(blocks[0].src_ids)
        done = torch.tensor([time.time()], dtype=torch.float64)
        dist.all_reduce(done, op=dist.ReduceOp.MAX)
        if rank == 0:
            print(f"FIRST_BATCH_AT {float(done):.3f}", flush=True)
    dist.destroy_process_group()
""")


def load_test_cluster():
    """The Slurm set-up classes of tests/launch/conftest.py (a file, not an importable module)."""
    spec = importlib.util.spec_from_file_location("bgl_launch_conftest",
                                                  REPO / "tests" / "launch" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def first_batch_seconds(argv: list[str], env: dict, cwd: Path) -> float:
    t0 = time.time()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=600)
    for line in done.stdout.splitlines():
        if "FIRST_BATCH_AT" in line:
            return float(line.rsplit(" ", 1)[1]) - t0
    raise RuntimeError(f"no first batch (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    from bgl.data import default_dataset_path
    from bgl.partition import partition_graph
    from bgl.sources.datasets import ingest

    conftest = load_test_cluster()
    with tempfile.TemporaryDirectory(prefix="bgl-bench-launch-") as tmp:
        root = Path(tmp)
        os.chmod(root, 0o755)
        store = ingest(str(default_dataset_path()), root / "store", overwrite=True)
        partition_graph(store, "bgl", 2, root / "parts", seed=0, overwrite=True)
        (root / "trainer.py").write_text(TRAINER)
        (root / "hosts.txt").write_text("127.0.0.1\n")
        (root / "slurm").mkdir()
        nets = conftest.Namespaces(f"bgb{os.getpid() % 100000}",
                                   {"L": conftest.SLURM_CONTROLLER_IP, **dict(zip("AB", conftest.SLURM_NODES.values()))})
        cluster = conftest.SlurmCluster(root / "slurm", nets)
        try:
            nets.create()
            cluster.write_config()
            cluster.start_munge()
            cluster.start_slurmctld()
            for node in conftest.SLURM_NODES:
                cluster.start_slurmd(node)
            cluster.wait_idle()
            base_env = {**os.environ, "DGLBACKEND": "pytorch"}
            common = ["--partition", str(root / "parts"), "--server-threads", "1", "--grace", "2",
                      "--", sys.executable, str(root / "trainer.py")]
            local = [sys.executable, "-m", "bgl", "launch", "--backend", "local", "--hosts",
                     str(root / "hosts.txt"), "--num-trainers", "2", "--num-servers-per-host", "2",
                     "--port-base", "30150", *common]
            slurm = [*conftest.in_netns(nets.names["L"]), "salloc", "-N2", sys.executable, "-m", "bgl",
                     "launch", "--backend", "slurm", "--port-base", "30050", *common]
            slurm_env = {**cluster.env, **base_env, "SLURM_CONF": str(cluster.conf),
                         "GLOO_SOCKET_IFNAME": "eth0"}
            times = {"local": [], "slurm": []}
            for run in range(args.runs):
                for name, argv, env in (("local", local, base_env), ("slurm", slurm, slurm_env)):
                    seconds = first_batch_seconds(argv, env, root)
                    times[name].append(seconds)
                    print(f"run {run} {name}: submission -> first batch {seconds:.2f} s "
                          f"(load average {os.getloadavg()[0]:.1f})", flush=True)
            med = {k: statistics.median(v) for k, v in times.items()}
            print(f"median local {med['local']:.2f} s, slurm {med['slurm']:.2f} s, "
                  f"ratio slurm/local {med['slurm'] / med['local']:.2f}x")
        finally:
            cluster.stop()
            nets.remove()
    return 0


if __name__ == "__main__":
    sys.exit(main())
