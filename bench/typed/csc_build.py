"""The fused typed CSC a heterogeneous DGLGraph is read into (``bgl.sources.hetero.fused_csc``): the
counting-sort build against the stable sort it replaced (``np.lexsort`` by destination, then
relation, kept here as the anchor), time and peak bytes above the input (tracemalloc sees NumPy's
allocations), on a user-item graph with power-law item degrees and its reverse relation.

    python bench/typed/csc_build.py --edges 10000000     # edges per relation
"""
from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from bgl.sources.hetero import fused_csc, schema_of
from bgl.store import id_dtype_for


def sort_build(schema, rel_edges):
    """The sort-based build as it was before the counting sort (the anchor)."""
    offsets = schema.offsets
    src_t, dst_t = schema.relation_ends()
    n = int(offsets[-1])
    srcs, dsts, rels, eids = [], [], [], []
    for r, (s, d) in enumerate(rel_edges):
        srcs.append(s + offsets[src_t[r]])
        dsts.append(d + offsets[dst_t[r]])
        rels.append(np.full(s.shape[0], r, schema.etype_dtype()))
        eids.append(np.arange(s.shape[0], dtype=np.int64))
    dst = np.concatenate(dsts)
    rel = np.concatenate(rels)
    order = np.lexsort((rel, dst))
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=indptr[1:])
    indices = np.concatenate(srcs)[order].astype(id_dtype_for(n), copy=False)
    return indptr, indices, rel[order], np.concatenate(eids)[order]


def measure(fn, schema, rel, edges: int) -> tuple[float, float, tuple]:
    tracemalloc.start()
    t = time.perf_counter()
    out = fn(schema, rel)
    seconds = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    kept = sum(a.nbytes for a in out)
    print(f"{fn.__name__}: {seconds:.2f} s, peak {peak / 2**20:.0f} MiB above the input ({peak / edges:.1f} B "
          f"per edge), result {kept / 2**20:.0f} MiB ({kept / edges:.1f} B per edge)")
    return seconds, peak, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--edges", type=int, default=10_000_000, help="edges per relation")
    ap.add_argument("--users", type=int, default=1_000_000)
    ap.add_argument("--items", type=int, default=200_000)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    u = rng.integers(0, args.users, args.edges)
    i = (rng.pareto(1.2, args.edges) * 50).astype(np.int64) % args.items  # hub items
    schema = schema_of({"user": args.users, "item": args.items},
                       [("user", "rates", "item"), ("item", "rated-by", "user")])
    rel = [(u, i), (i, u)]
    fused_csc(schema, [(u[:10], i[:10]), (i[:10], u[:10])])  # compiled (or loaded) before timing
    edges = 2 * args.edges
    t_new, p_new, new = measure(fused_csc, schema, rel, edges)
    t_old, p_old, old = measure(sort_build, schema, rel, edges)
    assert all(np.array_equal(a, b) for a, b in zip(new, old)), "the two builds differ"
    print(f"ratio fused_csc / sort_build: time {t_new / t_old:.2f}x, peak memory {p_new / p_old:.2f}x")
    print("loadavg", open("/proc/loadavg").read().strip())


if __name__ == "__main__":
    main()
