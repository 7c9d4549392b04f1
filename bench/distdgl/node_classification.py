"""bgl vs DistDGL side by side: same graph, 2 parts, 2 graph servers, 2 DDP trainers, same GraphSAGE.

For each graph, one run:

1. ``bgl ingest`` the dataset into a store (128-dim synthetic features and
   labels where the dataset has none); both systems read this one store, so
   graph, features, labels and train/test split are identical.
2. DistDGL: a DGLGraph built from the store's arrays, ``dgl.distributed.
   partition_graph`` (METIS, 2 parts, balance_train, balance_edges); an
   ip_config of two ``127.0.0.1 PORT`` lines (= two "machines"); two graph
   servers and two trainers (bench/distdgl/worker.py) started with the
   ``DGL_*`` environment DGL's ``tools/launch.py`` sets.
3. bgl: ``bgl partition --method bgl --parts 2``, then ``bgl launch --backend
   local`` on two "machines" (127.0.0.1 and 127.0.0.2), each with the graph
   server of its part and one trainer running examples/train_sage.py: with the
   lookahead cache + proximity order (train_sage's defaults), without (no
   cache, random order), and with them but every read over a socket
   (``--no-local-reads``, the ablation of co-located reads).

Shared memory: a DistDGL server copies its partition and features into POSIX
shared memory under names that carry no part id, for the trainers on its
machine.  Two "machines" on one host would overwrite each other's arrays, so
the DistDGL side runs in a private ``/dev/shm`` (``unshare --mount``, root),
and server 1, the second machine, in a second private one.  Trainers sit on
machine 0 (DistDGL picks the first ip_config line that is a local address), so
they read part 0 through shared memory and part 1 over loopback, as trainers
co-located with a server do in a real cluster.  bgl's trainer r reads part r
from the partition files (co-located read) and part 1-r over loopback: per
trainer, the same one part of two local as DistDGL's.

Per epoch: time (slowest trainer), seeds/s, bytes: the loopback interface's
rx counter around the epoch (machine-wide: includes gloo's gradient
all-reduce and anything else on loopback) for both systems, plus for bgl the
payload bytes its clients exchanged with the servers.  Then the test accuracy.

Usage::

    nice -n 15 .venv/bin/python bench/distdgl/node_classification.py --graphs pubmed,slashdot --epochs 3
    nice -n 15 .venv/bin/python bench/distdgl/node_classification.py --graphs cora --epochs 1 --profile
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WORKER = REPO / "bench" / "distdgl" / "worker.py"
TRAIN_SCRIPT = REPO / "examples" / "train_sage.py"
DATASETS = Path(os.environ.get("BGL_DATASETS", REPO.parent / "shared" / "datasets"))
if not DATASETS.exists():
    DATASETS = Path("/work/shared/datasets")

# name -> (ingest source, extra `bgl ingest` arguments)
GRAPHS = {
    "cora": (str(DATASETS / "cora.npz"), []),
    "pubmed": (str(DATASETS / "pubmed_adj_labels.npz"), ["--feat-dim", "128"]),
    "slashdot": (str(DATASETS / "soc-Slashdot0902.txt.gz"),
                 ["--feat-dim", "128", "--num-classes", "4", "--symmetrize"]),
    "rmat20": ("rmat:20", ["--feat-dim", "128", "--num-classes", "4"]),
}
# the targets (bgl / DistDGL)
TARGET_TIME, TARGET_BYTES, TARGET_ACC_POINTS = 0.6, 0.5, 1.0
GRAPH_NAME = "bench"


# ------------------------------------------------------------------ DistDGL conventions
def ip_config_text(ports: list[int], ip: str = "127.0.0.1") -> str:
    """DistDGL ip_config: one ``IP PORT`` line per machine (here: per part, all on ``ip``)."""
    return "".join(f"{ip} {p}\n" for p in ports)


def dgl_common_env(num_servers: int, num_clients: int, conf_path: str, ip_config: str,
                   graph_format: str = "csc") -> dict[str, str]:
    """The ``DGL_*`` variables tools/launch.py gives servers and trainers alike (no sampler processes)."""
    return {"DGL_DIST_MODE": "distributed", "DGL_NUM_SAMPLER": "0", "DGL_NUM_SERVER": str(num_servers),
            "DGL_NUM_CLIENT": str(num_clients), "DGL_CONF_PATH": conf_path, "DGL_IP_CONFIG": ip_config,
            "DGL_GRAPH_FORMAT": graph_format, "OMP_NUM_THREADS": "1"}


def dgl_server_env(server_id: int, **common) -> dict[str, str]:
    """Environment of DistDGL graph server ``server_id`` (as tools/launch.py sets it)."""
    return {**dgl_common_env(**common), "DGL_ROLE": "server", "DGL_SERVER_ID": str(server_id),
            "DGL_KEEP_ALIVE": "0"}


def dgl_trainer_env(rank: int, world: int, master_port: int, **common) -> dict[str, str]:
    """Environment of trainer ``rank``: DGL client variables plus torch.distributed's env:// ones."""
    return {**dgl_common_env(**common), "DGL_ROLE": "client", "DGL_GROUP_ID": "0",
            "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world),
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(master_port)}


def free_ports(count: int, start: int = 31000) -> list[int]:
    """``count`` loopback ports free now, below the ephemeral range (no client may take them)."""
    from bgl.launch.backends import port_is_free

    found = []
    for port in range(start, 32000):
        if port_is_free("127.0.0.1", port):
            found.append(port)
            if len(found) == count:
                return found
    raise RuntimeError(f"no {count} free loopback ports in [{start}, 32000)")


def private_shm_prefix() -> list[str]:
    """Command prefix that runs the rest in a mount namespace with its own empty /dev/shm."""
    if shutil.which("unshare") is None:
        raise RuntimeError("bench/distdgl/node_classification.py needs `unshare` (util-linux) and root: two DistDGL "
                           "servers on one host share /dev/shm names and would overwrite each other")
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount -t tmpfs -o size=16g tmpfs /dev/shm && exec "$@"', "sh"]


# ------------------------------------------------------------------ data
def ingest(graph: str, out: Path) -> Path:
    """``bgl ingest`` ``graph`` (a GRAPHS key) into ``out``; returns the store dir."""
    source, extra = GRAPHS[graph]
    run_logged([sys.executable, "-m", "bgl.cli", "ingest", source, str(out), "--overwrite",
                "--no-progress", *extra])
    return out


def store_to_dglgraph(store):
    """DGLGraph of a bgl store: same edges, ``feat``, ``label`` and train/val/test masks."""
    import numpy as np
    import torch

    from bgl.dgl.real_dgl.graph_reader import csc_to_dglgraph

    g = csc_to_dglgraph(np.asarray(store.indptr), np.asarray(store.indices), store.num_nodes)
    with warnings.catch_warnings():  # read-only memmaps: partition_graph only reads them
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        g.ndata["feat"] = torch.from_numpy(np.asarray(store.feat))
        g.ndata["label"] = torch.from_numpy(np.asarray(store.label))
    for name in ("train", "val", "test"):
        mask = torch.zeros(store.num_nodes, dtype=torch.bool)
        mask[torch.from_numpy(np.asarray(store.split(name)))] = True
        g.ndata[f"{name}_mask"] = mask
    return g


def partition_distdgl(store_dir: Path, out: Path) -> tuple[Path, float]:
    """METIS 2-part DistDGL partition of the store; (part config path, seconds)."""
    import dgl

    import bgl

    start = time.perf_counter()
    g = store_to_dglgraph(bgl.GraphStore(store_dir))
    dgl.distributed.partition_graph(g, GRAPH_NAME, 2, str(out), part_method="metis",
                                    balance_train=True, balance_edges=True)
    return out / f"{GRAPH_NAME}.json", time.perf_counter() - start


def partition_bgl(store_dir: Path, out: Path) -> float:
    start = time.perf_counter()
    run_logged([sys.executable, "-m", "bgl.cli", "partition", str(store_dir), str(out),
                "--parts", "2", "--method", "bgl", "--overwrite"])
    return time.perf_counter() - start


# ------------------------------------------------------------------ processes
def run_logged(cmd: list[str], env: dict | None = None, timeout: float = 3600) -> None:
    print("$ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, env=env, check=True, timeout=timeout)


def start_group(cmd: list[str], env: dict, log: Path) -> subprocess.Popen:
    """A process in its own session (so its whole group can be killed), output to ``log``."""
    with open(log, "w") as f:
        return subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)


def kill_group(proc: subprocess.Popen, grace: float = 3.0) -> None:
    """SIGTERM the process's group, SIGKILL it after ``grace`` seconds; reap."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=grace)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def distdgl_machine(spec: dict) -> int:
    """Inside the private /dev/shm: start 2 servers + 2 trainers, wait for the trainers, stop all.

    ``spec["worker"]``: the script both roles run (default bench/distdgl/worker.py; the link
    prediction comparison, bench/distdgl/link.py, passes its own)."""
    work = Path(spec["workdir"])
    ports = free_ports(3)
    ip_config = work / "ip_config.txt"
    ip_config.write_text(ip_config_text(ports[:2]))
    common = dict(num_servers=1, num_clients=spec["trainers"], conf_path=spec["part_config"],
                  ip_config=str(ip_config))
    worker_args = [spec.get("worker", str(WORKER)), "--ip-config", str(ip_config), "--part-config", spec["part_config"],
                   "--graph-name", GRAPH_NAME, *spec["worker_args"]]
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("DGL_")}
    procs = []
    try:
        for sid in range(2):
            prefix = private_shm_prefix() if sid == 1 else []  # server 1 = the second machine
            procs.append(start_group([*prefix, sys.executable, *worker_args],
                                     {**base_env, **dgl_server_env(sid, **common)}, work / f"server{sid}.log"))
        trainers = [start_group([sys.executable, *worker_args],
                                {**base_env, **dgl_trainer_env(r, spec["trainers"], ports[2], **common)},
                                work / f"trainer{r}.log") for r in range(spec["trainers"])]
        procs += trainers
        deadline = time.monotonic() + spec["timeout"]
        while any(t.poll() is None for t in trainers):
            if time.monotonic() > deadline or any(t.poll() not in (None, 0) for t in trainers):
                break
            if any(p.poll() is not None and p.returncode != 0 for p in procs[:2]):
                break
            time.sleep(0.5)
        codes = [t.poll() for t in trainers]
        if codes != [0] * len(trainers):
            for log in sorted(work.glob("*.log")):
                print(f"--- {log.name} (tail)\n" + "\n".join(log.read_text().splitlines()[-25:]), flush=True)
            return 1
        print((work / "trainer0.log").read_text(), flush=True)
        return 0
    finally:
        for p in reversed(procs):
            kill_group(p)


def run_distdgl(part_config: Path, work: Path, num_classes: int, args, extra: list[str]) -> dict | None:
    """DistDGL run (in a private /dev/shm); its stats dict, or None if it failed."""
    stats = work / f"distdgl{LOADER_ONLY[args.loader_only]}-stats.json"
    spec = {"workdir": str(work), "part_config": str(part_config), "trainers": 2, "timeout": args.timeout,
            "worker_args": ["--num-classes", str(num_classes), "--epochs", str(args.epochs),
                            "--batch-size", str(args.batch_size), "--fanouts", args.fanouts,
                            "--hidden", str(args.hidden), "--stats-json", str(stats), *extra]}
    spec_path = work / "distdgl-spec.json"
    spec_path.write_text(json.dumps(spec))
    cmd = [*private_shm_prefix(), sys.executable, str(Path(__file__).resolve()), "--distdgl-machine",
           str(spec_path)]
    print("$ " + " ".join(cmd), flush=True)
    code = subprocess.run(cmd, timeout=args.timeout + 120).returncode
    return json.loads(stats.read_text()) if code == 0 and stats.is_file() else None


def bgl_launch_prefix(parts: Path, work: Path, local_reads: bool = True) -> list[str]:
    """``bgl launch --backend local`` on two "machines", 127.0.0.1 and 127.0.0.2: each runs one
    graph server (1 thread, plaintext) for its part and one trainer, as a 2-machine cluster would.

    With ``local_reads`` the trainer on machine r reads part r from the partition files (bgl's
    co-located read, ``BGL_LOCAL_PARTS``) and part 1-r over loopback; DistDGL's trainers likewise
    read their machine's part from shared memory and the other one over RPC.
    """
    hosts = work / "hosts.txt"
    hosts.write_text("127.0.0.1\n127.0.0.2\n")
    port_base = free_ports(1, start=31100)[0]
    from bgl.launch.backends import port_is_free

    while not all(port_is_free(ip, p) for ip in ("127.0.0.1", "127.0.0.2") for p in range(port_base, port_base + 2)):
        port_base += 2
    return [sys.executable, "-m", "bgl.cli", "launch", "--backend", "local", "--hosts", str(hosts),
            "--partition", str(parts), "--num-trainers", "1", "--num-servers-per-host", "1",
            "--port-base", str(port_base), "--server-threads", "1", "--no-curve", "--workdir", str(REPO),
            *([] if local_reads else ["--no-local-reads"]), "--"]


def run_bgl_profile(parts: Path, work: Path, args) -> None:
    """bench/distdgl/bgl_profile.py under the same launch: seconds per batch by phase (printed)."""
    cmd = [*bgl_launch_prefix(parts, work), sys.executable, str(REPO / "bench" / "distdgl" / "bgl_profile.py"),
           "--graph", str(parts), "--batch-size", str(args.batch_size), "--fanouts", args.fanouts,
           "--hidden", str(args.hidden)]
    print("$ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, timeout=args.timeout, env=one_thread_env())


def run_bgl(parts: Path, work: Path, args, cache: str, order: str, local_reads: bool = True) -> dict | None:
    """``bgl launch --backend local``: 2 servers, 2 trainers of examples/train_sage.py; stats or None."""
    mode = f"{'local' if local_reads else 'sockets'}{LOADER_ONLY[args.loader_only]}"
    stats = work / f"bgl-{cache}-{order}-{mode}-stats.json"
    cmd = [*bgl_launch_prefix(parts, work, local_reads), sys.executable, str(TRAIN_SCRIPT), "--graph", str(parts),
           "--epochs", str(args.epochs),
           "--batch-size", str(args.batch_size), "--fanouts", args.fanouts, "--hidden", str(args.hidden),
           "--cache", cache, "--order", order, "--stats-json", str(stats),
           *(["--loader-only"] if args.loader_only else [])]
    print("$ " + " ".join(cmd), flush=True)
    code = subprocess.run(cmd, timeout=args.timeout, env=one_thread_env()).returncode
    return json.loads(stats.read_text()) if code == 0 and stats.is_file() else None


# stats file suffix of a loader-only run
LOADER_ONLY = {False: "", True: "-loader-only"}


def one_thread_env() -> dict[str, str]:
    """The environment with ``OMP_NUM_THREADS=1``, as the DistDGL side runs.

    Two "machines" share this box's cores, so each trainer gets one thread.
    torchrun sets 1 itself only with several processes per node; with one
    trainer per machine each would take every core and they would fight
    (measured: PubMed epochs 0.87 s instead of 0.26 s).
    """
    return {**os.environ, "OMP_NUM_THREADS": "1"}


# ------------------------------------------------------------------ report
def summarize(stats: dict) -> dict:
    """Steady-state figures: medians over the epochs after the first (warm-up) when there are several.

    Medians, because the shared 2-core machine's other jobs stretch single epochs several-fold.
    """
    import statistics

    eps = stats["epochs"][1:] if len(stats["epochs"]) > 1 else stats["epochs"]

    def med(key):
        return statistics.median(e[key] for e in eps)

    t = med("time")
    out = {"time": t, "best_time": min(e["time"] for e in eps), "seeds_per_s": med("seeds") / t,
           "lo_bytes": med("loopback_bytes"),
           "acc": stats["test_accuracy"], "epoch_times": [round(e["time"], 2) for e in stats["epochs"]]}
    if "wait_s" in eps[0]:  # rank 0's time blocked in next(), the same timer for both systems
        out["wait_share"] = med("wait_s") / t
        out["wait_ms"] = 1e3 * med("wait_s") / max(med("batches"), 1)
    if "client_bytes" in eps[0]:
        out["client_bytes"] = med("client_bytes")
        out["hit"] = eps[-1].get("cache_hit_rate", 0.0)
    return out


def system_table(graph: str, columns: list[str], rows: dict, cells) -> str:
    """Markdown table of one graph, a row per system: ``cells(r, base)`` gives a row's cells after the
    system's name (``base``: DistDGL's row, None when it failed); a failed system's row says so."""
    lines = [f"### {graph}", "", "| " + " | ".join(["system", *columns]) + " |", "|---" * (len(columns) + 1) + "|"]
    base = rows.get("distdgl")
    for name, r in rows.items():
        lines.append(f"| {name} | failed |" + " |" * (len(columns) - 1) if r is None else
                     "| " + " | ".join([name, *cells(r, base)]) + " |")
    return "\n".join(lines)


def wait_and_client_cells(r: dict) -> list[str]:
    """A row's trainer wait per batch (its share of the epoch) and bgl's client MB per epoch, "-" where
    the system does not measure them."""
    return [f"{r['wait_ms']:.2f} ({100 * r['wait_share']:.0f} %)" if "wait_share" in r else "-",
            f"{r['client_bytes'] / 1e6:.1f}" if "client_bytes" in r else "-"]


def report(graph: str, rows: dict[str, dict]) -> str:
    """Markdown table of one graph's rows and the bgl/DistDGL ratios."""
    def cells(r, base):
        wait, client = wait_and_client_cells(r)
        ratio = (f"{r['time'] / base['time']:.2f}, {r['best_time'] / base['best_time']:.2f}",
                 f"{r['lo_bytes'] / base['lo_bytes']:.2f}",
                 f"{100 * (r['acc'] - base['acc']):+.1f}") if base else ("-", "-", "-")
        return [f"{r['time']:.2f}", f"{r['best_time']:.2f}", wait, f"{r['seeds_per_s']:.0f}",
                f"{r['lo_bytes'] / 1e6:.1f}", client, f"{r['acc']:.4f}", *ratio]

    return system_table(graph, ["epoch s (median)", "best epoch s", "trainer wait ms / batch (share)", "seeds/s",
                                "loopback MB/epoch", "bgl client MB/epoch", "test acc",
                                "time / DistDGL (median, best)", "loopback bytes / DistDGL",
                                "acc - DistDGL (points)"], rows, cells)


def graph_stores(args, prefix: str):
    """``(graph, work dir, store dir)`` per graph of ``args.graphs``, each store ingested once: kept under
    ``args.workdir``, else under a temporary root removed when the iteration ends (or is abandoned)."""
    root = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix=prefix))
    root.mkdir(parents=True, exist_ok=True)
    try:
        for graph in args.graphs.split(","):
            work = root / graph
            work.mkdir(exist_ok=True)
            store_dir = work / "store"
            if not (store_dir / "meta.json").exists():
                ingest(graph, store_dir)
            yield graph, work, store_dir
    finally:
        if not args.workdir:
            shutil.rmtree(root, ignore_errors=True)


def comparison_parser(doc: str, graphs: str, batch_size: int, hidden: int) -> argparse.ArgumentParser:
    """The options of both DistDGL comparisons (nodes here, edges in bench/distdgl/link.py)."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--graphs", default=graphs, help=f"comma list of {sorted(GRAPHS)}")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=batch_size)
    p.add_argument("--fanouts", default="10,10")
    p.add_argument("--hidden", type=int, default=hidden)
    p.add_argument("--loader-only", action="store_true",
                   help="both systems iterate their loaders (input features, and labels where the task has "
                        "them, read) without the model step: the data path alone, what a GPU would wait on")
    p.add_argument("--workdir", default=None, help="keep stores and partitions here (default: temp dir)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per system run")
    return p


def main(argv=None) -> int:
    p = comparison_parser(__doc__, graphs="pubmed,slashdot", batch_size=1024, hidden=128)
    p.add_argument("--systems", default="distdgl,bgl,bgl-cache-proximity,bgl-sockets",
                   help="which rows: distdgl, bgl (no cache, random order), bgl-cache-proximity "
                        "(lookahead cache + proximity order), bgl-sockets (the same without co-located reads)")
    p.add_argument("--profile", action="store_true", help="also time the phases of a few batches per system")
    p.add_argument("--profile-only", action="store_true", help="only the per-batch profiles, no epoch rows")
    p.add_argument("--distdgl-machine", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.distdgl_machine:
        return distdgl_machine(json.loads(Path(args.distdgl_machine).read_text()))
    os.environ.setdefault("DGLBACKEND", "pytorch")
    systems = args.systems.split(",")
    args.profile = args.profile or args.profile_only
    tables = []
    for graph, work, store_dir in graph_stores(args, "bgl-distdgl-"):
        import bgl

        store = bgl.GraphStore(store_dir)
        print(json.dumps(store.summary()), flush=True)
        rows: dict[str, dict | None] = {}
        if "distdgl" in systems:
            conf = work / "dgl-parts" / f"{GRAPH_NAME}.json"
            if not conf.exists():
                conf, secs = partition_distdgl(store_dir, work / "dgl-parts")
                print(f"DistDGL partition_graph (METIS): {secs:.1f} s", flush=True)
            if not args.profile_only:
                stats = run_distdgl(conf, work, store.num_classes, args,
                                    ["--loader-only"] if args.loader_only else [])
                rows["distdgl"] = summarize(stats) if stats else None
            if args.profile:
                run_distdgl(conf, work, store.num_classes, args, ["--profile-batches", "5"])
        if any(s.startswith("bgl") for s in systems):
            parts = work / "bgl-parts"
            if not (parts / "partition.json").exists():
                print(f"bgl partition: {partition_bgl(store_dir, parts):.1f} s", flush=True)
            for name, cache, order, local in (("bgl", "none", "random", True),
                                              ("bgl-cache-proximity", "lookahead", "proximity", True),
                                              ("bgl-sockets", "lookahead", "proximity", False)):
                if name in systems and not args.profile_only:
                    stats = run_bgl(parts, work, args, cache, order, local)
                    rows[name] = summarize(stats) if stats else None
            if args.profile:
                run_bgl_profile(parts, work, args)
        if not rows:
            continue
        table = report(graph + (" (loader only: no model step; accuracy not meaningful)"
                                if args.loader_only else ""), rows)
        print(json.dumps({"graph": graph, "rows": rows}), flush=True)
        print(table, flush=True)
        tables.append(table)
    print("\n\n".join(tables))
    return 0


if __name__ == "__main__":
    sys.exit(main())
