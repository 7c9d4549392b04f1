"""The lookahead cache's own bookkeeping (announce + admit, CPU ms per batch) of this tree's ``cache/``
against another commit's, interleaved in one process, on recorded R-MAT 20 streams; rows must be equal.

    git archive REV cache | tar -x -C /tmp/old        # the other commit's cache/ as /tmp/old/cache (a fresh copy:
                                                      # numba's cache files there name the package they were built under)
    python bench/cache/bookkeeping.py /tmp/old/cache --workdir /tmp/bgl-bookkeeping [--reps 3]

Streams: proximity order, 2,000 batches of 32 seeds (fanouts 10,5) and 200 of 256 (10,10); a 10 %
lookahead cache of 4-wide float32 rows, in-degree scores, 4 batches announced ahead.  The anchor is a
memmap gather of each batch's rows, 4 wide (the cache's) and 32 wide (bench/cache/policies.py's R-MAT 20).
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch

from bgl.cache.lookahead import LookaheadCache
from bgl.cache.replay import epoch_order, input_node_sampler, memmap_gather_ms, replay
from bgl.store import GraphStore

REGIMES = {"b32": (32, [10, 5], 2000), "b256": (256, [10, 10], 200)}


def other_cache(path: Path):
    """(LookaheadCache, replay) of a ``cache/`` directory imported as the package ``othercache``."""
    spec = importlib.util.spec_from_file_location("othercache", path / "__init__.py",
                                                  submodule_search_locations=[str(path)])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["othercache"] = mod
    spec.loader.exec_module(mod)
    return importlib.import_module("othercache.lookahead").LookaheadCache, importlib.import_module("othercache.replay").replay


def streams(work: Path) -> tuple[GraphStore, dict]:
    """The R-MAT 20 store (4-wide features) and each regime's recorded batches, built once under ``work``."""
    if not (work / "rmat20" / "meta.json").exists():
        from bgl.sources.rmat import generate_rmat_store

        generate_rmat_store(work / "rmat20", 20, edge_factor=16, seed=0, overwrite=True, feat_dim=4, num_classes=4)
    store = GraphStore(work / "rmat20")
    out = {}
    for regime, (bs, fanouts, nb) in REGIMES.items():
        f = work / f"rmat20-{regime}.npz"
        if not f.exists():
            sample = input_node_sampler(store, fanouts)
            order = epoch_order(store, "proximity", np.asarray(store.train_idx, np.int64), 0, 8)
            ids = [sample(order[b:b + bs], b) for b in range(0, nb * bs, bs)]
            np.savez(f, flat=np.concatenate(ids), lens=[len(x) for x in ids], seeds=[min(bs, len(x)) for x in ids])
        z = np.load(f)
        parts = np.split(z["flat"], np.cumsum(z["lens"])[:-1])
        out[regime] = [(torch.from_numpy(p.copy()), int(s)) for p, s in zip(parts, z["seeds"])]
    return store, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("other_cache_dir", type=Path)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/bgl-bookkeeping"))
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    other, other_replay = other_cache(args.other_cache_dir)
    store, batches_of = streams(args.workdir)
    n = store.num_nodes
    deg = torch.from_numpy(np.diff(np.asarray(store.indptr)).astype(np.float64))
    rows = torch.from_numpy(np.asarray(store.feat, dtype=np.float32)[:, :4].copy())
    f32 = args.workdir / "feat32.npy"
    if not f32.exists():
        np.save(f32, np.random.default_rng(0).standard_normal((n, 32), dtype=np.float32))
    wide = SimpleNamespace(feat=np.load(f32, mmap_mode="r"))
    for regime, batches in batches_of.items():
        best, moved = {"other": 1e9, "this": 1e9}, {}
        for _ in range(args.reps):
            for name, cls, run in (("other", other, other_replay), ("this", LookaheadCache, replay)):
                cache = cls(int(0.1 * n), n, 4, scores=deg)
                stats, _ = run(cache, batches, lambda ids: rows.index_select(0, ids), lookahead=4)
                best[name] = min(best[name], 1e3 * stats["policy_cpu_seconds"] / len(batches))
                moved.setdefault(name, (stats["bytes_from_source"], stats["hits"]))
        print(f"{regime}: ids/batch {np.mean([b[0].numel() for b in batches]):.0f}; memmap gather 4-wide "
              f"{memmap_gather_ms(store, batches):.3f} ms, 32-wide {memmap_gather_ms(wide, batches):.3f} ms; "
              f"bookkeeping other {best['other']:.3f} ms, this {best['this']:.3f} ms "
              f"({best['other'] / best['this']:.2f}x); rows equal: {moved['other'] == moved['this']}")


if __name__ == "__main__":
    main()
