"""``bgl launch --backend slurm`` in a real Slurm: slurmctld, two slurmd, munge (Debian's
slurm-wlm 22.05), each daemon in its own network namespace (see ``slurm_cluster`` in conftest).

* the demo job (examples/train_sage.py on the embedded Cora) submitted with ``sbatch`` through
  ``examples/slurm/train.sbatch`` trains to the local demo's accuracy bar;
* ``scancel`` of a running launch, and a SIGKILLed slurmd mid-epoch, each end the launch within
  10 s, non-zero, naming the node, with no process of the launch and no port left.

The cluster is shared by the tests (started once per session); a test that kills a slurmd
starts it again.  Skips saying why without root or when slurm-wlm cannot be installed.
"""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PORT_BASE = 30050  # free by construction: the namespaces are new
# gloo must use the namespaces' own interface (the machine's hostname resolves elsewhere)
GLOO_ENV = {"GLOO_SOCKET_IFNAME": "eth0"}


def slurm_env(cluster) -> dict:
    return {**cluster.env, **GLOO_ENV, "DGLBACKEND": "pytorch"}


def in_login_node(cluster) -> list[str]:
    return ["nsenter", f"--net=/run/netns/{cluster.nets.names['L']}"]


def assert_nothing_left(cluster, orphans) -> None:
    """Only the daemons run and listen: nothing of the launch anywhere."""
    assert orphans() == []
    daemons = {"L": cluster.daemon_pids("slurmctld"), "A": cluster.daemon_pids("bgla"),
               "B": cluster.daemon_pids("bglb")}
    deadline = time.monotonic() + 10
    while True:
        extra = {key: sorted(set(cluster.nets.pids(key)) - pids) for key, pids in daemons.items()}
        if not any(extra.values()) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    described = {k: [open(f"/proc/{p}/cmdline").read().replace("\0", " ")[:120] for p in v
                     if Path(f"/proc/{p}").exists()] for k, v in extra.items()}
    assert not any(described.values()), f"processes left in the namespaces: {described}"
    assert cluster.nets.listening("A") == {6818} and cluster.nets.listening("B") == {6818}
    assert cluster.nets.listening("L") == {6817}


def salloc_launch(cluster, launcher, partition_dir, trainer_script, tmp_path, mode: str):
    """``salloc -N2 bgl launch --backend slurm ...`` on the login node."""
    args = ["--backend", "slurm", "--partition", partition_dir, "--port-base", PORT_BASE,
            "--server-threads", 1, "--server-timeout", 120, "--grace", 2, "--workdir", tmp_path,
            "--", "python", trainer_script, mode]
    return launcher(args, env=slurm_env(cluster),
                    prefix=[*in_login_node(cluster), "salloc", "-N2", "--job-name", tmp_path.name])


def job_id(cluster, name: str) -> str:
    done = subprocess.run([*in_login_node(cluster), "squeue", "-h", "-n", name, "-o", "%i"],
                          capture_output=True, text=True, env=cluster.env, timeout=30)
    return done.stdout.split()[0]


@pytest.fixture(scope="module")
def cora_parts(tmp_path_factory) -> Path:
    """The demo's data: the embedded Cora ingested and split in 2 by BGL's partitioner."""
    from bgl.data import default_dataset_path
    from bgl.partition import partition_graph
    from bgl.sources.datasets import ingest

    root = tmp_path_factory.mktemp("cora")
    store = ingest(str(default_dataset_path()), root / "store", overwrite=True)
    partition_graph(store, "bgl", 2, root / "parts", seed=0, overwrite=True)
    return root / "parts"


def test_demo_job_trains_under_sbatch(slurm_cluster, cora_parts, tmp_path, orphans):
    """examples/slurm/train.sbatch on a 2-node allocation: the demo's model, data and options
    (as `bgl demo` runs them locally) reach the local demo's accuracy bar."""
    parts = tmp_path / "parts"
    parts.symlink_to(cora_parts, target_is_directory=True)
    out = tmp_path / "job.out"
    env = {**slurm_env(slurm_cluster), "BGL_PARTS": str(parts), "BGL_PYTHON": sys.executable,
           "BGL_LAUNCH_ARGS": f"--server-threads 1 --port-base {PORT_BASE} --grace 2",
           "BGL_TRAIN_ARGS": "--order proximity --batch-size 32 --cache lookahead"}
    done = subprocess.run([*in_login_node(slurm_cluster), "sbatch", "--wait", "--job-name", tmp_path.name,
                           f"--output={out}", str(REPO / "examples" / "slurm" / "train.sbatch")],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=240)
    log = f"sbatch exit {done.returncode}: {done.stdout}{done.stderr}\n--- job output\n" + \
        (out.read_text(errors="replace")[-6000:] if out.exists() else "(none)")
    assert done.returncode == 0, log
    text = out.read_text()
    assert "[bgla:server:0]" in text and "[bglb:server:1]" in text, log
    epochs = re.findall(r"\[bgla:trainer:0\] epoch (\d+): time", text)
    assert epochs == ["0", "1", "2"], log
    acc = re.search(r"\[bgla:trainer:0\] test accuracy ([\d.]+) \((\d+)/(\d+) test nodes\)", text)
    assert acc and int(acc.group(3)) == 540, log  # both ranks' shares of Cora's test split
    assert float(acc.group(1)) > 0.6, log  # the bar tests/launch/test_demo.py sets for `bgl demo`
    # the launch's last line under Slurm too: where the wall time went, from the trainers' events (#41)
    ett = re.search(r"bgl launch: lifecycle: wall ([\d.]+) s; first batch ([\d.]+) s .*; training ([\d.]+) s "
                    r".*ETT ([\d.]+) %", text)
    assert ett and float(ett.group(3)) > 0 and 0 < float(ett.group(4)) <= 100, log
    assert_nothing_left(slurm_cluster, orphans)


@pytest.mark.extended
def test_scancel_stops_the_launch(slurm_cluster, launcher, partition_dir, trainer_script,
                                  tmp_path, orphans):
    """scancel mid-epoch: non-zero within 10 s, a node named, nothing left."""
    run = salloc_launch(slurm_cluster, launcher, partition_dir, trainer_script, tmp_path, "loop")
    run.wait_for_output("ready 0")
    run.wait_for_output("ready 1")
    assert "[bgla:trainer:0]" in run.stdout and "[bglb:trainer:1]" in run.stdout, run.describe()
    subprocess.run([*in_login_node(slurm_cluster), "scancel", job_id(slurm_cluster, tmp_path.name)],
                   check=True, env=slurm_cluster.env, timeout=30)
    t0 = time.monotonic()
    code = run.wait(timeout=60)
    elapsed = time.monotonic() - t0
    assert code != 0, run.describe()
    assert re.search(r"bgl launch: failed: .*node bgl[ab] \(10\.78\.0\.[23]\)", run.stderr), run.describe()
    assert elapsed < 10, f"the launch took {elapsed:.1f} s to stop\n{run.describe()}"
    assert "restarting it" not in run.stderr, run.describe()  # the job is over: no server restart
    assert_nothing_left(slurm_cluster, orphans)


def stop_node_bglb_mid_epoch(cluster, run, orphans, take_down, message: str) -> None:
    """Once both trainers loop, ``take_down()`` node bglb: the launch must end within 10 s with
    ``message``; bglb's slurmd is started again whatever happened."""
    try:
        run.wait_for_output("ready 0")
        run.wait_for_output("ready 1")
        take_down()
        t0 = time.monotonic()
        code = run.wait(timeout=60)
        elapsed = time.monotonic() - t0
        assert code == 1, run.describe()
        assert f"bgl launch: failed: node bglb (10.78.0.3): {message}" in run.stderr, run.describe()
        assert elapsed < 10, f"the launch took {elapsed:.1f} s to stop\n{run.describe()}"
        assert orphans() == []
    finally:
        cluster.procs["bglb"].wait(timeout=10)
        cluster.start_slurmd("bglb")
        cluster.wait_idle()
    assert_nothing_left(cluster, orphans)


@pytest.mark.extended
def test_killed_slurmd_stops_the_launch(slurm_cluster, launcher, partition_dir, trainer_script,
                                        tmp_path, orphans):
    """SIGKILL to node bglb's slurmd (only) mid-epoch: the launch ends within 10 s naming bglb,
    and every process of the launch on both nodes is gone (its step daemon stopped them on the
    EOF the launcher sent)."""
    run = salloc_launch(slurm_cluster, launcher, partition_dir, trainer_script, tmp_path, "loop")
    stop_node_bglb_mid_epoch(slurm_cluster, run, orphans, slurm_cluster.procs["bglb"].kill,
                             "slurmd stopped answering")


@pytest.mark.extended
def test_env_mode_under_plain_srun(slurm_cluster, partition_dir, trainer_script, tmp_path, orphans):
    """`srun -N2 bgl launch --backend env`: ranks from SLURM_PROCID/SLURM_NTASKS/SLURM_NODEID,
    rank 0 hosts the store at MASTER_ADDR:MASTER_PORT, each node's task its part's server."""
    env = {**slurm_env(slurm_cluster), "MASTER_ADDR": "10.78.0.2", "MASTER_PORT": "29500"}
    done = subprocess.run(
        [*in_login_node(slurm_cluster), "srun", "-N2", "--ntasks-per-node=1", "--job-name", tmp_path.name,
         sys.executable, "-m", "bgl", "launch", "--backend", "env", "--partition", str(partition_dir),
         "--port-base", str(PORT_BASE), "--server-threads", "1", "--grace", "2",
         "--", "python", str(trainer_script), "finish"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=240)
    log = f"exit {done.returncode}\n{done.stdout[-5000:]}\n{done.stderr[-3000:]}"
    assert done.returncode == 0, log
    assert "rank 0/2 inputs=" in done.stdout and "rank 1/2 inputs=" in done.stdout and done.stdout.count("seeds_all_ranks=64") == 2, log
    assert f"on tcp://10.78.0.2:{PORT_BASE} (CURVE" in done.stdout, log
    assert f"on tcp://10.78.0.3:{PORT_BASE + 1} (CURVE" in done.stdout, log
    assert_nothing_left(slurm_cluster, orphans)


@pytest.mark.extended
def test_lost_node_stops_the_launch(slurm_cluster, launcher, partition_dir, trainer_script,
                                    tmp_path, orphans):
    """Node bglb vanishes (every process in its namespace SIGKILLed: slurmd, step daemons, the
    launch's processes): the launch ends within 10 s naming bglb, also when the trainer on
    bgla fails first (its peer's connections broke)."""
    run = salloc_launch(slurm_cluster, launcher, partition_dir, trainer_script, tmp_path, "loop")
    stop_node_bglb_mid_epoch(slurm_cluster, run, orphans, lambda: slurm_cluster.lose_node("bglb"),
                             "slurmd ")
