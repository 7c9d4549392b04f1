"""Compressed feature rows (bgl/codec) against float32, side by side in one run.

For each dataset the float32 store is encoded as float16, bfloat16 and int8 (``bgl compress``,
float32 dropped), and every codec gets the *same cache budget in bytes* (``--cache-fraction``
of the float32 feature bytes, so int8's cache holds ~3-4x the rows). Reported per codec:

* bytes from source per epoch of the real loader (lookahead cache, DGL's example settings:
  batch 256, fanouts 10,10, shuffle), and of the cache benchmark's replay for lookahead and
  Belady's offline optimum on the same encoded rows, as a ratio to float32 lookahead's;
* test accuracy of DGL's example loop (2-layer GraphSAGE, hidden 128, DGL blocks) after
  ``--epochs`` epochs, mean of ``--seeds`` seeds, and its difference to float32's;
* the loader's epoch time and CPU time (the training loop included), mean over the epochs
  after the first, as a ratio to float32's; seeds run outermost with the codecs in turn, so a
  drift in the box's load reaches every codec alike.

Usage::

    python bench/cache/codec.py [--datasets cora,citeseer,pubmed] [--seeds 3] [--epochs 6]
    python bench/cache/codec.py --datasets pubmed8k,rmat22 --max-batches 40   # PubMed 8k-dim, a 134M-edge R-MAT
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("DGLBACKEND", "pytorch")

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.<area>.<script> imports
from bench.loader.node_classification import SAGE, datasets_dir  # noqa: E402

CODECS = ("float32", "float16", "bfloat16", "int8")
SOURCES = {"cora": "cora.npz", "citeseer": "citeseer.npz", "pubmed": "pubmed_adj_labels.npz",
           "pubmed8k": "pubmed_adj_labels.npz", "rmat22": "rmat:22"}
# PubMed is stored without features (PROVENANCE.md): weak-signal synthetic ones of this width, see below
SYNTHETIC_DIM = {"pubmed": 500, "pubmed8k": 8192}
RMAT_FEAT_DIM, RMAT_CLASSES = 64, 16  # rmat22: 4.2M nodes, 134M stored edges (R-MAT's synthetic rows and labels)


def with_weak_features(store, path: Path, signal: float, dim: int):
    """``store`` with float features ``signal * centroid[label] + N(0, 1)`` (``dim`` columns, seeded):
    continuous values whose class signal is weak per column, so rounding them could cost accuracy
    (Cora's and CiteSeer's 0/1 bag-of-words rows are exact in every codec)."""
    from bgl.store import write_store

    rng = np.random.default_rng(0)
    label = np.asarray(store.label)
    centroids = rng.standard_normal((store.num_classes, dim)).astype(np.float32)
    feat = signal * centroids[label] + rng.standard_normal((store.num_nodes, dim), dtype=np.float32)
    return write_store(path, np.asarray(store.indptr), np.asarray(store.indices), feat=feat, label=label,
                       splits={k: np.asarray(v) for k, v in store.splits.items()}, num_classes=store.num_classes,
                       name=store.meta.name, overwrite=True)


def build_stores(name: str, workdir: Path, signal: float, reuse: bool = False) -> dict:
    """{codec: store}: the float32 store and its three encoded copies (float32 dropped); with
    ``reuse``, stores already under ``workdir`` (a ``--workdir`` run before) are opened, not rebuilt."""
    from bgl.codec import compress_store
    from bgl.sources.datasets import ingest
    from bgl.store import GraphStore

    def made(path: Path, build):
        return GraphStore(path) if reuse and (path / "meta.json").exists() else build()

    if SOURCES[name].startswith("rmat:"):
        plain = made(workdir / name, lambda: ingest(SOURCES[name], workdir / name, feat_dim=RMAT_FEAT_DIM,
                                                    num_classes=RMAT_CLASSES, overwrite=True))
    else:
        plain = made(workdir / name, lambda: ingest(str(datasets_dir() / SOURCES[name]), workdir / name,
                                                    overwrite=True))
    if plain.feat is None:
        plain = made(workdir / f"{name}-feat",
                     lambda: with_weak_features(plain, workdir / f"{name}-feat", signal, SYNTHETIC_DIM[name]))
    stores = {"float32": plain}
    for codec in CODECS[1:]:
        out = workdir / f"{name}-{codec}"
        stores[codec] = made(out, lambda: compress_store(plain.path, codec, out=out, keep_float32=False,
                                                         overwrite=True))
    return stores


def row_bytes(store) -> int:
    return store.feat_codec.row_bytes if store.feat_codec is not None else store.feat_dim * store.feat.itemsize


def replay_bytes(store, budget: int, max_batches=None) -> dict:
    """Bytes the cache benchmark's replay reads from the source for lookahead and Belady at ``budget`` bytes."""
    from bgl.cache.bench_config import BenchConfig
    from bgl.cache.benchmark import run_benchmark

    ratio = min(1.0, budget / row_bytes(store) / store.num_nodes)
    cfg = BenchConfig(policies=("lookahead", "belady"), orders=("random",), cache_ratios=(ratio,),
                      fanouts=(10, 10), batch_size=256, epochs=2, max_batches=max_batches)
    return {r.policy: r.bytes_from_source for r in run_benchmark(store, cfg, progress=False)}


def train_and_test(store, budget: int, seed: int, epochs: int, max_batches=None) -> dict:
    """DGL's example loop on ``store`` with a lookahead cache of ``budget`` bytes (at most
    ``max_batches`` batches an epoch, and of the test set: the first seeds of each split, so the cache
    lives through the epochs as in a full run)."""
    import bgl

    torch.manual_seed(seed)
    train_idx, test_idx = store.train_idx, store.test_idx
    if max_batches is not None:
        train_idx, test_idx = train_idx[:256 * max_batches], test_idx[:1024 * min(max_batches, 4)]
    loader = bgl.DataLoader(store, train_idx, bgl.NeighborSampler([10, 10]), batch_size=256,
                            shuffle=True, cache="lookahead", cache_bytes=budget, blocks="dgl")
    model = SAGE(store.feat_dim, 128, store.num_classes)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    times, cpu, moved = [], [], []
    for _ in range(epochs):
        before = (loader.cache_stats() or {}).get("bytes_from_source", 0)
        t, c = time.perf_counter(), time.process_time()
        for _, _, blocks in loader:
            loss = torch.nn.functional.cross_entropy(model(blocks, blocks[0].srcdata["feat"]),
                                                     blocks[-1].dstdata["label"])
            opt.zero_grad()
            loss.backward()
            opt.step()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)  # less hostage to the other jobs on the box than wall time
        moved.append(loader.cache_stats()["bytes_from_source"] - before)
    loader.close()
    model.eval()
    correct = total = 0
    with torch.no_grad(), bgl.DataLoader(store, test_idx, bgl.NeighborSampler([-1, -1]), batch_size=1024,
                                         blocks="dgl") as test:
        for _, _, blocks in test:
            pred = model(blocks, blocks[0].srcdata["feat"]).argmax(1)
            correct += int((pred == blocks[-1].dstdata["label"]).sum())
            total += int(pred.numel())
    return {"acc": correct / total, "epoch_s": statistics.mean(times[1:] or times),
            "epoch_cpu_s": statistics.mean(cpu[1:] or cpu),
            "bytes_per_epoch": statistics.mean(moved[1:] or moved)}


def run_dataset(name: str, args, workdir: Path) -> list[dict]:
    stores = build_stores(name, workdir, args.pubmed_signal, reuse=args.workdir is not None)
    f32 = stores["float32"]
    budget = int(args.cache_fraction * f32.num_nodes * row_bytes(f32))
    rows = []
    # seeds outermost, codecs in turn (the order rotating): load on a shared box drifts over minutes
    runs = {codec: [] for codec in stores}
    for seed in range(args.seeds):
        order = list(stores)[seed % len(stores):] + list(stores)[:seed % len(stores)]
        for codec in order:
            runs[codec].append(train_and_test(stores[codec], budget, seed, args.epochs, args.max_batches))
    for codec, store in stores.items():
        runs_c = runs[codec]
        rows.append({"dataset": name, "codec": codec, "nodes": store.num_nodes, "dim": store.feat_dim,
                     "row_bytes": row_bytes(store), "budget": budget,
                     "cache_rows": budget // row_bytes(store), **{f"replay_{k}": v for k, v in
                                                                  replay_bytes(store, budget, args.max_batches).items()},
                     "loader_bytes": statistics.mean(r["bytes_per_epoch"] for r in runs_c),
                     "acc": statistics.mean(r["acc"] for r in runs_c), "accs": [r["acc"] for r in runs_c],
                     "epoch_s": statistics.mean(r["epoch_s"] for r in runs_c),
                     "epoch_cpu_s": statistics.mean(r["epoch_cpu_s"] for r in runs_c)})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def table(rows) -> str:
    lines = ["| dataset | codec | B/row | cache rows | loader MB/epoch | **vs float32 lookahead** | replay lookahead "
             "vs float32 | replay Belady vs float32 | test acc (mean of seeds) | **Δ acc (pt)** | epoch s | "
             "epoch vs float32 | epoch CPU vs float32 |", "|" + "---|" * 13]
    for ds in dict.fromkeys(r["dataset"] for r in rows):
        base = next(r for r in rows if r["dataset"] == ds and r["codec"] == "float32")
        for r in (r for r in rows if r["dataset"] == ds):
            lines.append(
                f"| {ds} | {r['codec']} | {r['row_bytes']} | {r['cache_rows']} | {r['loader_bytes'] / 1e6:.2f} | "
                f"**{r['loader_bytes'] / base['loader_bytes']:.3f}x** | "
                f"{r['replay_lookahead'] / base['replay_lookahead']:.3f}x | "
                f"{r['replay_belady'] / base['replay_lookahead']:.3f}x | {100 * r['acc']:.2f} | "
                f"**{100 * (r['acc'] - base['acc']):+.2f}** | {r['epoch_s']:.3f} | "
                f"{r['epoch_s'] / base['epoch_s']:.2f}x | {r['epoch_cpu_s'] / base['epoch_cpu_s']:.2f}x |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", default="cora,citeseer,pubmed")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--cache-fraction", type=float, default=0.1, help="cache bytes / float32 feature bytes")
    p.add_argument("--torch-threads", type=int, default=1)
    p.add_argument("--pubmed-signal", type=float, default=0.05,
                   help="PubMed's synthetic features: signal * centroid[label] + N(0, 1)")
    p.add_argument("--max-batches", type=int, default=None,
                   help="batches per epoch (and replayed per epoch) at most: for the large graphs")
    p.add_argument("--workdir", type=Path, default=None,
                   help="keep the stores here and reuse them on the next run (default: a temp dir)")
    p.add_argument("--json", default=None, help="also write the rows here")
    args = p.parse_args()
    torch.set_num_threads(args.torch_threads)
    print(f"machine: {platform.machine()}, {len(os.sched_getaffinity(0))} cores, load {os.getloadavg()}, "
          f"torch {torch.__version__}, torch threads {args.torch_threads}, niceness {os.nice(0)}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bgl-codec-bench-") as tmp:
        for name in args.datasets.split(","):
            rows += run_dataset(name, args, args.workdir or Path(tmp))
    print(table(rows))
    print(f"load average after: {os.getloadavg()}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
