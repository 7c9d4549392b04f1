#!/usr/bin/env python
"""What a graph server restart costs a training run (``bgl launch --server-restarts``).

Ingests Cora, partitions it (bgl, 2 parts) and runs the same launch twice,
side by side in one invocation (local backend: 2 graph servers, 1 trainer):

* ``undisturbed``: the anchor;
* ``killed``: the server of part 1 is SIGKILLed ``--kills`` times mid-run
  (each kill once the previous restart serves and the trainer has moved on).

The trainer samples 2-hop blocks (fanouts 10,10) for fixed seed batches,
reads their features and labels, and prints a checksum and the wall time of
every batch.  Printed: the launcher's restart-to-serving time per restart,
the trainer's longest batch after each kill (its stall), the loop time of
both runs and their ratio, and whether every batch equals the anchor's.

Usage::

    python bench/launch/server_restart.py             # 3 kills, 150 batches of 64
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import psutil

os.environ.setdefault("DGLBACKEND", "pytorch")

TRAINER = textwrap.dedent("""
    import hashlib, os, sys, time
    import torch
    import torch.distributed as dist
    from bgl.sampler import SamplingClient

    num_batches, batch = int(sys.argv[1]), int(sys.argv[2])
    dist.init_process_group("gloo")
    torch.set_num_threads(1)
    with SamplingClient(os.environ["BGL_SERVERS"], timeout=30.0) as client:
        n = client.num_nodes
        perm = torch.randperm(n, generator=torch.Generator().manual_seed(1))
        t_loop = time.perf_counter()
        for i in range(num_batches):
            t0 = time.perf_counter()
            start = (i * batch) % (n - batch)
            seeds = perm[start:start + batch]
            blocks = client.sample_blocks(seeds, [10, 10], seed=i)
            x = client.fetch_features(blocks[0].src_ids)
            y = client.fetch_labels(seeds)
            h = hashlib.sha1()
            for b in blocks:
                for t in (b.src_ids, b.indptr, b.indices):
                    h.update(t.numpy().tobytes())
            h.update(x.numpy().tobytes())
            h.update(y.numpy().tobytes())
            print(f"batch {i} {h.hexdigest()} {time.perf_counter() - t0:.4f}", flush=True)
            time.sleep(0.02)
        print(f"loop {time.perf_counter() - t_loop:.3f} reconnects {client.reconnects}", flush=True)
    dist.destroy_process_group()
""")
SERVING = re.compile(r"restarted \(restart (\d+)\): serving again ([\d.]+) s after it was found dead")


def batches(out: str) -> dict[int, tuple[str, float]]:
    found = {}
    for line in out.splitlines():
        text = line.split("] ", 1)[-1].split()
        if len(text) == 4 and text[0] == "batch":
            found[int(text[1])] = (text[2], float(text[3]))
    return found


def launch(root: Path, name: str, port_base: int, args, kills: int) -> dict:
    hosts = root / "hosts.txt"
    hosts.write_text("127.0.0.1\n")
    out_path, err_path = root / f"{name}.out", root / f"{name}.err"
    cmd = [sys.executable, "-m", "bgl", "launch", "--hosts", str(hosts), "--partition", str(root / "parts"),
           "--num-servers-per-host", "2", "--port-base", str(port_base), "--server-threads", "1",
           "--server-timeout", "120", "--grace", "3", "--server-restarts", str(max(kills, 1)),
           "--", "python", str(root / "trainer.py"), str(args.batches), str(args.batch)]
    address = f"tcp://127.0.0.1:{port_base + 1}"
    kill_batches = []
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=root)
        try:
            for k in range(kills):
                seen = max(batches(out_path.read_text()), default=-1)
                while max(batches(out_path.read_text()), default=-1) < seen + 10:
                    if proc.poll() is not None:
                        raise SystemExit(f"{name}: launch ended before kill {k + 1}:\n{err_path.read_text()}")
                    time.sleep(0.05)
                victims = [p for p in psutil.process_iter(["cmdline"])
                           if (p.info["cmdline"] or [])[1:3] == ["-m", "bgl.sampler.server"]
                           and address in p.info["cmdline"] and str(root) in " ".join(p.info["cmdline"])]
                kill_batches.append(max(batches(out_path.read_text()), default=-1))
                victims[0].kill()
                while len(SERVING.findall(err_path.read_text())) < k + 1:
                    if proc.poll() is not None:
                        raise SystemExit(f"{name}: launch ended during restart {k + 1}:\n{err_path.read_text()}")
                    time.sleep(0.05)
            code = proc.wait(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    text = out_path.read_text()
    if code != 0:
        raise SystemExit(f"{name}: launch exited {code}:\n{err_path.read_text()[-3000:]}")
    loop = re.search(r"loop ([\d.]+) reconnects (\d+)", text)
    return {"batches": batches(text), "loop": float(loop.group(1)), "reconnects": int(loop.group(2)),
            "restarts": [float(t) for _, t in SERVING.findall(err_path.read_text())],
            "kill_batches": kill_batches}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=3)
    ap.add_argument("--batches", type=int, default=150)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--port-base", type=int, default=31750)
    args = ap.parse_args()
    from bgl.data import default_dataset_path
    from bgl import ingest
    from bgl.partition import partition_graph

    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f}, python {platform.python_version()}")
    with tempfile.TemporaryDirectory(prefix="bgl-restart-bench-") as tmp:
        root = Path(tmp)
        store = ingest(str(default_dataset_path()), root / "store", overwrite=True)
        partition_graph(store, "bgl", 2, root / "parts", seed=0, overwrite=True)
        (root / "trainer.py").write_text(TRAINER)
        anchor = launch(root, "undisturbed", args.port_base, args, 0)
        killed = launch(root, "killed", args.port_base + 10, args, args.kills)
    same = anchor["batches"].keys() == killed["batches"].keys() and all(
        anchor["batches"][i][0] == killed["batches"][i][0] for i in anchor["batches"])
    print(f"Cora, 2 parts, {args.batches} batches of {args.batch} seeds, fanouts 10,10, "
          f"{args.kills} SIGKILLs of the part-1 server")
    for k, (t, b) in enumerate(zip(killed["restarts"], killed["kill_batches"]), 1):
        after = [killed["batches"][i][1] for i in range(b, min(b + 15, args.batches)) if i in killed["batches"]]
        print(f"restart {k}: killed after batch {b}; restart-to-serving {t:.2f} s; "
              f"trainer's longest batch after the kill {max(after):.2f} s")
    normal = sorted(t for _, t in anchor["batches"].values())
    print(f"undisturbed batch median {normal[len(normal) // 2] * 1000:.1f} ms")
    print(f"loop time: undisturbed {anchor['loop']:.2f} s, killed {killed['loop']:.2f} s, "
          f"ratio {killed['loop'] / anchor['loop']:.2f}x; client reconnects {killed['reconnects']}")
    print(f"every batch equal to the undisturbed run: {same}")
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
