"""Placement: one server per part round-robin over hosts, ports, torchrun command lines."""
from __future__ import annotations

import pytest

from bgl.errors import LaunchError
from bgl.launch.hosts import Host, parse_hosts_text
from bgl.launch.spec import (ENV_LOCAL_PARTS, ENV_PARTITION, ENV_SERVERS, build_cluster_spec, server_argv,
                             trainer_argv, trainer_env)


def spec_for(text, num_parts, **kw):
    return build_cluster_spec(parse_hosts_text(text), "/data/parts", num_parts,
                              ["python", "train.py", "--lr", "0.1"], python="/venv/bin/python",
                              **kw)


def test_round_robin_servers_and_ports():
    spec = spec_for("10.0.0.1\n10.0.0.2 40000\n", 4, num_servers_per_host=2, port_base=30050,
                    num_trainers=3)
    placed = [(s.part, s.host.ip, s.port) for s in spec.servers]
    assert placed == [(0, "10.0.0.1", 30050), (1, "10.0.0.2", 40000),
                      (2, "10.0.0.1", 30051), (3, "10.0.0.2", 40001)]
    assert spec.server_addresses == ["tcp://10.0.0.1:30050", "tcp://10.0.0.2:40000",
                                     "tcp://10.0.0.1:30051", "tcp://10.0.0.2:40001"]
    # The rendezvous takes the first port after the first host's server slots.
    assert (spec.master_addr, spec.master_port) == ("10.0.0.1", 30052)
    assert [t.node_rank for t in spec.trainers] == [0, 1]


def test_too_few_server_slots_says_what_to_pass():
    with pytest.raises(LaunchError, match="3 parts but 1 host.*--num-servers-per-host 3"):
        spec_for("127.0.0.1\n", 3)


def test_colliding_ports_are_rejected():
    with pytest.raises(LaunchError, match="127.0.0.1:30051"):
        spec_for("127.0.0.1\n", 2, num_servers_per_host=2, master_port=30051)
    with pytest.raises(LaunchError, match="outside 1..65535"):
        spec_for("127.0.0.1 65535\n", 2, num_servers_per_host=2)


@pytest.mark.parametrize("field, value", [("num_trainers", 0), ("num_servers_per_host", -1)])
def test_counts_must_be_positive(field, value):
    with pytest.raises(LaunchError, match=f"{field} must be an integer >= 1, got {value}"):
        spec_for("127.0.0.1\n", 1, **{field: value})


def test_empty_command_is_rejected():
    with pytest.raises(LaunchError, match="no training command"):
        build_cluster_spec(parse_hosts_text("127.0.0.1"), "/p", 1, [])


def test_command_lines_and_environment():
    spec = spec_for("10.0.0.1\n10.0.0.2\n", 2, num_trainers=2)
    argv = server_argv(spec, spec.servers[1])
    assert argv[:3] == ["/venv/bin/python", "-m", "bgl.sampler.server"]
    assert "--token" not in argv  # the token must never be visible in ps
    assert argv[argv.index("--part") + 1] == "1"
    assert argv[argv.index("--bind") + 1] == "tcp://10.0.0.2:30050"
    targv = trainer_argv(spec, spec.trainers[1], "/tmp/logs")
    assert targv[:3] == ["/venv/bin/python", "-m", "torch.distributed.run"]
    for flag in ("--nnodes=2", "--node_rank=1", "--nproc_per_node=2", "--master_addr=10.0.0.1",
                 "--monitor-interval=0.1", "--no-python"):
        assert flag in targv
    # The bare `python` of the user command becomes the launcher's interpreter.
    assert targv[-4:] == ["/venv/bin/python", "train.py", "--lr", "0.1"]
    env = trainer_env(spec)
    assert env[ENV_SERVERS] == "tcp://10.0.0.1:30050,tcp://10.0.0.2:30050"
    assert env[ENV_PARTITION] == "/data/parts"
    assert env[ENV_LOCAL_PARTS] == ""  # no trainer placement: no co-located parts


def test_trainers_read_the_parts_served_on_their_own_host():
    spec = spec_for("10.0.0.1\n10.0.0.2 40000\n10.0.0.1 41000\n", 5, num_servers_per_host=2)
    # parts 0, 3 on the first line, 1, 4 on the second, 2 on the third (same IP as the first)
    assert [trainer_env(spec, t)[ENV_LOCAL_PARTS] for t in spec.trainers] == ["0,2,3", "1,4", "0,2,3"]
    assert [t["local_parts"] for t in spec.to_dict()["trainers"]] == [[0, 2, 3], [1, 4], [0, 2, 3]]
    off = spec_for("10.0.0.1\n10.0.0.2\n", 2, local_reads=False)
    assert [trainer_env(off, t)[ENV_LOCAL_PARTS] for t in off.trainers] == ["", ""]


def test_run_keys_give_each_process_only_its_own_keys(tmp_path):
    """Fresh pairs per run; servers get their pair + the allow-list, a trainer host gets the
    servers' public key + its own pair and never a server secret or another host's secret."""
    from bgl.launch.run_keys import RunKeys
    from bgl.sampler import curve_keys as ck

    spec = build_cluster_spec([Host("10.0.0.1", line=1), Host("10.0.0.2", line=2)], tmp_path, 2,
                              ["python", "train.py"])
    keys, again = RunKeys.generate(spec), RunKeys.generate(spec)
    assert keys.server.public != again.server.public  # fresh for every run
    assert set(keys.hosts) == {"10.0.0.1", "10.0.0.2"}
    server_dir = ck.materialize_bundle(keys.server_bundle(), tmp_path / "server")
    assert ck.load_pair(server_dir / ck.SERVER_SECRET) == keys.server
    assert ck.load_allowed(server_dir / ck.ALLOWED_DIR) == {
        keys.launcher.public, keys.hosts["10.0.0.1"].public, keys.hosts["10.0.0.2"].public}
    assert not (server_dir / ck.CLIENT_SECRET).exists()
    bundle = keys.trainer_bundle("10.0.0.2")
    for secret in (keys.server.secret, keys.launcher.secret, keys.hosts["10.0.0.1"].secret):
        assert secret.decode() not in bundle
    trainer_dir = ck.materialize_bundle(bundle, tmp_path / "trainer")
    assert ck.load_client_keys(trainer_dir) == ck.ClientKeys(keys.server.public, keys.hosts["10.0.0.2"])
    assert not (trainer_dir / ck.SERVER_SECRET).exists()


@pytest.mark.parametrize("command, expected", [
    (["python", "train.py", "--epochs", "3"], ("script", "train.py")),
    (["python3.11", "-u", "-W", "error", "-X", "dev", "t.py"], ("script", "t.py")),
    (["/opt/venv/bin/python", "-B", "dir/t.py"], ("script", "dir/t.py")),
    (["python", "-m", "pkg.train"], None),
    (["python", "-mpkg.train"], None),
    (["python", "-c", "print(1)"], None),
    (["python", "-"], None),
    (["./train.sh", "x"], ("program", "./train.sh")),
    (["torchrun-like"], ("program", "torchrun-like")),
    ([], None),
])
def test_training_program_finds_the_script_past_interpreter_options(command, expected):
    from bgl.launch.spec import training_program

    assert training_program(command) == expected
