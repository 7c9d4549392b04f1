"""The PyG drop-in's data path against bgl.DataLoader's on the same graph, side by side.

Both iterate the same seeds over the same in-memory graph (a PyG ``Data`` read in place),
fanouts 10,10, batch 256, reading the features and labels of every batch and nothing
else: ``bgl.pyg.NeighborLoader`` (PyG-shaped ``Data`` batches) vs ``bgl.DataLoader`` with
bgl blocks.  Rounds alternate the two; the median epoch of each is reported with the
ratio pyg/DataLoader (target <= 1.1), and each loader's trainer wait (``loader.stats()``: ms a batch,
share of the epochs' time; with no model step it is most of an epoch).  ``--model`` also times PyG's own loop (a 2-layer
``torch_geometric.nn.SAGEConv`` model) with the loader and the model step apart.  ``--cache``
gives both loaders bgl's default feature cache (``cache=True``: lookahead, 10 %), and the
rows reports each loader's minor page faults per epoch (``getrusage``).  ``--masks`` gives the
``Data`` the attributes a Planetoid ``Data`` has beside ``x`` and ``y`` (``train_mask``,
``val_mask``, ``test_mask``), which the PyG batches carry; ``--datasets-dir`` where the
datasets are (default ``../shared/datasets`` beside the checkout).

    python bench/loader/pyg_path.py [--datasets cora citeseer pubmed] [--rounds 5] [--model] [--cache] [--masks]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

# shared/ beside the checkout; $BGL_SHARED_DATASETS where it is elsewhere (a worktree's checkout)
SHARED = Path(os.environ.get("BGL_SHARED_DATASETS", Path(__file__).resolve().parents[3] / "shared" / "datasets"))
SOURCES = {"cora": SHARED / "cora.npz", "citeseer": SHARED / "citeseer.npz",
           "pubmed": SHARED / "pubmed_adj_labels.npz"}


def pyg_data(name: str, workdir: Path, sources: Path = SHARED, masks: bool = False):
    import bgl
    from torch_geometric.data import Data

    from bgl.store import GraphStore

    out = workdir / name
    extra = {"feat_dim": 500} if name == "pubmed" else {}
    st = GraphStore(out) if (out / "meta.json").exists() else bgl.ingest(str(sources / SOURCES[name].name), out, **extra)
    src = np.asarray(st.indices).astype(np.int64)
    dst = np.repeat(np.arange(st.num_nodes), np.diff(st.indptr))
    data = Data(x=torch.from_numpy(np.array(st.feat)), y=torch.from_numpy(np.array(st.label)),
                edge_index=torch.from_numpy(np.stack([src, dst])))
    if masks:
        for split in ("train", "val", "test"):
            mask = torch.zeros(st.num_nodes, dtype=torch.bool)
            mask[torch.from_numpy(np.array(getattr(st, f"{split}_idx")))] = True
            data[f"{split}_mask"] = mask
    return data, torch.from_numpy(np.array(st.train_idx))


def epoch_pyg(loader) -> float:
    t = time.perf_counter()
    for batch in loader:
        batch.x.sum()
        batch.y.sum()
    return time.perf_counter() - t


def epoch_dl(loader) -> float:
    t = time.perf_counter()
    for _, _, blocks in loader:
        blocks[0].srcdata["feat"].sum()
        blocks[-1].dstdata["label"].sum()
    return time.perf_counter() - t


def model_epoch(loader, model, opt) -> tuple[float, float]:
    """(seconds in the loader, seconds in the model step) of one PyG training epoch."""
    import torch.nn.functional as F

    in_loader = in_model = 0.0
    it = iter(loader)
    while True:
        t = time.perf_counter()
        try:
            batch = next(it)
        except StopIteration:
            break
        t1 = time.perf_counter()
        out = model(batch.x, batch.edge_index)[: batch.batch_size]
        loss = F.cross_entropy(out, batch.y[: batch.batch_size])
        opt.zero_grad()
        loss.backward()
        opt.step()
        in_loader += t1 - t
        in_model += time.perf_counter() - t1
    return in_loader, in_model


def main() -> None:
    import bgl
    from bgl.pyg.loader import data_arrays
    from bgl.pyg import NeighborLoader

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="*", default=list(SOURCES))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "bgl-pyg-path")
    ap.add_argument("--model", action="store_true")
    ap.add_argument("--cache", action="store_true", help="cache=True (lookahead, 10 %%) in both loaders")
    ap.add_argument("--masks", action="store_true", help="train/val/test masks on the Data (carried per batch)")
    ap.add_argument("--datasets-dir", type=Path, default=SHARED)
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    print(json.dumps({"load_average_start": os.getloadavg()}))
    for name in args.datasets:
        data, train = pyg_data(name, args.workdir, args.datasets_dir, args.masks)
        cache = {"cache": True} if args.cache else {}
        pyg = NeighborLoader(data, num_neighbors=[10, 10], input_nodes=train, batch_size=256, shuffle=True, **cache)
        dl = bgl.DataLoader(data_arrays(data), train, bgl.NeighborSampler([10, 10]), batch_size=256,
                            shuffle=True, blocks="bgl", **cache)
        epoch_pyg(pyg), epoch_dl(dl)  # warm-up: kernels loaded, pages touched
        times, faults = {"pyg": [], "dataloader": []}, {"pyg": 0, "dataloader": 0}
        waits = {"pyg": [], "dataloader": []}  # each epoch's loader.stats(): the trainer's wait, both timed alike
        for r in range(args.rounds):
            for kind in (("pyg", "dataloader") if r % 2 == 0 else ("dataloader", "pyg")):
                before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                times[kind].append(epoch_pyg(pyg) if kind == "pyg" else epoch_dl(dl))
                faults[kind] += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
                waits[kind].append((pyg if kind == "pyg" else dl).stats())
        med = {k: statistics.median(v) for k, v in times.items()}
        row = {"dataset": name, "cache": args.cache, "masks": args.masks, "median_epoch_s": med,
               "trainer_wait_ms": {k: statistics.median(1000 * w["wait_mean_s"] for w in v) for k, v in waits.items()},
               "trainer_wait_share": {k: sum(w["wait_s"] for w in v) / sum(times[k]) for k, v in waits.items()},
               "ratio_pyg_over_dataloader": med["pyg"] / med["dataloader"],
               "minor_faults_per_epoch": {k: v // args.rounds for k, v in faults.items()}}
        if args.model:
            from torch_geometric.nn import GraphSAGE

            model = GraphSAGE(data.x.shape[1], 64, 2, out_channels=int(data.y.max()) + 1)
            opt = torch.optim.Adam(model.parameters(), lr=0.01)
            model_epoch(pyg, model, opt)
            loader_s, model_s = model_epoch(pyg, model, opt)
            # the loader's seconds are the trainer's wait (time blocked in next())
            row["pyg_loop_epoch"] = {"loader_s": loader_s, "model_s": model_s,
                                     "wait_share": loader_s / (loader_s + model_s)}
        print(json.dumps(row))
    print(json.dumps({"load_average_end": os.getloadavg()}))


if __name__ == "__main__":
    main()
