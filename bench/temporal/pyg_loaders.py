"""bgl.pyg's temporal loaders on CollegeMsg: time per batch against the non-temporal PyG drop-in.

Same ``Data`` (CollegeMsg's messages, their unix times as the edge attribute ``time``), seeds and fanouts:

* ``NeighborLoader`` without times (bgl's shared-subgraph sampling, the reference);
* ``NeighborLoader(..., time_attr="time", input_time=t, temporal_strategy="uniform" | "last")``;
* ``LinkNeighborLoader(..., time_attr="time", edge_label_time=t - 1, neg_sampling_ratio=1.0)``.

Seeds are the destinations (pairs: the messages) of ``--seeds`` random messages, at their message times.
Every temporal batch is checked for edges newer than its subgraph's time (the count is reported).
The trainer wait is each loader's ``stats()`` (time blocked in ``next()``); the loop here does little
besides the check, so it is most of the time.
One warm-up epoch, then ``--epochs`` timed ones; one torch thread (the box is shared), the loaders'
default pipeline (``thread`` on a CPU with >= 2 cores; ``inline`` before issue #57).

    python bench/temporal/pyg_loaders.py [--seeds 10240] [--batch-size 1024] [--epochs 3]
"""
from __future__ import annotations

import argparse
import gzip
import os
import time
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch_geometric.data import Data  # noqa: E402

from bgl.pyg import LinkNeighborLoader, NeighborLoader  # noqa: E402

COLLEGE = Path(os.environ.get("BGL_SHARED_DATASETS", "/work/shared/datasets")) / "CollegeMsg.txt.gz"


def college_data() -> Data:
    with gzip.open(COLLEGE, "rt") as f:
        rows = np.loadtxt(f, dtype=np.int64, skiprows=1)  # header: src dst time
    return Data(edge_index=torch.from_numpy(rows[:, :2].T.copy()), num_nodes=int(rows[:, :2].max()) + 1,
                x=torch.randn(int(rows[:, :2].max()) + 1, 16), time=torch.from_numpy(rows[:, 2].copy()))


def future_edges(data: Data, batch, kind) -> int:
    if kind is None:  # no times, nothing to check
        return 0
    seed_time = batch.edge_label_time if kind == "link" else batch.seed_time
    limit = seed_time[batch.batch[batch.edge_index[1]]]
    return int((data.time[batch.e_id] > limit).sum())


def timed(make, data: Data, epochs: int, kind=None) -> tuple[float, int, float, float, float]:
    """(ms per batch, future edges, sampled edges per batch, trainer wait ms per batch, its share of the
    epochs) over ``epochs`` after one warm-up epoch; the wait is each epoch's ``loader.stats()``."""
    loader = make()
    list(loader)  # warm-up: numba kernels, the CSC and time order
    batches, future, edges, waited, start = 0, 0, 0, 0.0, time.perf_counter()
    for _ in range(epochs):
        for batch in loader:
            batches += 1
            edges += int(batch.edge_index.shape[1])
            future += future_edges(data, batch, kind)
        waited += loader.stats()["wait_s"]
    seconds = time.perf_counter() - start
    loader.close()
    return seconds * 1e3 / batches, future, edges / batches, waited * 1e3 / batches, waited / seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10240)
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--fanouts", type=int, nargs="+", default=[10, 10])
    ap.add_argument("--epochs", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    data = college_data()
    rng = np.random.default_rng(0)
    msgs = torch.from_numpy(rng.choice(data.num_edges, args.seeds, replace=False))
    nodes, times = data.edge_index[1, msgs], data.time[msgs]
    kw = dict(batch_size=args.batch_size, shuffle=True)
    rows = [
        ("NeighborLoader, no times", lambda: NeighborLoader(data, args.fanouts, input_nodes=nodes, **kw), None),
        ("NeighborLoader, time_attr, uniform", lambda: NeighborLoader(
            data, args.fanouts, input_nodes=nodes, time_attr="time", input_time=times, **kw), "node"),
        ("NeighborLoader, time_attr, last", lambda: NeighborLoader(
            data, args.fanouts, input_nodes=nodes, time_attr="time", input_time=times, temporal_strategy="last",
            **kw), "node"),
        ("LinkNeighborLoader, edge_label_time, 1 negative", lambda: LinkNeighborLoader(
            data, args.fanouts, edge_label_index=data.edge_index[:, msgs], edge_label_time=times - 1,
            time_attr="time", neg_sampling_ratio=1.0, batch_size=args.batch_size // 2, shuffle=True), "link"),
    ]
    print(f"CollegeMsg: {data.num_nodes} nodes, {data.num_edges} messages; {args.seeds} seeds, batch "
          f"{args.batch_size} (link: {args.batch_size // 2} pairs), fanouts {args.fanouts}, {args.epochs} epochs")
    print(f"load average before: {Path('/proc/loadavg').read_text().strip()}")
    print("| loader | ms / batch | trainer wait ms / batch (share) | sampled edges / batch | future edges |\n"
          "|---|---|---|---|---|")
    for name, make, kind in rows:
        ms, future, edges, wait_ms, wait_share = timed(make, data, args.epochs, kind)
        print(f"| {name} | {ms:.2f} | {wait_ms:.2f} ({100 * wait_share:.0f} %) | {edges:,.0f} | {future} |")
    print(f"load average after: {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    main()
