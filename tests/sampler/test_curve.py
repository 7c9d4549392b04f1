"""CURVE graph servers: key files, who gets data and who does not, and the plaintext guard."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from bgl.errors import ServerUnavailable
from bgl.sampler import LocalSampler, SamplingClient
from bgl.sampler import curve_keys as ck
from bgl.sampler.client import ping, shutdown
from bgl.sampler.server import GraphServer, is_loopback_endpoint


# ------------------------------------------------------------------ key files
def test_key_files_roundtrip_mode_0600(tmp_path):
    server, client = ck.new_keypair(), ck.new_keypair()
    d = ck.write_key_dir(tmp_path / "keys", server=server, client=client, allowed=[client.public])
    files = [d / ck.SERVER_SECRET, d / ck.SERVER_PUBLIC, d / ck.CLIENT_SECRET,
             *(d / ck.ALLOWED_DIR).glob("*.key")]
    assert len(files) == 4
    for f in files:
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    assert not list(d.rglob(".*.tmp"))  # atomic writes leave no temp files
    assert ck.load_pair(d / ck.SERVER_SECRET) == server
    assert ck.load_client_keys(d) == ck.ClientKeys(server.public, client)
    assert ck.load_allowed(d / ck.ALLOWED_DIR) == {client.public}
    assert "secret" not in repr(server).replace("secret=<hidden>", "") and server.secret.decode() not in repr(server)
    # the files are czmq certificates: zmq's own loader reads them too
    import zmq.auth

    assert zmq.auth.load_certificate(d / ck.SERVER_SECRET) == (server.public, server.secret)


def test_bad_key_files_give_clear_errors(tmp_path):
    pair, other = ck.new_keypair(), ck.new_keypair()
    with pytest.raises(ck.CurveKeyError, match="missing"):
        ck.load_pair(tmp_path / "nope.key_secret")
    f = tmp_path / "bad.key_secret"
    f.write_text('public-key = "short"\nsecret-key = "alsoshort"\n')
    f.chmod(0o600)
    with pytest.raises(ck.CurveKeyError, match="need 40 Z85 characters, got 5"):
        ck.load_pair(f)
    f.write_text(f'public-key = "{other.public.decode()}"\nsecret-key = "{pair.secret.decode()}"\n')
    with pytest.raises(ck.CurveKeyError, match="does not belong to the secret key"):
        ck.load_pair(f)
    ck.write_public(tmp_path / "pub.key", pair.public)
    with pytest.raises(ck.CurveKeyError, match="no secret-key"):
        ck.load_pair(tmp_path / "pub.key")
    ck.write_pair(f, pair)
    f.chmod(0o644)
    with pytest.raises(ck.CurveKeyError, match="mode 0644; others can read it"):
        ck.load_pair(f)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ck.CurveKeyError, match="no client .key files"):
        ck.load_allowed(tmp_path / "empty")
    (tmp_path / "binary.key").write_bytes(b"\xff\xfe")
    with pytest.raises(ck.CurveKeyError, match="not ASCII"):
        ck.load_public(tmp_path / "binary.key")


def test_bundle_materializes_only_what_is_sent(tmp_path):
    server, client = ck.new_keypair(), ck.new_keypair()
    line = ck.encode_bundle(server_public=server.public, client=client)
    assert "\n" not in line and server.secret.decode() not in line
    d = ck.materialize_bundle(line, tmp_path / "k")
    assert sorted(p.name for p in d.iterdir()) == [ck.CLIENT_SECRET, ck.SERVER_PUBLIC]
    assert ck.load_client_keys(d) == ck.ClientKeys(server.public, client)
    with pytest.raises(ck.CurveKeyError, match="malformed entry 'server'"):
        ck.materialize_bundle(f"server,{server.public.decode()}", tmp_path / "k2")


def test_serve_cli_rejects_bad_curve_options(random_store, curve_keydir, tmp_path):
    from bgl.cli import main

    store = str(random_store.path)
    assert main(["serve", "--store", store, "--curve-secret", str(curve_keydir["server_secret"])]) == 1
    assert main(["serve", "--store", store, "--curve-secret", str(tmp_path / "missing"),
                 "--curve-clients", str(curve_keydir["clients"])]) == 1
    # plaintext on a non-loopback address is refused unless asked for explicitly
    assert main(["serve", "--store", store, "--bind", "tcp://0.0.0.0:*"]) == 1


def test_plaintext_only_on_loopback(random_store, curve_keydir):
    assert is_loopback_endpoint("tcp://127.0.0.1:5") and is_loopback_endpoint("tcp://[::1]:5")
    assert not is_loopback_endpoint("tcp://10.0.0.1:5") and not is_loopback_endpoint("tcp://*:5")
    with pytest.raises(ValueError, match="refusing to serve plaintext on non-loopback address tcp://\\*:7"):
        GraphServer(random_store, bind="tcp://*:7")
    GraphServer(random_store, bind="tcp://*:7", allow_plaintext_remote=True)
    keys = ck.load_server_keys(curve_keydir["server_secret"], curve_keydir["clients"])
    GraphServer(random_store, bind="tcp://*:7", curve=keys)


# ------------------------------------------------------------------ live server
def test_allowed_client_gets_the_same_samples(curve_server, curve_keydir, random_store):
    seeds = torch.from_numpy(np.random.default_rng(3).choice(500, 50, replace=False))
    local = LocalSampler(random_store)
    with SamplingClient([curve_server.address], timeout=30.0, curve=curve_keydir["client"]) as client:
        blocks = client.sample_blocks(seeds, [4, 3], seed=5)
        expect = local.sample_blocks(seeds, [4, 3], seed=5)
        assert all(torch.equal(a.indices, b.indices) and torch.equal(a.src_ids, b.src_ids)
                   for a, b in zip(blocks, expect))
        assert torch.equal(client.fetch_features(seeds), local.fetch_features(seeds))


def test_client_keys_come_from_bgl_curve_dir(curve_server, curve_keydir, monkeypatch):
    monkeypatch.setenv(ck.ENV_CURVE_DIR, str(curve_keydir["dir"]))
    assert ping(curve_server.address, timeout=5.0)
    with SamplingClient([curve_server.address], timeout=30.0) as client:
        assert client.num_nodes == 500


@pytest.mark.parametrize("who", ["plaintext", "unknown-client-key", "wrong-server-key"])
def test_outsiders_get_nothing_and_the_server_keeps_serving(curve_server, curve_keydir, who):
    good = curve_keydir["client"]
    stranger = ck.new_keypair()
    keys = {"plaintext": None,
            "unknown-client-key": ck.ClientKeys(good.server_public, stranger),
            "wrong-server-key": ck.ClientKeys(stranger.public, good.pair)}[who]
    why = {"plaintext": "handshake", "unknown-client-key": "refused this client's CURVE key",
           "wrong-server-key": "handshake"}[who]
    t0 = time.monotonic()
    with pytest.raises(ServerUnavailable, match=why):
        SamplingClient([curve_server.address], timeout=1.0, curve=keys)
    assert time.monotonic() - t0 < 10  # within its timeout (plus slack on a loaded box), never a hang
    assert ping(curve_server.address, timeout=0.5, curve=keys) is False
    with pytest.raises(ServerUnavailable):
        shutdown(curve_server.address, curve_server.token, timeout=0.5, curve=keys)
    assert curve_server.proc.poll() is None
    with SamplingClient([curve_server.address], timeout=30.0, curve=good) as client:
        assert client.sample_blocks([1, 2, 3], [2], seed=0)[0].num_dst == 3


def test_curve_server_shuts_down_with_token_from_allowed_client(serve, random_store, curve_keydir):
    s = serve("--store", str(random_store.path), "--curve-dir", str(curve_keydir["dir"]))
    keys = curve_keydir["client"]
    assert ping(s.address, timeout=5.0, curve=keys)
    shutdown(s.address, s.token, curve=keys)
    assert s.proc.wait(timeout=30) == 0
    out = s.proc.stdout.read()
    assert "CURVE, 1 allowed client key(s)" in out, out
    assert keys.pair.secret.decode() not in out


def test_launch_agent_writes_keys_0600_in_its_run_dir(tmp_path):
    server, client = ck.new_keypair(), ck.new_keypair()
    probe = ("import os, stat, sys; d = os.environ['BGL_CURVE_DIR']; "
             "print(d, 'BGL_CURVE_KEYS' in os.environ, "
             "sorted((f, oct(stat.S_IMODE(os.stat(os.path.join(d, f)).st_mode))) for f in os.listdir(d)))")
    # stdin stays open while the command runs: EOF would tell the agent to tear it down
    agent = subprocess.Popen(
        [sys.executable, "-m", "bgl.launch.agent", "--tmpdir", str(tmp_path / "run"), "--", sys.executable, "-c", probe],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        agent.stdin.write(f"{ck.ENV_CURVE_KEYS}={ck.encode_bundle(server_public=server.public, client=client)}\n\n")
        agent.stdin.flush()
        assert agent.wait(timeout=60) == 0, agent.stderr.read()
    finally:
        if agent.poll() is None:
            agent.kill()
        agent.stdin.close()
    out = agent.stdout.read()
    agent.stdout.close()
    agent.stderr.close()
    where, leaked, files = out.split(" ", 2)
    assert where == str(tmp_path / "run" / "curve") and leaked == "False"
    assert files.strip() == str(sorted([(ck.CLIENT_SECRET, "0o600"), (ck.SERVER_PUBLIC, "0o600")]))
    assert not (tmp_path / "run").exists()  # the keys went with the run directory
    bad = subprocess.run(
        [sys.executable, "-m", "bgl.launch.agent", "--tmpdir", str(tmp_path / "run2"), "--", "true"],
        input=f"{ck.ENV_CURVE_KEYS}=client,abc\n\n", capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "cannot write the CURVE keys" in bad.stderr
    assert os.environ.get(ck.ENV_CURVE_DIR) is None
