"""bgl.dgl.nn's layers against DGL 2.1's, forward + backward, side by side -> bench/results/dgl_nn.md.

Two blocks: a fanout-10 sampled block of PubMed (../shared/datasets/pubmed_adj_labels.npz, random
128-wide features) and an R-MAT block (Graph500 parameters, ``--rmat-scale``; scale 20 with
edge factor 10 is ~10M edges).  The parent writes each block once to ``--workdir``; every
(stack, block, layer) then runs in its own subprocess: bgl in the current-stack venv, DGL in the
pinned venv (the only one with DGL), so each measures its own peak memory.  Per run: median
seconds of ``--small-repeats`` (PubMed) / ``--repeats`` (R-MAT) forward+backward passes after one
warm-up, and peak memory above the process's footprint after a warm-up pass (CUDA:
``max_memory_allocated``; CPU: VmHWM after resetting it through /proc/self/clear_refs, glibc's mmap
threshold fixed so RSS follows live tensors; the PubMed block is timed in a second run under glibc's
own settings, see ``measure``).

    python bench/dgl/nn.py                         # full size (the lead's quiet-box run)
    python bench/dgl/nn.py --tiny --out /tmp/x.md  # proof that it runs (seconds)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATASETS = Path(os.environ.get("BGL_DATASETS", ROOT.parent / "shared" / "datasets"))  # ../shared beside the checkout
LAYERS = ("GraphConv", "SAGEConv-mean", "SAGEConv-pool", "GATConv", "GATv2Conv", "GINConv", "RelGraphConv",
          "RelGraphConv-bdd")
WIDTH, OUT, HEADS, RELS, BASES, BDD_BLOCKS = 128, 64, 4, 8, 2, 4


# ----------------------------------------------------------------------------- parent: the inputs
def pubmed_block(fanout: int, seeds: int, seed: int = 0):
    """(src, dst, num_src, num_dst) of a fanout-capped 1-hop block of ``seeds`` random PubMed nodes."""
    import numpy as np

    adj = np.load(DATASETS / "pubmed_adj_labels.npz")
    indptr, indices = adj["indptr"].astype(np.int64), adj["indices"].astype(np.int64)
    rng = np.random.default_rng(seed)
    dst_nodes = rng.choice(indptr.shape[0] - 1, seeds, replace=False)
    counts = indptr[dst_nodes + 1] - indptr[dst_nodes]
    owner = np.repeat(np.arange(seeds), counts)
    within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    nbrs = indices[np.repeat(indptr[dst_nodes], counts) + within]
    keep = np.lexsort((rng.random(nbrs.shape[0]), owner))  # random order inside each owner
    rank = np.empty_like(keep)
    rank[keep] = np.arange(keep.shape[0]) - np.repeat(np.cumsum(counts) - counts, counts)
    chosen = rank < fanout
    owner, nbrs = owner[chosen], nbrs[chosen]
    # src ids: the dst nodes first (the block convention), then the new neighbours
    extra = np.setdiff1d(np.unique(nbrs), dst_nodes)
    order = np.concatenate([dst_nodes, extra])
    local = np.empty(indptr.shape[0] - 1, np.int64)
    local[order] = np.arange(order.shape[0])
    return local[nbrs], owner, int(order.shape[0]), int(seeds)


def rmat_block(scale: int, edge_factor: int, seed: int = 0):
    """(src, dst, n, n): every R-MAT edge as a block whose dst nodes are all ``2**scale`` nodes."""
    import numpy as np

    from bgl.sources import _rmat_kernels as K
    from bgl.sources.rmat import GRAPH500_ABCD

    n, m = 1 << scale, edge_factor << scale
    a, b, c, _ = GRAPH500_ABCD
    perm = np.random.default_rng([seed, 0x5EED]).permutation(n).astype(np.int64)
    src, dst = np.empty(m, np.int64), np.empty(m, np.int64)
    K.rmat_edges(0, m, scale, a, a + b, a + b + c, seed, perm, src, dst)
    return src, dst, n, n


def write_inputs(path: Path, block) -> None:
    import numpy as np

    src, dst, num_src, num_dst = block
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, src=src, dst=dst, num_src=num_src, num_dst=num_dst)
    os.replace(tmp, path)  # an interrupted run leaves no half-written input


# ----------------------------------------------------------------------------- child: one measurement
def make_layer(nn, name: str):
    if name == "GraphConv":
        return nn.GraphConv(WIDTH, OUT, allow_zero_in_degree=True)
    if name.startswith("SAGEConv"):
        return nn.SAGEConv(WIDTH, OUT, name.split("-")[1])
    if name == "GATConv":
        return nn.GATConv(WIDTH, OUT // HEADS, HEADS, allow_zero_in_degree=True)
    if name == "GATv2Conv":
        return nn.GATv2Conv(WIDTH, OUT // HEADS, HEADS, allow_zero_in_degree=True)
    if name == "GINConv":
        import torch

        return nn.GINConv(torch.nn.Linear(WIDTH, OUT), "sum")
    if name == "RelGraphConv-bdd":
        return nn.RelGraphConv(WIDTH, OUT, RELS, regularizer="bdd", num_bases=BDD_BLOCKS)
    return nn.RelGraphConv(WIDTH, OUT, RELS, regularizer="basis", num_bases=BASES)


def peak_reset(device) -> int:
    """Reset the peak-memory counter; the bytes in use now."""
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        return torch.cuda.memory_allocated()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current RSS
    return _status_kib("VmRSS") * 1024


def peak_now(device) -> int:
    import torch

    if device.type == "cuda":
        return torch.cuda.max_memory_allocated()
    return _status_kib("VmHWM") * 1024


def _status_kib(field: str) -> int:
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def child(args) -> None:
    import numpy as np
    import torch

    if args.child == "dgl":
        import dgl
        import dgl.nn as nn
    else:
        import bgl.dgl as dgl
        import bgl.dgl.nn as nn
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    data = np.load(args.input)
    src, dst = torch.from_numpy(data["src"]), torch.from_numpy(data["dst"])
    block = dgl.create_block((src, dst), num_src_nodes=int(data["num_src"]),
                             num_dst_nodes=int(data["num_dst"])).to(device)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(int(data["num_src"]), WIDTH, generator=gen).to(device).requires_grad_()
    extra = ()
    if args.layer.startswith("RelGraphConv"):
        extra = (torch.randint(0, RELS, (src.shape[0],), generator=gen).to(device),)
    torch.manual_seed(0)
    layer = make_layer(nn, args.layer).to(device)

    def step():
        out = layer(block, x, *extra)
        out.float().sum().backward()
        if device.type == "cuda":
            torch.cuda.synchronize()

    step()  # warm-up: one-time library set-up and the graph's cached formats (a run's first batch)
    layer.zero_grad(set_to_none=True)
    x.grad = None
    base = peak_reset(device)
    peak = 0
    times = []
    for _ in range(args.repeats):
        layer.zero_grad(set_to_none=True)
        x.grad = None
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    peak = max(peak, peak_now(device) - base)
    print(json.dumps({"seconds": float(np.median(times)), "peak_bytes": int(peak)}))


# ----------------------------------------------------------------------------- parent: the table
def run_child(python: str, stack: str, block_file: Path, layer: str, args, repeats: int,
              fixed_mmap_threshold: bool = True) -> dict:
    cmd = [python, __file__, "--child", stack, "--input", str(block_file), "--layer", layer,
           "--repeats", str(repeats), "--device", args.device, "--threads", str(args.threads)]
    # glibc hands big freed blocks back to the OS only below its mmap threshold, which it raises
    # after the first free: fixed at 128 KiB, RSS follows the live tensors and VmHWM is a peak
    # (but every tensor over 128 KiB is then a fresh mmap, faulted in again each pass: not how a
    # user's process runs, so a small block is timed in a second run without it)
    # and every thread pool (torch's, DGL's OpenMP kernels, numba) gets the same --threads
    threads = str(args.threads)
    env = dict(os.environ, DGLBACKEND="pytorch", PYTHONPATH=str(ROOT),
               OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads, NUMBA_NUM_THREADS=threads)
    if fixed_mmap_threshold:
        env["MALLOC_MMAP_THRESHOLD_"] = "131072"
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    limit = int(args.max_rss_gib * (1 << 30)) if args.max_rss_gib else None
    deadline = time.monotonic() + args.timeout
    while True:
        try:
            out, err = proc.communicate(timeout=0.2)  # a retry after the timeout loses no output
            break
        except subprocess.TimeoutExpired:
            over = limit is not None and _rss_of(proc.pid) > limit
            if over or time.monotonic() > deadline:
                proc.kill()
                proc.communicate()
                if over:  # the row says so; the other layers still run
                    return {"over_rss_bytes": limit}
                raise RuntimeError(f"{stack} {layer} on {block_file.name} ran over {args.timeout} s")
    if proc.returncode != 0:  # e.g. DGL's "bdd" asking for E x in x out / B floats at 10M edges: a row, not the end
        last = (err.strip().splitlines() or ["no output"])[-1]
        print(f"{stack} {layer} on {block_file.name} failed: {err.strip()[-2000:]}", file=sys.stderr)
        return {"failed": last[:160]}
    return json.loads(out.strip().splitlines()[-1])


def _rss_of(pid: int) -> int:
    """Resident bytes of process ``pid`` (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:")), 0)
    except OSError:
        return 0


def measure(python: str, stack: str, block_file: Path, layer: str, args, small: bool) -> dict:
    """One (stack, block, layer) result.  A small block: time from a run under glibc's own malloc
    settings, peak from a run with the mmap threshold fixed (at 128 KiB the PubMed block's tensors were
    all fresh mmaps, faulted in every pass: 4.2 ms a GINConv pass against 1.2 ms in a plain process, for
    both libraries).  The R-MAT block's tensors (>= 32 MiB, glibc's largest threshold) are mmaps under
    either setting: one run."""
    if not small:
        return run_child(python, stack, block_file, layer, args, args.repeats)
    peak = run_child(python, stack, block_file, layer, args, args.small_repeats)
    if "peak_bytes" not in peak:
        return peak
    timed = run_child(python, stack, block_file, layer, args, args.small_repeats, fixed_mmap_threshold=False)
    return timed if "seconds" not in timed else {"seconds": timed["seconds"], "peak_bytes": peak["peak_bytes"]}


def ratio(ours: dict, theirs: dict, key: str) -> str:
    """``ours / theirs`` of one measure as "1.23x", or why there is none (a run stopped over the RSS cap,
    or failed)."""
    for name, result in (("bgl", ours), ("DGL", theirs)):
        if "over_rss_bytes" in result:
            return f"{name} over {result['over_rss_bytes'] / (1 << 30):.0f} GiB"
        if "failed" in result:
            return f"{name} failed"
    return f"{ours[key] / max(theirs[key], 1e-12):.2f}x"


def cell(result: dict, key: str, scale: float) -> str:
    if "failed" in result:
        return f"failed: {result['failed'].replace('|', '/')}" if key == "peak_bytes" else "-"
    if "over_rss_bytes" in result:
        return f"> {result['over_rss_bytes'] / (1 << 20):.0f} MiB RSS, stopped" if key == "peak_bytes" else "-"
    return f"{result[key] * scale:.{1 if key == 'peak_bytes' else 2}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", choices=["bgl", "dgl"], help=argparse.SUPPRESS)
    parser.add_argument("--input", help=argparse.SUPPRESS)
    parser.add_argument("--layer", choices=LAYERS, help=argparse.SUPPRESS)
    parser.add_argument("--tiny", action="store_true", help="small blocks and 2 repeats: proves the script runs")
    parser.add_argument("--rmat-scale", type=int, default=20)
    parser.add_argument("--rmat-edge-factor", type=int, default=10)
    parser.add_argument("--pubmed-seeds", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5, help="measured passes on the R-MAT block (median)")
    parser.add_argument("--small-repeats", type=int, default=50,
                        help="measured passes on the PubMed block, a few ms each "
                             "(5-pass medians spread 0.86-1.06x run to run)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1, help="torch threads in each measured process")
    parser.add_argument("--layers", default=",".join(LAYERS), help="comma-separated subset of " + ",".join(LAYERS))
    parser.add_argument("--bgl-python", default=str(ROOT / ".venv-current-3.13" / "bin" / "python"))
    parser.add_argument("--dgl-python", default=str(ROOT / ".venv" / "bin" / "python"))
    parser.add_argument("--workdir", default=str(ROOT / "bench" / "out" / "dgl_nn"))
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "dgl_nn.md"))
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per measured process")
    parser.add_argument("--max-rss-gib", type=float, default=None,
                        help="stop a measured process whose RSS passes this (its row says so)")
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    if args.tiny:
        args.rmat_scale, args.rmat_edge_factor, args.pubmed_seeds, args.repeats, args.small_repeats = 10, 4, 64, 2, 2
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    load = open("/proc/loadavg").read().split()[0]
    blocks = {f"PubMed fanout-10 block ({args.pubmed_seeds} seeds)": pubmed_block(10, args.pubmed_seeds),
              f"R-MAT block (scale {args.rmat_scale}, edge factor {args.rmat_edge_factor})":
                  rmat_block(args.rmat_scale, args.rmat_edge_factor)}
    rows = []
    for i, (title, block) in enumerate(blocks.items()):
        block_file = workdir / f"block{i}.npz"
        write_inputs(block_file, block)
        title += f": {block[2]:,} src, {block[3]:,} dst, {block[0].shape[0]:,} edges"
        for layer in args.layers.split(","):
            ours = measure(args.bgl_python, "bgl", block_file, layer, args, small=i == 0)
            theirs = measure(args.dgl_python, "dgl", block_file, layer, args, small=i == 0)
            row = (title, layer, ours, theirs)
            rows.append(row)
            print(f"{layer:16s} time {ratio(ours, theirs, 'seconds')} DGL  "
                  f"peak {ratio(ours, theirs, 'peak_bytes')} DGL  ({title})", flush=True)
    write_table(Path(args.out), rows, args, load)


def write_table(path: Path, rows, args, load: str) -> None:
    command = " ".join(["python bench/dgl/nn.py", *sys.argv[1:]])
    lines = ["# bgl.dgl.nn vs DGL 2.1: one layer's forward + backward on a block", "",
             f"`{command}` on {args.device}, {args.threads} torch "
             f"thread(s), median of {args.small_repeats} (PubMed) / {args.repeats} (R-MAT) passes after a warm-up; "
             f"bgl on the current stack "
             f"({args.bgl_python}), DGL on the pinned stack ({args.dgl_python}); each run in its own process. "
             f"Peak = memory above the process's footprint after the warm-up pass. "
             f"Input width {WIDTH}, output {OUT}, {HEADS} heads, {RELS} relations (RelGraphConv: basis "
             f"{BASES}; -bdd: {BDD_BLOCKS} diagonal blocks).", "",
             f"Load average at start: {load} on {os.cpu_count()} cores"
             + (" (a loaded box: ratios are indicative only)." if float(load) > 0.5 * (os.cpu_count() or 1) else "."),
             ""]
    current = None
    for title, layer, ours, theirs in rows:
        if title != current:
            lines += ["", f"## {title}", "",
                      "| layer | bgl ms | DGL ms | time ratio | bgl peak MiB | DGL peak MiB | peak ratio |",
                      "|---|---:|---:|---:|---:|---:|---:|"]
            current = title
        mib = 1 << 20
        lines.append(f"| {layer} | {cell(ours, 'seconds', 1e3)} | {cell(theirs, 'seconds', 1e3)} | "
                     f"{ratio(ours, theirs, 'seconds')} | {cell(ours, 'peak_bytes', 1 / mib)} | "
                     f"{cell(theirs, 'peak_bytes', 1 / mib)} | {ratio(ours, theirs, 'peak_bytes')} |")
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, path)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
