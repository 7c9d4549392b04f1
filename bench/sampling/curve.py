#!/usr/bin/env python
"""What CURVE costs: sampling and feature reads through a plaintext and a CURVE graph server.

Two ``bgl serve`` processes on 127.0.0.1 serve the same store, one plaintext
and one with CURVE (authenticated + encrypted, allow-list of one client key).
One SamplingClient per server takes turns batch by batch (order alternating
every batch, so load drift on a shared machine hits both alike) over the same
seed batches, timing

* ``sample``: ``sample_blocks(seeds, fanouts)`` (3 layers, int64 neighbour replies);
* ``sample + features``: the same plus ``fetch_features(blocks[0].src_ids)``
  (what a training step reads: the bulk of the bytes).

It prints seeds/s, reply MB/s and the CURVE / plaintext ratio per round.

Usage::

    python bench/sampling/curve.py                # R-MAT scale 20, feat_dim 32
    python bench/sampling/curve.py --quick        # R-MAT scale 16
"""
from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("DGLBACKEND", "pytorch")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import psutil  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.<area>.<script> imports
from bench.sampling.throughput import parse_rmat_args, rmat_parser, start_servers, stop_servers  # noqa: E402


def main(argv=None) -> int:
    ap = rmat_parser(__doc__, batches=10, out="curve")
    ap.add_argument("--feat-dim", type=int, default=32)
    args = parse_rmat_args(ap, argv, quick_batches=5)

    from bgl.rmat import generate_rmat_store
    from bgl.sampler import SamplingClient
    from bgl.sampler import curve_keys as ck
    from bgl.store import GraphStore

    print(f"# CURVE cost benchmark  {time.strftime('%Y-%m-%d %H:%M:%S')}  {platform.machine()}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    store_dir = args.workdir / f"rmat{args.scale}-f{args.feat_dim}"
    store = (GraphStore(store_dir) if (store_dir / "meta.json").exists() else
             generate_rmat_store(store_dir, args.scale, args.edge_factor, seed=0, feat_dim=args.feat_dim,
                                 num_classes=8))
    print(f"R-MAT scale {args.scale}: {store.num_nodes:,} nodes, {store.num_edges:,} edges, "
          f"feat_dim {store.feat_dim}; fanouts {args.fanouts}, batch {args.batch_size}, "
          f"{args.batches} timed batches x {args.rounds} rounds, {args.server_threads} server threads")

    rng = np.random.default_rng(0)
    ids = np.asarray(store.train_idx)
    batches = [torch.from_numpy(rng.choice(ids, args.batch_size, replace=False))
               for _ in range(args.batches + args.warmup)]
    procs, clients = [], []
    with tempfile.TemporaryDirectory() as keydir:
        client_pair = ck.new_keypair()
        ck.write_key_dir(keydir, server=ck.new_keypair(), client=client_pair, allowed=[client_pair.public])
        try:
            p, plain_addr = start_servers([Path(store.path)], args.workdir, args.server_threads)
            procs += p
            p, curve_addr = start_servers([Path(store.path)], args.workdir, args.server_threads,
                                          ["--curve-dir", keydir])
            procs += p
            clients = {"plaintext": SamplingClient(plain_addr, timeout=120.0, curve=None),
                       "CURVE": SamplingClient(curve_addr, timeout=120.0, curve=ck.load_client_keys(keydir))}
            servers = {"plaintext": psutil.Process(procs[0].pid), "CURVE": psutil.Process(procs[1].pid)}
            results = run_rounds(clients, servers, batches, args)
        finally:
            for c in (clients.values() if isinstance(clients, dict) else clients):
                c.close()
            stop_servers(procs)
    report(results, args)
    return 0


def cpu_seconds(proc: psutil.Process) -> float:
    """User + system CPU of a server process (all its threads)."""
    t = proc.cpu_times()
    return t.user + t.system


def run_rounds(clients: dict, servers: dict, batches: list, args) -> list[dict]:
    """Per round: {(features?, security): (wall s, client cpu s, reply bytes)} plus
    {("server", security): server cpu s} (each security has its own server process)."""
    def step(client, seeds, seed, features):
        blocks = client.sample_blocks(seeds, args.fanouts, seed=seed)
        nbytes = sum(b.indices.numel() * 8 + b.indptr.numel() * 8 for b in blocks)
        if features:
            nbytes += client.fetch_features(blocks[0].src_ids).numel() * 4
        return nbytes

    names = list(clients)
    for b in batches[:args.warmup]:
        for name in names:
            step(clients[name], b, 0, True)
    rounds = []
    for r in range(args.rounds):
        acc: dict = {}
        server0 = {name: cpu_seconds(p) for name, p in servers.items()}
        for i, b in enumerate(batches[args.warmup:]):
            for features in (False, True):
                order = names if (i + features) % 2 == 0 else names[::-1]
                for name in order:
                    t0, c0 = time.perf_counter(), time.process_time()
                    nbytes = step(clients[name], b, r * 1000 + i, features)
                    w, c, n = acc.get((features, name), (0.0, 0.0, 0))
                    acc[(features, name)] = (w + time.perf_counter() - t0, c + time.process_time() - c0, n + nbytes)
        for name, p in servers.items():
            acc[("server", name)] = cpu_seconds(p) - server0[name]
        rounds.append(acc)
    return rounds


def report(rounds: list[dict], args) -> None:
    seeds = args.batches * args.batch_size
    print(f"\n(load average {os.getloadavg()[0]:.1f})\n")
    print("| work | security | seeds/s (median) | reply MB/s (median) | client CPU ms/batch | "
          "CURVE / plaintext per round | median |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for features, kind in ((False, "sample"), (True, "sample + features")):
        for name in ("plaintext", "CURVE"):
            rates = [seeds / r[(features, name)][0] for r in rounds]
            mbs = [r[(features, name)][2] / r[(features, name)][0] / 1e6 for r in rounds]
            cpu = [r[(features, name)][1] / args.batches * 1e3 for r in rounds]
            ratio = "- | -"
            if name == "CURVE":
                rs = [r[(features, "plaintext")][0] / r[(features, "CURVE")][0] for r in rounds]
                ratio = f"{' / '.join(f'{x:.2f}x' for x in rs)} | {np.median(rs):.2f}x"
            print(f"| {kind} | {name} | {np.median(rates):,.0f} | {np.median(mbs):,.0f} | "
                  f"{np.median(cpu):.1f} | {ratio} |")
    print("\nServer CPU per batch (both steps: sample, then sample + features), load-proof:")
    for name in ("plaintext", "CURVE"):
        ms = [r[("server", name)] / args.batches * 1e3 for r in rounds]
        print(f"- {name}: {' / '.join(f'{x:.1f}' for x in ms)} ms (median {np.median(ms):.1f})")


if __name__ == "__main__":
    sys.exit(main())
