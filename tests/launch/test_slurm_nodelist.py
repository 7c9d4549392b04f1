"""Slurm node lists and allocation variables, read as Slurm reads them.

Where Debian's ``scontrol`` is installed, every list is also expanded by ``scontrol show
hostnames`` (with a throwaway slurm.conf; no daemon needed) and the two must agree.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from bgl.errors import LaunchError
from bgl.launch.slurm_env import SlurmAllocation, allocation_hosts, expand_nodelist

LISTS = {
    "node[01-03,7]": ["node01", "node02", "node03", "node7"],
    "n[8-10]": ["n8", "n9", "n10"],
    "n[008-010]": ["n008", "n009", "n010"],
    "n[01-3]": ["n01", "n02", "n03"],
    "n[1-010]": [f"n{i}" for i in range(1, 11)],
    "n[7,01-02]": ["n7", "n01", "n02"],
    "r[1-2]n[1-2]": ["r1n1", "r1n2", "r2n1", "r2n2"],
    "login1,gpu[0-1],cpu[3]": ["login1", "gpu0", "gpu1", "cpu3"],
    "a,b,a": ["a", "b", "a"],
    "single": ["single"],
}


@pytest.mark.parametrize("text", sorted(LISTS))
def test_expand_nodelist(text):
    assert expand_nodelist(text) == LISTS[text]


def test_suffix_after_brackets():
    """Newer Slurm accepts text after a bracket group (22.05's scontrol does not)."""
    assert expand_nodelist("gpu[1-2]-ib,x[3]y") == ["gpu1-ib", "gpu2-ib", "x3y"]


@pytest.fixture(scope="module")
def scontrol_env(tmp_path_factory):
    if shutil.which("scontrol") is None:
        pytest.skip("scontrol (slurm-client) is not installed")
    conf = tmp_path_factory.mktemp("slurmconf") / "slurm.conf"
    conf.write_text("ClusterName=x\nSlurmctldHost=localhost\nNodeName=n1\nPartitionName=p Nodes=n1\n")
    return {**os.environ, "SLURM_CONF": str(conf)}


@pytest.mark.parametrize("text", sorted(LISTS))
def test_agrees_with_scontrol_show_hostnames(text, scontrol_env):
    done = subprocess.run(["scontrol", "show", "hostnames", text], capture_output=True, text=True,
                          env=scontrol_env, timeout=30)
    assert done.returncode == 0, done.stderr
    assert expand_nodelist(text) == done.stdout.split()


@pytest.mark.parametrize("text, needle", [
    ("", "empty"), ("   ", "empty"), ("a,,b", "empty entry"), ("a,", "empty entry"),
    ("n[1-2", "never closed"), ("n1-2]", "without '['"), ("n[]", "empty brackets"),
    ("n[3-1]", "backwards"), ("n[a-b]", "'a-b' is not a number"), ("n[[1]]", "nested"),
    ("[1-2]", "no host-name prefix"), ("n 1", "whitespace"), ("n[1-9999999]", "more than"),
])
def test_malformed_nodelist_is_a_clear_error(text, needle):
    with pytest.raises(LaunchError, match="node list|empty") as info:
        expand_nodelist(text)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


def allocation_env(**extra) -> dict:
    return {"SLURM_JOB_ID": "42", "SLURM_JOB_NODELIST": "c[1-2]", "SLURM_NNODES": "2", **extra}


def test_allocation_from_environ():
    alloc = SlurmAllocation.from_environ(allocation_env(SLURM_CPUS_ON_NODE="8", SLURM_GPUS_ON_NODE="4"))
    assert alloc.job_id == "42" and alloc.nodes == ("c1", "c2")
    assert alloc.default_trainers() == 4
    assert alloc.default_server_threads(servers_per_node=2, trainers=4) == 2
    plain = SlurmAllocation.from_environ(allocation_env())
    assert plain.default_trainers() == 1 and plain.default_server_threads(1, 1) is None


@pytest.mark.parametrize("env, needle", [
    ({"SLURM_JOB_NODELIST": "c1"}, "SLURM_JOB_ID is not set"),
    ({"SLURM_JOB_ID": "1"}, "SLURM_JOB_NODELIST is not set"),
    ({"SLURM_JOB_ID": "1", "SLURM_JOB_NODELIST": ""}, "node list is empty"),
    (allocation_env(SLURM_NNODES="3"), "SLURM_NNODES=3 but"),
    (allocation_env(SLURM_JOB_NODELIST="c1,c1", SLURM_NNODES="2"), "names c1 more than once"),
    (allocation_env(SLURM_CPUS_ON_NODE="many"), "SLURM_CPUS_ON_NODE='many' is not an integer"),
])
def test_bad_allocation_environment(env, needle):
    with pytest.raises(LaunchError) as info:
        SlurmAllocation.from_environ(env)
    assert needle in str(info.value)


def test_more_parts_than_nodes_needs_servers_per_node():
    alloc = SlurmAllocation.from_environ(allocation_env())
    with pytest.raises(LaunchError, match=r"has 4 parts but the allocation \(c1,c2\) has 2 node\(s\) "
                                          r"x 1 server\(s\) per node.*--servers-per-node 2"):
        allocation_hosts(alloc, num_parts=4, servers_per_node=1)


def test_cli_outside_an_allocation_is_a_one_line_error(two_part_partition, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    done = subprocess.run([sys.executable, "-m", "bgl", "launch", "--backend", "slurm",
                           "--partition", str(two_part_partition), "--", "python", "x.py"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "bgl launch: error: --backend slurm runs inside a Slurm allocation (salloc, or an sbatch "
        "script), but SLURM_JOB_ID is not set"]


def test_cli_more_parts_than_nodes(two_part_partition, tmp_path):
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SLURM_")},
           "SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "solo", "SLURM_NNODES": "1"}
    done = subprocess.run([sys.executable, "-m", "bgl", "launch", "--backend", "slurm",
                           "--partition", str(two_part_partition), "--", "python", "x.py"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "has 2 parts but the allocation (solo) has 1 node(s)" in lines[0] \
        and "--servers-per-node 2" in lines[0], done.stderr
