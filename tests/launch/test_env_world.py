"""What ``bgl launch --backend env`` reads from the environment torchrun, TorchX, Kubeflow or
srun leave it, and the one-line errors for what is missing."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bgl.errors import LaunchError
from bgl.launch.env_world import read_world, tasks_on_node

MASTER = {"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}


def test_torchrun_worker():
    w = read_world({**MASTER, "RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1",
                    "LOCAL_WORLD_SIZE": "4", "GROUP_RANK": "1", "GROUP_WORLD_SIZE": "2",
                    "TORCHELASTIC_USE_AGENT_STORE": "True", "TORCHELASTIC_RESTART_COUNT": "2",
                    "TORCHELASTIC_RUN_ID": "job9"})
    assert (w.rank, w.world_size, w.local_rank, w.local_world_size, w.node_rank, w.num_nodes) == \
        (5, 8, 1, 4, 1, 2)
    assert w.agent_store and w.attempt == "2" and w.run_id == "job9" and not w.is_node_leader
    env = w.trainer_env()
    assert env["RANK"] == "5" and env["TORCHELASTIC_USE_AGENT_STORE"] == "True"
    assert env["TORCHELASTIC_RESTART_COUNT"] == "2" and env["MASTER_PORT"] == "29500"


def test_kubeflow_pod_without_torchrun():
    """A PyTorchJob pod: RANK/WORLD_SIZE per pod, nothing local -> one process per node."""
    w = read_world({**MASTER, "RANK": "2", "WORLD_SIZE": "3"})
    assert (w.local_rank, w.local_world_size, w.node_rank, w.num_nodes) == (0, 1, 2, 3)
    assert w.is_node_leader and not w.agent_store and w.source == "torch"


def test_plain_srun_task():
    w = read_world({**MASTER, "SLURM_PROCID": "3", "SLURM_NTASKS": "4", "SLURM_LOCALID": "1",
                    "SLURM_NODEID": "1", "SLURM_STEP_NUM_NODES": "2",
                    "SLURM_STEP_TASKS_PER_NODE": "2(x2)", "SLURM_JOB_ID": "77"})
    assert (w.rank, w.world_size, w.local_rank, w.local_world_size, w.node_rank, w.num_nodes) == \
        (3, 4, 1, 2, 1, 2)
    assert w.source == "slurm" and w.run_id == "77"
    assert w.trainer_env()["RANK"] == "3" and w.trainer_env()["WORLD_SIZE"] == "4"


def test_tasks_per_node_lists():
    assert [tasks_on_node("2(x3),1", n) for n in range(4)] == [2, 2, 2, 1]
    with pytest.raises(LaunchError, match="cannot read 'x'"):
        tasks_on_node("2,x", 1)
    with pytest.raises(LaunchError, match="no entry for node 2"):
        tasks_on_node("2(x2)", 2)


@pytest.mark.parametrize("env, needle", [
    ({}, "neither RANK/WORLD_SIZE nor SLURM_PROCID is set"),
    ({"RANK": "0", "WORLD_SIZE": "2"}, "MASTER_ADDR is not set"),
    ({"MASTER_ADDR": "h", "RANK": "0", "WORLD_SIZE": "2"}, "MASTER_PORT must be a port 1..65535, got None"),
    ({**MASTER, "MASTER_PORT": "70000", "RANK": "0", "WORLD_SIZE": "2"}, "got '70000'"),
    ({**MASTER, "RANK": "0"}, "WORLD_SIZE is not set"),
    ({**MASTER, "RANK": "2", "WORLD_SIZE": "2"}, "rank 2 is outside 0..1"),
    ({**MASTER, "RANK": "x", "WORLD_SIZE": "2"}, "RANK='x' is not an integer"),
    ({**MASTER, "RANK": "0", "WORLD_SIZE": "0"}, "WORLD_SIZE must be >= 1, got 0"),
    ({**MASTER, "SLURM_PROCID": "0"}, "SLURM_NTASKS is not set"),
])
def test_bad_environment(env, needle):
    with pytest.raises(LaunchError) as info:
        read_world(env)
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_cli_without_master_addr_is_one_line(two_part_partition, tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("MASTER_ADDR", "MASTER_PORT") and not k.startswith("SLURM_")}
    env.update(RANK="0", WORLD_SIZE="2", LOCAL_RANK="0")
    (tmp_path / "x.py").write_text("")  # the script exists: the missing rendezvous is what is named
    done = subprocess.run([sys.executable, "-m", "bgl", "launch", "--backend", "env", "--partition",
                           str(two_part_partition), "--", "python", "x.py"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bgl launch: error: --backend env: MASTER_ADDR is not set"), \
        done.stderr


def test_cli_more_parts_than_nodes(two_part_partition, tmp_path):
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}, **MASTER,
           "RANK": "0", "WORLD_SIZE": "1"}
    (tmp_path / "x.py").write_text("")  # the script exists: the part count is what is named
    done = subprocess.run([sys.executable, "-m", "bgl", "launch", "--backend", "env", "--partition",
                           str(two_part_partition), "--", "python", "x.py"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "has 2 parts but the job has 1 node(s)" in lines[0] \
        and "--servers-per-node 2" in lines[0], done.stderr
