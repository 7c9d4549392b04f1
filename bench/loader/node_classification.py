"""bgl.DataLoader vs dgl.dataloading.DataLoader: epoch time and batches/s, same model and data.

One run measures, side by side on the same machine:

* ``dgl-w0`` / ``dgl-w1``: DGL 2.1's DataLoader on a DGLGraph built from the store
  (``num_workers`` 0 and 1),
* ``bgl-inline`` / ``bgl-processes``: bgl's pipeline inline and as pinned stage processes,
* ``...+fifo-prox``: the same with BGL's FIFO feature cache (10 % of nodes) and proximity order.

Each configuration trains a 2-layer GraphSAGE (``dgl.nn.SAGEConv``, fanouts 10,10) for
one warm-up epoch and ``--epochs`` timed epochs, and separately iterates the loader
alone (no model) for the loader's own batches/s.  Epochs are bounded by taking the
first ``--max-batches * --batch-size`` training ids (so every loader finishes its
epochs normally).  Ratios are against ``dgl-w0``.

Usage::

    python bench/loader/node_classification.py --workdir /tmp/bgl-bench-dl [--scale 20] [--max-batches 20]

``--suite dropin`` measures the drop-in instead (see :func:`run_dropin`): DGL's own
node-classification loop on a DGLGraph (Cora, CiteSeer, PubMed, and PubMed with
8,192-dim features for memory), once with ``dgl.dataloading.DataLoader`` and once
with only the import swapped to ``bgl.DataLoader`` (bgl defaults), each run in its
own child process so its peak RSS is its own (``os.wait4``)::

    python bench/loader/node_classification.py --suite dropin [--rounds 3] [--epochs 10]

The drop-in's sampler is DGL's example's by default (``--dropin-sampler example``:
``NeighborSampler([10, 10], prefetch_node_feats=["feat"], prefetch_labels=["label"])``, as in DGL's
``examples/pytorch/graphsage/node_classification.py``), so each loader gathers the rows its batch
carries; ``--dropin-sampler plain`` names no field, and both leave ``feat`` and ``label`` to be gathered
when the loop first reads them (DGL's lazy columns), i.e. inside the model step's timer.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("DGLBACKEND", "pytorch")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.<area>.<script> imports

import numpy as np  # noqa: E402
import torch  # noqa: E402

from bgl.loader.pipeline.chain import quiet_numba_threads  # noqa: E402
from bench.common.own_rss import own_peak_rss_mb, run_child  # noqa: E402
from bench.common.side_by_side import (DGL_EXAMPLE_PREFETCH, DROPIN_SAMPLER_HELP, DROPIN_SAMPLERS,  # noqa: E402
                                       TrainerWait)

quiet_numba_threads()


def build_stores(workdir: Path, scale: int, feat_dim: int):
    from bgl.data import default_dataset_path
    from bgl.sources.datasets import ingest
    from bgl.sources.rmat import generate_rmat_store
    from bgl.store import GraphStore

    stores = {}
    cora = workdir / "cora"
    stores["cora"] = GraphStore(cora) if (cora / "meta.json").exists() else ingest(str(default_dataset_path()), cora)
    rmat = workdir / f"rmat{scale}-f{feat_dim}"
    if (rmat / "meta.json").exists():
        stores[f"rmat{scale}"] = GraphStore(rmat)
    else:
        t = time.perf_counter()
        stores[f"rmat{scale}"] = generate_rmat_store(rmat, scale, 16, seed=0, feat_dim=feat_dim, num_classes=16)
        print(f"generated R-MAT scale {scale} in {time.perf_counter() - t:.1f} s")
    return stores


def to_dglgraph(store):
    from bgl.dgl.real_dgl.graph_reader import csc_to_dglgraph

    g = csc_to_dglgraph(np.asarray(store.indptr), np.asarray(store.indices), store.num_nodes)
    g.ndata["feat"] = torch.from_numpy(np.array(store.feat))
    g.ndata["label"] = torch.from_numpy(np.array(store.label))
    return g


class SAGE(torch.nn.Module):
    def __init__(self, in_size, hid_size, out_size):
        import dgl.nn as dglnn

        super().__init__()
        self.layers = torch.nn.ModuleList([dglnn.SAGEConv(in_size, hid_size, "mean"),
                                           dglnn.SAGEConv(hid_size, out_size, "mean")])

    def forward(self, blocks, x):
        x = torch.relu(self.layers[0](blocks[0], x))
        return self.layers[1](blocks[1], x)


def timed_epochs(loader, epochs: int, model=None, opt=None) -> tuple[float, int]:
    """(seconds of the timed epochs, batches in them) after one untimed warm-up epoch."""
    def one_epoch():
        n = 0
        for _, _, blocks in loader:
            if model is not None:
                loss = torch.nn.functional.cross_entropy(model(blocks, blocks[0].srcdata["feat"]),
                                                         blocks[-1].dstdata["label"])
                opt.zero_grad()
                loss.backward()
                opt.step()
            n += 1
        return n

    one_epoch()
    t = time.perf_counter()
    n = sum(one_epoch() for _ in range(epochs))
    return time.perf_counter() - t, n


def run_dataset(name, store, args) -> list[dict]:
    import dgl

    import bgl

    train = np.array(store.train_idx)[: args.max_batches * args.batch_size]
    g = to_dglgraph(store)
    fanouts = [10, 10]
    num_classes = int(store.num_classes)

    def dgl_loader(workers):
        return dgl.dataloading.DataLoader(g, torch.from_numpy(train), dgl.dataloading.NeighborSampler(fanouts),
                                          batch_size=args.batch_size, shuffle=True, num_workers=workers)

    def bgl_loader(pipeline, cache=None, order="random"):
        return bgl.DataLoader(store, train, bgl.NeighborSampler(fanouts), batch_size=args.batch_size,
                              shuffle=True, pipeline=pipeline, cache=cache, order=order, blocks="dgl")

    configs = {
        "dgl-w0": lambda: dgl_loader(0),
        "dgl-w1": lambda: dgl_loader(1),
        "bgl-inline": lambda: bgl_loader("inline"),
        "bgl-inline+fifo-prox": lambda: bgl_loader("inline", "fifo", "proximity"),
        "bgl-processes": lambda: bgl_loader("processes"),
        "bgl-processes+fifo-prox": lambda: bgl_loader("processes", "fifo", "proximity"),
    }
    rows = []
    for cname, make in configs.items():
        torch.manual_seed(0)
        loader = make()
        try:
            load_s, load_n = timed_epochs(loader, args.epochs)
            model = SAGE(store.feat_dim, 64, num_classes)
            opt = torch.optim.Adam(model.parameters(), lr=1e-2)
            train_s, train_n = timed_epochs(loader, args.epochs, model, opt)
            stats = loader.cache_stats() if hasattr(loader, "cache_stats") else None
            split = getattr(loader, "core_split", None)
        finally:
            if hasattr(loader, "close"):
                loader.close()
        row = dict(dataset=name, config=cname, batches_per_epoch=load_n // args.epochs,
                   load_batches_per_s=load_n / load_s, train_epoch_s=train_s / args.epochs,
                   train_batches_per_s=train_n / train_s,
                   cache_hit_rate=None if not stats else stats["hits"] / max(1, stats["requests"]),
                   stage_cores=None if split is None else split.cores)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows

# ---------------------------------------------------------------- the drop-in suite (--suite dropin)
PUBMED_FEAT_DIM = 500  # PubMed's real TF-IDF width; the stored PubMed has no features (PROVENANCE.md)


def datasets_dir() -> Path:
    """shared/datasets next to the checkout (worktrees: ../shared), or env BGL_DATASETS."""
    env = os.environ.get("BGL_DATASETS")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parents[2]
    for cand in (here / "shared" / "datasets", here.parent / "shared" / "datasets",
                 here.parent.parent / "shared" / "datasets"):
        if cand.is_dir():
            return cand
    raise SystemExit("shared/datasets not found; set BGL_DATASETS")


def load_dglgraph(name: str, wide_dim: int):
    """The DGLGraph a user would build: symmetric edges, ndata feat/label/masks (60/20/20 split).

    Cora/CiteSeer: real bag-of-words features.  PubMed: real graph and labels,
    seeded N(0,1) features of width 500 (``pubmed``) or ``wide_dim`` (``pubmed-wide``).
    """
    import dgl

    from bgl.sources.readers.npz import read_csr_npz, read_gnn_benchmark
    from bgl.sources.splits import stratified_split

    base = datasets_dir()
    src = (read_csr_npz(base / "pubmed_adj_labels.npz") if name.startswith("pubmed")
           else read_gnn_benchmark(base / f"{name}.npz"))
    s, d = (np.concatenate(parts) for parts in zip(*src.edges()))
    g = dgl.to_bidirected(dgl.graph((torch.from_numpy(s), torch.from_numpy(d)), num_nodes=src.num_nodes))
    feat = src.feat
    if feat is None:
        dim = wide_dim if name == "pubmed-wide" else PUBMED_FEAT_DIM
        feat = np.random.default_rng(0).standard_normal((src.num_nodes, dim), dtype=np.float32)
    g.ndata["feat"] = torch.from_numpy(np.ascontiguousarray(feat, dtype=np.float32))
    label = np.asarray(src.label, dtype=np.int64)
    g.ndata["label"] = torch.from_numpy(label)
    for split, ids in stratified_split(label, src.num_nodes, seed=0).items():
        mask = torch.zeros(src.num_nodes, dtype=torch.bool)
        mask[torch.from_numpy(ids)] = True
        g.ndata[f"{split}_mask"] = mask
    return g


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def dropin_child(system: str, dataset: str, args) -> None:
    """DGL's example loop (GraphSAGE 2 layers, hidden 128, batch 256, fanouts 10,10, shuffle) with
    ``system``'s DataLoader; prints one JSON line.  Only the two loader names differ between systems;
    ``args.dropin_sampler`` says whether the sampler names the example's fields (module doc)."""
    import dgl

    torch.manual_seed(0)
    g = load_dglgraph(dataset, args.wide_dim)
    rss_graph = _rss_mb()
    if system == "dgl":
        from dgl.dataloading import DataLoader, NeighborSampler
    else:  # "bgl" or "bgl-<pipeline>" (bench/loader/pipeline_modes.py)
        from bgl import DataLoader, NeighborSampler
        from bench.common.side_by_side import bgl_loader_options

        DataLoader = functools.partial(DataLoader, **bgl_loader_options(system))
    train_ids = torch.nonzero(g.ndata["train_mask"], as_tuple=False).squeeze(1)
    named = DGL_EXAMPLE_PREFETCH if args.dropin_sampler == "example" else {}
    t = time.perf_counter()
    loader = DataLoader(g, train_ids, NeighborSampler([10, 10], **named), batch_size=256, shuffle=True)
    setup_s = time.perf_counter() - t
    model = SAGE(g.ndata["feat"].shape[1], 128, int(g.ndata["label"].max()) + 1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    wide = dataset == "pubmed-wide"
    epochs = 1 if wide else args.dropin_epochs
    epoch_s, cpu_s, batches = [], [], 0
    wait = TrainerWait()  # the trainer's time blocked in next(), the same timer for both systems
    for _ in range(epochs):
        t, c = time.perf_counter(), time.process_time()
        for _, _, blocks in wait.batches_of(loader, args.wide_batches if wide else 0):
            x, y = blocks[0].srcdata["feat"], blocks[-1].dstdata["label"]
            loss = torch.nn.functional.cross_entropy(model(blocks, x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            batches += 1
        epoch_s.append(time.perf_counter() - t)
        cpu_s.append(time.process_time() - c)  # CPU of all this process's threads: less hostage to the box's load
    print(json.dumps(dict(system=system, dataset=dataset, sampler=args.dropin_sampler, setup_s=setup_s,
                          epoch_s=epoch_s, cpu_s=cpu_s, batches=batches, wait_s=wait.wait_s,
                          rss_graph_mb=rss_graph, num_nodes=g.num_nodes(), feat_dim=int(g.ndata["feat"].shape[1]),
                          dgl=dgl.__version__, own_peak_rss_mb=own_peak_rss_mb())), flush=True)


def _run_child(script: Path, system: str, dataset: str, args) -> dict:
    cmd = [sys.executable, str(script), "--child", system, dataset, "--torch-threads", str(args.torch_threads),
           "--dropin-epochs", str(args.dropin_epochs), "--wide-dim", str(args.wide_dim),
           "--wide-batches", str(args.wide_batches), "--dropin-sampler", args.dropin_sampler]
    row = run_child(cmd, f"{system} {dataset}", env={**os.environ, "DGLBACKEND": "pytorch"})
    print(json.dumps(row), flush=True)
    return row


def run_dropin(args, script: Path) -> list[dict]:
    """Both systems on every dataset, ``--rounds`` times, alternating which goes first; prints the table."""
    print(f"machine: {platform.machine()}, {len(os.sched_getaffinity(0))} cores, load {os.getloadavg()}, "
          f"torch {torch.__version__}, child torch threads {args.torch_threads or 'all'}, niceness {os.nice(0)}, "
          f"sampler {args.dropin_sampler}")
    rows = []
    for r in range(args.rounds):
        for dataset in args.dropin_datasets.split(","):
            if dataset == "pubmed-wide" and r >= 2:
                continue  # peak RSS barely moves between runs; two rounds bound the 8k-dim model's cost
            for system in (("dgl", "bgl") if r % 2 == 0 else ("bgl", "dgl")):
                rows.append(_run_child(script, system, dataset, args))
    print(dropin_table(rows))
    print(f"load average after: {os.getloadavg()}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return rows


def dropin_table(rows) -> str:
    """Markdown table of medians per dataset and system, with bgl/DGL ratios (time: <= 1 is as fast)."""
    lines = ["| dataset | nodes | feat dim | batches | runs | DGL loop s | bgl loop s | **bgl/DGL time** | bgl/DGL CPU time | "
             "DGL epoch s (median) | bgl epoch s (median) | DGL setup s | bgl setup s | RSS of graph MB | "
             "DGL peak RSS MB | bgl peak RSS MB | **bgl/DGL peak RSS** | DGL trainer wait | bgl trainer wait |",
             "|" + "---|" * 19]
    med = statistics.median
    for ds in dict.fromkeys(r["dataset"] for r in rows):
        by = {sys_: [r for r in rows if r["dataset"] == ds and r["system"] == sys_] for sys_ in ("dgl", "bgl")}
        if not by["dgl"] or not by["bgl"]:
            continue
        loop = {k: med(sum(r["epoch_s"]) for r in v) for k, v in by.items()}
        cpu = {k: med(sum(r["cpu_s"]) for r in v) for k, v in by.items()}
        epoch = {k: med(e for r in v for e in r["epoch_s"]) for k, v in by.items()}
        setup = {k: med(r["setup_s"] for r in v) for k, v in by.items()}
        rss = {k: med(r["peak_rss_mb"] for r in v) for k, v in by.items()}
        wait = {k: _wait_cell(v) for k, v in by.items()}
        first = by["dgl"][0]
        lines.append(
            f"| {ds} | {first['num_nodes']} | {first['feat_dim']} | {first['batches']} | {len(by['dgl'])} | "
            f"{loop['dgl']:.2f} | {loop['bgl']:.2f} | **{loop['bgl'] / loop['dgl']:.2f}** | {cpu['bgl'] / cpu['dgl']:.2f} | {epoch['dgl']:.3f} | "
            f"{epoch['bgl']:.3f} | {setup['dgl']:.2f} | {setup['bgl']:.2f} | {med(r['rss_graph_mb'] for r in rows if r['dataset'] == ds):.0f} | "
            f"{rss['dgl']:.0f} | {rss['bgl']:.0f} | **{rss['bgl'] / rss['dgl']:.2f}** | {wait['dgl']} | {wait['bgl']} |")
    return "\n".join(lines)


def _wait_cell(runs) -> str:
    """The trainer's wait of a system's runs: median ms per batch and median share of the loop's time
    (runs recorded before the column existed: blank)."""
    runs = [r for r in runs if "wait_s" in r]
    if not runs:
        return ""
    med = statistics.median
    per_batch = med(1000 * sum(r["wait_s"]) / max(r["batches"], 1) for r in runs)
    share = med(sum(r["wait_s"]) / sum(r["epoch_s"]) for r in runs)
    return f"{per_batch:.2f} ms ({100 * share:.0f} %)"


def print_table(rows) -> str:
    lines = ["| dataset | loader | batches/epoch | loader-only batches/s | x dgl-w0 | train epoch s | "
             "train batches/s | x dgl-w0 | cache hit rate |", "|---|---|---|---|---|---|---|---|---|"]
    for ds in dict.fromkeys(r["dataset"] for r in rows):
        base = next(r for r in rows if r["dataset"] == ds and r["config"] == "dgl-w0")
        for r in (r for r in rows if r["dataset"] == ds):
            hit = "" if r["cache_hit_rate"] is None else f"{r['cache_hit_rate']:.3f}"
            lines.append(
                f"| {ds} | {r['config']} | {r['batches_per_epoch']} | {r['load_batches_per_s']:.1f} | "
                f"{r['load_batches_per_s'] / base['load_batches_per_s']:.2f} | {r['train_epoch_s']:.2f} | "
                f"{r['train_batches_per_s']:.2f} | {r['train_batches_per_s'] / base['train_batches_per_s']:.2f} | {hit} |")
    table = "\n".join(lines)
    print(table)
    return table


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--workdir", default="/tmp/bgl-bench-dataloader", help="stores are built/reused here")
    p.add_argument("--scale", type=int, default=20, help="R-MAT scale (log2 nodes)")
    p.add_argument("--feat-dim", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--max-batches", type=int, default=20, help="batches per epoch (bounds runtime)")
    p.add_argument("--epochs", type=int, default=2, help="timed epochs after one warm-up epoch")
    p.add_argument("--datasets", default="cora,rmat", help="comma list of cora,rmat")
    p.add_argument("--torch-threads", type=int, default=1,
                   help="trainer torch threads (0 = one per core of this process)")
    p.add_argument("--json", help="also write the rows here")
    p.add_argument("--suite", choices=("store", "dropin"), default="store",
                   help="store: loaders over one store (this file's table); dropin: DGL's loop on a DGLGraph, "
                        "dgl vs bgl.DataLoader, each in a child process (epoch time and peak RSS)")
    p.add_argument("--rounds", type=int, default=3, help="dropin: child runs per system and dataset (medians)")
    p.add_argument("--dropin-datasets", default="cora,citeseer,pubmed,pubmed-wide",
                   help="dropin: comma list of cora,citeseer,pubmed,pubmed-wide")
    p.add_argument("--dropin-epochs", type=int, default=10, help="dropin: epochs of the timed loop")
    p.add_argument("--wide-dim", type=int, default=8192, help="dropin: feature width of pubmed-wide")
    p.add_argument("--wide-batches", type=int, default=10,
                   help="dropin: batches of the one pubmed-wide epoch (peak RSS is reached in the first few)")
    p.add_argument("--dropin-sampler", choices=DROPIN_SAMPLERS, default="example",
                   help="dropin: " + DROPIN_SAMPLER_HELP)
    p.add_argument("--child", nargs=2, metavar=("SYSTEM", "DATASET"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        torch.set_num_threads(args.torch_threads or max(1, len(os.sched_getaffinity(0))))
        dropin_child(args.child[0], args.child[1], args)
        return
    if args.suite == "dropin":
        run_dropin(args, Path(__file__).resolve())
        return
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(args.torch_threads or max(1, len(os.sched_getaffinity(0))))
    print(f"machine: {platform.machine()}, {len(os.sched_getaffinity(0))} cores, load {os.getloadavg()}, "
          f"torch {torch.__version__}, trainer torch threads {torch.get_num_threads()}")
    stores = build_stores(workdir, args.scale, args.feat_dim)
    wanted = args.datasets.split(",")
    rows = []
    for name, store in stores.items():
        if name.rstrip("0123456789") in wanted or name in wanted:
            rows += run_dataset(name, store, args)
    print_table(rows)
    print(f"load average after: {os.getloadavg()}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
