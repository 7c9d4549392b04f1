"""Feature-row gathers, per path of the fetch stage: ``numpy.take(..., out=)`` against
``torch.index_select(..., out=)`` and plain tensor indexing, each on the thread counts asked.

    python bench/loader/gather.py [--nodes 200000] [--rows 8000] [--dims 128,767] [--threads 1,2] [--reps 20]

Paths: rows in memory (float32, float16: a DGLGraph's ``ndata``), a memory-mapped store's rows
(float32, read from a ``.npy`` written under ``--workdir``, pages resident after a first pass), the
encoded rows of ``bgl.codec`` (int8, bfloat16 bits as int16), and the loader's own gather
(:class:`bgl.loader.stages.row_buffers.RowBuffers`: recycled output buffers).  Each line: the median ms of
``--reps`` gathers of ``--rows`` random rows, and every method's output checked bit for bit
against ``numpy.take``'s.  Run on a quiet box: the figures are wall-clock times.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from bgl.loader.stages.row_buffers import RowBuffers
from bgl.threads import thread_limits


def median_ms(fn, reps: int) -> float:
    fn()  # first touch of the output and the source pages
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def sources(nodes: int, dim: int, workdir: Path) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    f32 = rng.standard_normal((nodes, dim), dtype=np.float32)
    path = workdir / f"feat-{nodes}x{dim}.npy"
    np.save(path, f32)
    mapped = np.asarray(np.load(path, mmap_mode="r"))
    mapped.sum()  # resident: this measures the gather, not the disk
    return {"memory float32": f32, "memory float16": f32.astype(np.float16), "memmap float32": mapped,
            "encoded int8": rng.integers(-128, 128, (nodes, dim), np.int8),
            "encoded bfloat16 bits": (f32.view(np.int32) >> 16).astype(np.int16)}


def methods(rows: np.ndarray, ids: np.ndarray):
    """{name: callable returning the gathered rows as a numpy array} over one source."""
    out = np.empty((ids.shape[0],) + rows.shape[1:], rows.dtype)
    with warnings.catch_warnings():  # a read-only memmap: only read here
        warnings.simplefilter("ignore", UserWarning)
        t_rows = torch.from_numpy(rows)
    t_ids, t_out = torch.from_numpy(ids), torch.from_numpy(out)
    pool = RowBuffers()
    return {
        "numpy.take(out=)": lambda: np.take(rows, ids, axis=0, out=out, mode="clip"),
        "index_select(out=)": lambda: torch.index_select(t_rows, 0, t_ids, out=t_out).numpy(),
        "tensor[ids]": lambda: t_rows[t_ids].numpy(),
        "RowBuffers.take": lambda: pool.take(rows, ids),
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=200_000)
    ap.add_argument("--rows", type=int, default=8_000)
    ap.add_argument("--dims", default="128,767")
    ap.add_argument("--threads", default="1,2", help="torch thread counts to measure with")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--workdir", default=None, help="where the memory-mapped source is written (default: a temp dir)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        for dim in (int(d) for d in args.dims.split(",")):
            srcs = sources(args.nodes, dim, Path(tmp))
            ids = np.random.default_rng(1).integers(0, args.nodes, args.rows)
            for name, rows in srcs.items():
                want = np.take(rows, ids, axis=0)
                for threads in (int(t) for t in args.threads.split(",")):
                    with thread_limits(threads):
                        cells = []
                        for method, fn in methods(rows, ids).items():
                            got = fn()
                            if not np.array_equal(got.view(np.uint8), want.view(np.uint8)):
                                raise SystemExit(f"{method} on {name} is not numpy.take's rows")
                            cells.append(f"{method} {median_ms(fn, args.reps):6.2f}")
                    print(f"{args.rows} rows x {dim:4d} {name:22s} {threads} thr: " + " | ".join(cells) + "  ms")
                del rows
            srcs.clear()


if __name__ == "__main__":
    main()
