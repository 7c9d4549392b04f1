"""``bgl partition --distributed`` on R ranks of this machine: wall time, memory per rank, traffic,
and the remote-sample share of its answer, next to the one-machine methods' rows.

Runs ``mpirun -n R python -m bgl partition STORE OUT --parts P --distributed --engine E`` once per rank count,
reads ``partition.json`` (edge cut, balances, each rank's peak RSS, bytes exchanged), then measures
the remote-sample share of the written assignment in a separate process with the one-machine
metric (``bgl.partition.metrics.remote_sample_share``, same seeds and batch counts as
``bench/partition/methods.py``: the graph still fits one machine here, which is what makes the comparison
possible).  Stores are built as ``bench/partition/methods.py`` builds them (R-MAT: edge factor 16, seed 0).

    .venv/bin/python bench/partition/distributed.py --dataset rmat20 --ranks 2 --parts 4 \\
        --work /tmp/bgl-bench-partition

With ``--shards K`` it writes the store's edges as K text shards and times ``bgl ingest
--distributed`` from them instead (the same graph: the rows compare reading shards with reading
the store).

``--dataset rmat-hetero:SCALE`` partitions a typed R-MAT store (``bgl ingest rmat-hetero:SCALE``).

``--mem-max-mib M`` caps each rank's memory: one memory cgroup per rank (cgroup v2 ``memory.max``,
or v1 ``memory.limit_in_bytes``; needs root), which the rank joins before it starts Python; the groups
are removed afterwards, and each group's own peak (``memory.peak`` / ``max_usage_in_bytes``, page
cache included) and limit hits are reported next to the ranks' peak RSS.

``--netns`` puts every rank on a host of its own: one Linux network namespace per rank on a bridge
(``10.81.0.0/24``), as tests/partition/test_distributed_netns.py runs them: ``mpirun`` in the first,
an rsh agent entering the namespace of each ``--host`` address, ``--mca btl tcp,self`` and the
subnet in ``btl_tcp_if_include`` / ``oob_tcp_if_include``, so every exchanged byte crosses a veth
(the row reports the veths' byte count next to the ranks' own).  Needs root and iproute2; the
namespaces are deleted afterwards.

Prints one markdown row per rank count, then each rank's peak RSS phase by phase
(``metrics["distributed"]["phases"]``: reading the slice, numba's set-up, the symmetric CSR, the
engine, id translation, shipping the rows, writing) in MiB and in bytes per local in-edge above the rank's
resident size before reading, and writes the raw rows as JSON (--out).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.<area>.<script> imports
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "NUMBA_NUM_THREADS": "1",
           "OMP_NUM_THREADS": "1", "DGLBACKEND": "pytorch"}
HEADER = ("| dataset | engine | ranks | parts | wall s | engine s | write s | peak RSS per rank MiB | "
          "exchanged MiB | edge cut | remote-sample share | balance n/e/t | load before/after |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def share_worker(store_path: str, out: str, num_batches: int) -> dict:
    """In a fresh process: the one-machine remote-sample share of a partition directory's assignment."""
    import numpy as np

    from bgl.partition import metrics as M
    from bgl.partition.format import open_partition
    from bgl.partition.graph_input import GraphInput
    from bgl.store import GraphStore

    store = GraphStore(store_path, validate="none")
    book = open_partition(out)
    part_of = np.empty(book.num_nodes, np.int64)
    for k in range(book.num_parts):
        part_of[np.asarray(book.orig_ids[book.bounds[k] : book.bounds[k + 1]])] = k
    graph = GraphInput.from_store(store)
    share = M.remote_sample_share(store, graph, part_of, book.num_parts, num_batches=num_batches, seed=0)
    return {"remote_sample_share": share, "num_batches": num_batches}


def write_shards(store, work: Path, count: int) -> str:
    """The store's edges (``src dst`` per line, CSC order) as ``count`` text shards, written once;
    returns their glob.  Ingesting them with ``--no-symmetrize`` gives the store's edges back."""
    import numpy as np

    root = work / f"shards-{store.path.name}-{count}"
    if not (root / "done").exists():
        root.mkdir(parents=True, exist_ok=True)
        ptr = np.asarray(store.indptr)
        bounds = np.linspace(0, store.num_edges, count + 1).astype(np.int64)
        for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
            dst = np.searchsorted(ptr, np.arange(a, b), side="right") - 1
            src = np.asarray(store.indices[a:b], np.int64)
            text = np.char.add(np.char.add(src.astype(str), " "), dst.astype(str))
            (root / f"part-{k:03d}.txt").write_text("\n".join(text.tolist()) + "\n")
        (root / "done").write_text("")
    return str(root / "part-*.txt")


def typed_store(name: str, work: Path):
    """A typed R-MAT store (``rmat-hetero:SCALE``, as ``bgl ingest`` makes it), ingested once."""
    from bgl.sources.datasets import ingest
    from bgl.store import GraphStore

    path = work / "stores" / name.replace(":", "")
    return GraphStore(path) if (path / "meta.json").exists() else ingest(name, path, overwrite=True)


class RankGroups:
    """One memory cgroup per rank, capped at ``limit`` bytes (v2 ``memory.max`` or v1
    ``memory.limit_in_bytes``), created on entry and removed on exit; :meth:`wrap` is the command
    line a rank runs to join its group (by ``OMPI_COMM_WORLD_RANK``) before exec'ing ``cmd``."""

    def __init__(self, ranks: int, limit: int):
        v2 = Path("/sys/fs/cgroup/cgroup.controllers").exists()
        self.root = Path("/sys/fs/cgroup") if v2 else Path("/sys/fs/cgroup/memory")
        self.v2, self.ranks, self.limit = v2, ranks, limit
        self.prefix = f"bgl-bench-rank-{os.getpid()}-"

    def path(self, r: int) -> Path:
        return self.root / f"{self.prefix}{r}"

    def __enter__(self):
        if self.v2:  # the memory controller must be on for the root's children
            (self.root / "cgroup.subtree_control").write_text("+memory")
        for r in range(self.ranks):
            self.path(r).mkdir()
            (self.path(r) / ("memory.max" if self.v2 else "memory.limit_in_bytes")).write_text(str(self.limit))
        return self

    def wrap(self, cmd: list[str]) -> list[str]:
        procs = shlex.quote(str(self.root / self.prefix))
        return ["sh", "-c", f'echo $$ > {procs}"$OMPI_COMM_WORLD_RANK"/cgroup.procs && exec "$@"', "rank", *cmd]

    def usage(self) -> dict:
        """Each group's own peak (page cache included) and how often it hit its limit."""
        peak, fail = [], []
        for r in range(self.ranks):
            g = self.path(r)
            if self.v2:
                peak.append(int((g / "memory.peak").read_text()) if (g / "memory.peak").exists() else None)
                ev = dict(line.split() for line in (g / "memory.events").read_text().splitlines())
                fail.append(int(ev.get("max", 0)) + int(ev.get("oom_kill", 0)))
            else:
                peak.append(int((g / "memory.max_usage_in_bytes").read_text()))
                fail.append(int((g / "memory.failcnt").read_text()))
        return {"limit_bytes": self.limit, "group_peak_bytes_per_rank": peak, "limit_hits_per_rank": fail}

    def __exit__(self, *exc):
        for r in range(self.ranks):
            for _ in range(50):  # the ranks' processes may take a moment to leave
                try:
                    self.path(r).rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)


SUBNET = "10.81.0"  # apart from the tests' 10.77 (launch), 10.78 (Slurm), 10.79 (distributed netns)
AGENT = """#!/bin/sh
host=$1
shift
case $host in
{cases}
  *) echo "rsh agent: no namespace has address $host" >&2; exit 255;;
esac
exec nsenter --net=/run/netns/$ns env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$HOME" /bin/sh -c "$*"
"""


class Hosts:
    """``ranks`` network namespaces on a bridge in the first (addresses ``SUBNET.1`` ...), created
    on entry, everything in them killed and the namespaces deleted on exit."""

    def __init__(self, ranks: int, work: Path):
        self.names = [f"bglrm{os.getpid() % 10000}n{r}" for r in range(ranks)]
        self.addresses = [f"{SUBNET}.{r + 1}" for r in range(ranks)]
        self.agent = work / "rsh-agent.sh"

    @staticmethod
    def _ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True, text=True)

    def __enter__(self):
        for ns in self.names:
            self._ip("netns", "add", ns)
            self._ip("-n", ns, "link", "set", "lo", "up")
        hub = self.names[0]
        self._ip("-n", hub, "link", "add", "br0", "type", "bridge")
        self._ip("-n", hub, "addr", "add", f"{self.addresses[0]}/24", "dev", "br0")
        self._ip("-n", hub, "link", "set", "br0", "up")
        for i, (ns, addr) in enumerate(zip(self.names[1:], self.addresses[1:])):
            self._ip("-n", hub, "link", "add", f"veth{i}", "type", "veth", "peer", "name", "eth0", "netns", ns)
            self._ip("-n", hub, "link", "set", f"veth{i}", "master", "br0", "up")
            self._ip("-n", ns, "addr", "add", f"{addr}/24", "dev", "eth0")
            self._ip("-n", ns, "link", "set", "eth0", "up")
        cases = "\n".join(f"  {a}) ns={n};;" for n, a in zip(self.names, self.addresses))
        self.agent.write_text(AGENT.format(cases=cases))
        self.agent.chmod(0o755)
        return self

    def link_bytes(self) -> int:
        """Bytes through the other namespaces' veths so far (rx + tx of their eth0)."""
        total = 0
        for ns in self.names[1:]:  # /proc/net/dev is the reading process's namespace's (/sys is not)
            done = subprocess.run(["nsenter", f"--net=/run/netns/{ns}", "cat", "/proc/net/dev"],
                                  capture_output=True, text=True, check=True)
            for line in done.stdout.splitlines():
                name, _, fields = line.partition(":")
                if name.strip() == "eth0":
                    total += int(fields.split()[0]) + int(fields.split()[8])
        return total

    def mpirun_prefix(self) -> list[str]:
        forward = [a for name in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "DGLBACKEND") for a in ("-x", name)]
        for name in ("BGL_PARHIP_DIR", "PYTHONPATH"):  # the rsh agent starts each host with an empty environment
            if os.environ.get(name):
                forward += ["-x", name]
        subnet = f"{SUBNET}.0/24"
        return ["nsenter", f"--net=/run/netns/{self.names[0]}", "mpirun", "-n", str(len(self.names)),
                "--host", ",".join(self.addresses), "--mca", "plm_rsh_agent", str(self.agent),
                "--mca", "plm_rsh_no_tree_spawn", "1", "--mca", "btl", "tcp,self",
                "--mca", "btl_tcp_if_include", subnet, "--mca", "oob_tcp_if_include", subnet, *forward]

    def __exit__(self, *exc):
        for ns in self.names:
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), 9)
            time.sleep(0.2)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def run(store, ranks: int, parts: int, work: Path, engine: str, timeout: float, shards: int = 0,
        mode: str | None = None, mem_max: int = 0, netns: bool = False, balance: str | None = None,
        coarsen: str | None = None) -> dict:
    out = work / (f"dist-{store.path.name}-{engine}{'-' + mode if mode else ''}-r{ranks}-p{parts}"
                  + (f"-s{shards}" if shards else "") + (f"-{balance}" if balance else "")
                  + (f"-coarsen-{coarsen}" if coarsen else ""))
    engine_args = ["--engine", engine, *(["--engine-mode", mode] if mode else []),
                   *(["--balance", balance] if balance else []), *(["--coarsen", coarsen] if coarsen else [])]
    if shards:
        cmd = ["mpirun", "--oversubscribe", "-n", str(ranks), sys.executable, "-m", "bgl", "ingest",
               write_shards(store, work, shards), str(out), "--parts", str(parts), "--num-nodes", str(store.num_nodes),
               "--no-symmetrize", "--distributed", *engine_args, "--overwrite"]
    else:
        cmd = ["mpirun", "--oversubscribe", "-n", str(ranks), sys.executable, "-m", "bgl", "partition",
               str(store.path), str(out), "--parts", str(parts), "--distributed", *engine_args, "--overwrite"]
    load = [Path("/proc/loadavg").read_text().split()[0]]
    link = None
    with contextlib.ExitStack() as stack:
        groups = stack.enter_context(RankGroups(ranks, mem_max)) if mem_max else None
        hosts = stack.enter_context(Hosts(ranks, work)) if netns else None
        if groups is not None:
            cmd = cmd[:4] + groups.wrap(cmd[4:])  # after `mpirun --oversubscribe -n R`
        if hosts is not None:
            cmd = hosts.mpirun_prefix() + cmd[4:]
            before = hosts.link_bytes()
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, **MPI_ENV})
        wall = time.perf_counter() - t0
        cgroup = groups.usage() if groups is not None else None
        if hosts is not None:
            link = hosts.link_bytes() - before
    load.append(Path("/proc/loadavg").read_text().split()[0])
    if done.returncode != 0:
        return {"ranks": ranks, "parts": parts, "error": done.stderr.strip()[-1000:], "cgroup": cgroup,
                "load": load, "wall_seconds": wall, "netns": netns}
    meta = json.loads((out / "partition.json").read_text())
    batches = 200 if store.num_edges < 5_000_000 else 40
    worker = subprocess.run([sys.executable, __file__, "--share-worker", str(store.path), str(out), str(batches)],
                            capture_output=True, text=True, timeout=timeout, env={**os.environ, **MPI_ENV})
    if worker.returncode != 0:
        return {"ranks": ranks, "parts": parts, "error": worker.stderr.strip()[-1000:]}
    m = meta["metrics"]
    engine = engine + (f" {m['distributed']['engine_mode']}" if m["distributed"].get("engine_mode") else "")
    engine += f", balance {meta['params'].get('balance', 'nodes')}"
    if m["distributed"].get("coarsen"):
        engine += ", coarsened"
    return {"dataset": store.path.name + (f" ({shards} text shards)" if shards else ""), "engine": engine,
            "ranks": ranks, "parts": parts, "wall_seconds": wall, "load": load, "cgroup": cgroup,
            "netns": netns, "link_bytes": link,
            "num_nodes": meta["num_nodes"], "num_edges": meta["num_edges"], **m,
            **json.loads(worker.stdout.strip().splitlines()[-1])}


def fmt(r: dict) -> str:
    if "error" in r:
        return f"| ? | ? | {r['ranks']} | {r['parts']} | error: {r['error'].splitlines()[-1]} | load {r['load']} |"
    d = r["distributed"]
    rss = " / ".join(f"{b / 2**20:.0f}" for b in d["peak_rss_bytes_per_rank"])
    return (f"| {r['dataset']} | {r['engine']} | {r['ranks']} | {r['parts']} | {r['wall_seconds']:.1f} | "
            f"{r['seconds']:.1f} | {r['write_seconds']:.1f} | {rss} | {d['bytes_exchanged'] / 2**20:.0f} | "
            f"{r['edge_cut']:.3f} | {r['remote_sample_share']:.3f} | "
            f"{r['balance_nodes']:.2f}/{r['balance_edges']:.2f}/{r['balance_train']:.2f} | {'/'.join(r['load'])} |")


def fmt_phases(r: dict) -> str:
    """Each rank's peak RSS per phase: MiB, and bytes per local in-edge above its start (before reading)."""
    d = r.get("distributed", {})
    if "phases" not in d:
        return ""
    edges = d["local_edges_per_rank"]
    base = d["phases"][0]["start_bytes_per_rank"]
    lines = [f"phases of {r['dataset']}, {r['ranks']} ranks (peak MiB, B per local in-edge above the start; "
             f"start {' / '.join(f'{b / 2**20:.0f}' for b in base)} MiB, local in-edges "
             f"{' / '.join(str(e) for e in edges)}, CSR entries {' / '.join(str(e) for e in d['csr_entries_per_rank'])}):",
             "| phase | seconds (max) | " + " | ".join(f"rank {i} MiB | rank {i} B/edge" for i in range(len(edges))) + " |",
             "|---|---|" + "---|---|" * len(edges)]
    for p in d["phases"]:
        cells = [f"{pk / 2**20:.0f} | {(pk - b) / max(e, 1):.1f}" for pk, b, e in zip(p["peak_bytes_per_rank"], base, edges)]
        lines.append(f"| {p['name']} | {max(p['seconds_per_rank']):.1f} | " + " | ".join(cells) + " |")
    if d.get("coarsen"):
        c = d["coarsen"]
        lines.append(f"coarsened (cluster cap {c['cluster_cap']}): nodes "
                     f"{' / '.join(f'{a} -> {b}' for a, b in zip(c['fine_nodes_per_rank'], c['coarse_nodes_per_rank']))}, "
                     f"entries {' / '.join(f'{a} -> {b}' for a, b in zip(c['fine_entries_per_rank'], c['coarse_entries_per_rank']))}")
    if r.get("netns"):
        lines.append(f"one network namespace per rank; the veths carried {r['link_bytes'] / 2**20:.0f} MiB "
                     f"(rx + tx; the ranks counted {d['bytes_exchanged'] / 2**20:.0f} MiB sent)")
    if r.get("cgroup"):
        c = r["cgroup"]
        lines.append(f"cgroup limit {c['limit_bytes'] / 2**20:.0f} MiB per rank; group peaks (page cache included) "
                     f"{' / '.join(f'{b / 2**20:.0f}' for b in c['group_peak_bytes_per_rank'] if b is not None)} MiB; "
                     f"limit hits {c['limit_hits_per_rank']}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--share-worker", nargs=3, metavar=("STORE", "OUT", "BATCHES"), help=argparse.SUPPRESS)
    ap.add_argument("--dataset", default="rmat20",
                    help="a bench/partition/methods.py dataset name, or rmat-hetero:SCALE (a typed store)")
    ap.add_argument("--ranks", default="2", help="comma-separated rank counts")
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--engine", default="ptscotch", help="ptscotch | parhip (bgl.partition.engines)")
    ap.add_argument("--engine-mode", default=None, help="the engine's preset (parhip: fastsocial, ...)")
    ap.add_argument("--work", default="/tmp/bgl-bench-partition")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--shards", type=int, default=0,
                    help="> 0: write the store's edges as this many text shards and time `bgl ingest --distributed` "
                         "from them instead of `bgl partition --distributed` from the store")
    ap.add_argument("--balance", default=None, help="--balance of the distributed path (default: its default)")
    ap.add_argument("--coarsen", default=None, help="--coarsen of the distributed path (auto | on | off; "
                    "default: its default)")
    ap.add_argument("--mem-max-mib", type=int, default=0,
                    help="> 0: cap each rank's memory at this many MiB with a memory cgroup per rank (root)")
    ap.add_argument("--netns", action="store_true",
                    help="one network namespace per rank on a bridge, MPI over TCP between them (root, iproute2)")
    ap.add_argument("--out", default=None, help="JSON file for the raw rows (default: WORK/distributed.json)")
    args = ap.parse_args()
    if args.share_worker:
        store, out, batches = args.share_worker
        print(json.dumps(share_worker(store, out, int(batches))))
        return 0
    from bench.partition.methods import build_store  # the same stores as the one-machine rows

    work = Path(args.work)
    typed = args.dataset.startswith("rmat-hetero:")
    store = typed_store(args.dataset, work) if typed else build_store(args.dataset, work)
    print(f"load before: {Path('/proc/loadavg').read_text().strip()}", flush=True)
    print(HEADER, flush=True)
    rows = []
    for ranks in (int(r) for r in args.ranks.split(",")):
        rows.append(run(store, ranks, args.parts, work, args.engine, args.timeout, args.shards, args.engine_mode,
                        args.mem_max_mib * 2**20, args.netns, args.balance, args.coarsen))
        print(fmt(rows[-1]), flush=True)
    for r in rows:
        print(fmt_phases(r), flush=True)
    print(f"load after: {Path('/proc/loadavg').read_text().strip()}", flush=True)
    Path(args.out or work / "distributed.json").write_text(json.dumps(rows, indent=2))
    return 0 if all("error" not in r for r in rows) else 1


def _exit_on_sigterm() -> None:
    """SIGTERM (``kill``, a job's time limit) unwinds like Ctrl-C, so the ``with`` blocks still delete
    the namespaces and memory groups this bench made (a plain SIGTERM left both behind)."""
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


if __name__ == "__main__":
    _exit_on_sigterm()
    sys.exit(main())
