"""``bgl launch --backend env`` under two real torchrun agents on loopback (no hosts file).

Each agent is ``torchrun --nnodes 2 --node_rank N --nproc_per_node 2`` running
``bgl launch --backend env`` as its 2 workers: 4 trainers, and 2 graph servers (one per part,
each started by its node's local rank 0) found through torchrun's own TCPStore.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest

from bgl.launch.backends import port_is_free

TIMEOUT = 150


def start_agents(tmp_path, partition_dir, trainer_script, mode: str, master: int, port_base: int):
    agents = []
    for node in range(2):
        out = open(tmp_path / f"agent{node}.out", "wb")
        agents.append(subprocess.Popen(
            [sys.executable, "-m", "torch.distributed.run", "--nnodes=2", f"--node_rank={node}",
             "--nproc_per_node=2", "--master_addr=127.0.0.1", f"--master_port={master}",
             "--max_restarts=0", "-m", "bgl", "launch", "--backend", "env",
             "--partition", str(partition_dir), "--port-base", str(port_base),
             "--server-threads", "1", "--server-timeout", "120", "--grace", "2",
             "--", "python", str(trainer_script), mode],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=tmp_path,
            env={**os.environ, "DGLBACKEND": "pytorch", "OMP_NUM_THREADS": "1"}))
        out.close()
    return agents


def wait_all(agents, tmp_path) -> tuple[list[int], str]:
    deadline = time.monotonic() + TIMEOUT
    try:
        codes = [a.wait(timeout=max(1, deadline - time.monotonic())) for a in agents]
    finally:
        for a in agents:
            if a.poll() is None:
                a.kill()
                a.wait()
    out = "".join((tmp_path / f"agent{n}.out").read_text(errors="replace") for n in range(2))
    return codes, out


def test_two_torchrun_agents_share_servers_through_the_store(tmp_path, partition_dir, trainer_script,
                                                             free_port_base, orphans):
    base = free_port_base(4)
    agents = start_agents(tmp_path, partition_dir, trainer_script, "finish", base, base + 1)
    codes, out = wait_all(agents, tmp_path)
    assert codes == [0, 0], out[-6000:]
    for rank in range(4):
        assert f"rank {rank}/4 inputs=" in out, out[-6000:]
    assert out.count("seeds_all_ranks=128") == 4, out[-6000:]  # 4 ranks x 32 seeds, one all_reduce
    for rank in range(4):  # each process's last line: its own trainer's lifecycle (issue #41)
        line = re.search(rf"bgl launch: rank {rank}: lifecycle: wall ([\d.]+) s; first batch ([\d.]+) s .*ETT", out)
        assert line and 0 < float(line.group(2)) <= float(line.group(1)), out[-6000:]
    assert "bgl-lifecycle" not in out, out[-6000:]  # the marker lines stay hidden
    # one server per part, each on its node's own port, with CURVE
    assert out.count(f"part-0 nodes [0, 200) on tcp://127.0.0.1:{base + 1} (CURVE") == 1, out[-6000:]
    assert out.count(f"part-1 nodes [200, 400) on tcp://127.0.0.1:{base + 2} (CURVE") == 1, out[-6000:]
    assert orphans() == []
    assert all(port_is_free("127.0.0.1", p) for p in range(base, base + 3))


@pytest.mark.extended
def test_a_failing_trainer_stops_every_agent(tmp_path, partition_dir, trainer_script, free_port_base,
                                             orphans):
    """Every rank exits 5 after its first batch: both agents fail, servers and all are gone."""
    base = free_port_base(4)
    agents = start_agents(tmp_path, partition_dir, trainer_script, "fail", base, base + 1)
    codes, out = wait_all(agents, tmp_path)
    assert all(c != 0 for c in codes), out[-6000:]
    assert "exited with exit status 5" in out, out[-6000:]
    assert orphans() == []
    assert all(port_is_free("127.0.0.1", p) for p in range(base, base + 3))
