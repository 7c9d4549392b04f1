"""Graph-server addresses with a TCP port outside 1..65535 are refused wherever bgl takes one
(issue #44): libzmq would wrap ``tcp://127.0.0.1:99999`` to port 34463 and serve or connect there."""
from __future__ import annotations

import pytest

from bgl.sampler.endpoints import check_endpoint


@pytest.mark.parametrize("endpoint", ["tcp://127.0.0.1:5000", "tcp://[::1]:65535", "tcp://10.0.0.1:1",
                                      "ipc:///tmp/x", "inproc://a"])
def test_good_endpoints_pass(endpoint):
    assert check_endpoint(endpoint, "address") == endpoint


def test_a_wildcard_port_only_for_bind():
    assert check_endpoint("tcp://127.0.0.1:*", "--bind", bind=True) == "tcp://127.0.0.1:*"
    with pytest.raises(ValueError, match=r"address 'tcp://127.0.0.1:\*': port must be a number in 1..65535, got '\*'"):
        check_endpoint("tcp://127.0.0.1:*", "address")


@pytest.mark.parametrize("endpoint, message", [
    ("tcp://127.0.0.1:99999", "port must be in 1..65535 or '*' for a free one, got 99999"),
    ("tcp://127.0.0.1:65536", "got 65536"),
    ("tcp://127.0.0.1:0", "got 0"),
    ("tcp://127.0.0.1:-5", "got '-5'"),
    ("tcp://127.0.0.1:abc", "got 'abc'"),
    ("tcp://127.0.0.1", "has no port"),
    ("tcp://[::1]", "has no port"),
])
def test_bad_ports_are_named(endpoint, message):
    with pytest.raises(ValueError) as e:
        check_endpoint(endpoint, "--bind", bind=True)
    assert str(e.value).startswith(f"--bind '{endpoint}'") and message in str(e.value)


def test_client_refuses_a_wrapped_port_before_connecting():
    from bgl.sampler import SamplingClient

    with pytest.raises(ValueError, match="bad graph server address 'tcp://127.0.0.1:99999': port must be in 1..65535"):
        SamplingClient(["tcp://127.0.0.1:99999"], timeout=0.5)


def test_server_refuses_a_wrapped_port(random_store):
    from bgl.sampler.server import GraphServer

    with pytest.raises(ValueError, match="bind 'tcp://127.0.0.1:70000': port must be in 1..65535"):
        GraphServer(random_store, bind="tcp://127.0.0.1:70000")


def test_bgl_servers_with_a_wrapped_port_is_named(tmp_path, monkeypatch):
    """A partition dir as the graph: ``$BGL_SERVERS`` is read, and its bad address named as such."""
    import bgl

    (tmp_path / "partition.json").write_text("{}")
    monkeypatch.setenv("BGL_SERVERS", "tcp://127.0.0.1:30050,tcp://127.0.0.1:99999")
    with pytest.raises(ValueError, match=r"\$BGL_SERVERS address 'tcp://127.0.0.1:99999': port must be in"):
        bgl.DataLoader(str(tmp_path), None, bgl.NeighborSampler([2]), batch_size=4)


def test_bgl_serve_refuses_a_port_past_65535(tmp_path, random_store):
    """It used to serve on 34463 (99999 - 65536) and keep running where no client looks."""
    import subprocess
    import sys

    ready = tmp_path / "ready.json"
    r = subprocess.run([sys.executable, "-m", "bgl", "serve", "--store", str(random_store.path),
                        "--bind", "tcp://127.0.0.1:99999", "--ready-file", str(ready)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and not ready.exists(), r.stderr
    assert r.stderr.splitlines() == ["bgl serve: error: --bind 'tcp://127.0.0.1:99999': port must be in "
                                     "1..65535 or '*' for a free one, got 99999"]
