"""Real `bgl serve` processes on 127.0.0.1 and the SamplingClient against them."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import torch
import zmq

from bgl.errors import ProtocolError, ServerError, ServerUnavailable
from bgl.sampler import LocalSampler, SamplingClient
from bgl.sampler import protocol as P
from bgl.sampler.client import ping, shutdown


def same_blocks(a, b) -> bool:
    return len(a) == len(b) and all(
        x.num_dst == y.num_dst and torch.equal(x.src_ids, y.src_ids) and torch.equal(x.indptr, y.indptr)
        and torch.equal(x.indices, y.indices) for x, y in zip(a, b))


@pytest.mark.parametrize("replace", [False, True])
def test_client_equals_local_sampler(module_servers, random_store, replace):
    seeds = torch.from_numpy(np.random.default_rng(1).choice(500, 64, replace=False))
    local = LocalSampler(random_store).sample_blocks(seeds, [5, 4, 3], replace=replace, seed=42)
    with SamplingClient([module_servers["whole"].address]) as client:
        assert same_blocks(client.sample_blocks(seeds, [5, 4, 3], replace=replace, seed=42), local)
        assert (client.num_nodes, client.feat_dim, client.feat_dtype, client.num_classes) == (500, 16, torch.float32, 4)


def test_two_part_servers_equal_unpartitioned(module_servers, random_store):
    seeds = torch.from_numpy(np.random.default_rng(2).permutation(500)[:100])  # both parts, mixed order
    local = LocalSampler(random_store)
    parts = [s.address for s in module_servers["parts"]][::-1]  # any order: the client sorts by range
    with SamplingClient(parts) as client:
        assert client.bounds.tolist() == [0, 230, 500]
        for fanouts in ([3, 2], [-1], [10, 10, 10]):
            assert same_blocks(client.sample_blocks(seeds, fanouts, seed=9), local.sample_blocks(seeds, fanouts, seed=9))
        ids = torch.tensor([499, 0, 229, 230, 7, 499])
        assert torch.equal(client.fetch_features(ids), local.fetch_features(ids))
        assert torch.equal(client.fetch_labels(ids), local.fetch_labels(ids))
        with pytest.raises(ValueError, match="= 500 is outside"):
            client.fetch_labels([500])


def test_traffic_counts_request_and_reply_bytes(module_servers):
    from bgl.sampler.client import traffic

    ids = np.arange(10, dtype=np.int64)
    # first FEATURES request may compile the server's gather kernel: a long timeout, then measure
    with SamplingClient([module_servers["whole"].address], timeout=120) as client:
        client.fetch_features(ids)
        before = traffic()
        rows = client.fetch_features(ids)
        after = traffic()
    request = P.features_request(1, ids, P.FIELD_FEAT)
    reply = P.features_reply(1, P.FIELD_FEAT, rows.numpy())
    assert after["sent"] - before["sent"] == len(request[0]) + ids.nbytes
    assert after["received"] - before["received"] == len(reply[0]) + rows.numpy().nbytes


def test_features_and_labels_in_one_round_trip_equal_the_separate_fetches(module_servers, random_store):
    parts = [s.address for s in module_servers["parts"]]
    feat_ids = torch.tensor([499, 0, 229, 230, 7, 499])  # both parts, repeats, mixed order
    label_ids = torch.tensor([231, 3])
    local = LocalSampler(random_store)
    with SamplingClient(parts, timeout=120) as client:
        client.fetch_features(feat_ids)  # warm-up: the first FEATURES may compile the servers' kernels
        client.fetch_labels(label_ids)
        feats, labels = client.fetch_features_and_labels(feat_ids, label_ids)
        assert torch.equal(feats, local.fetch_features(feat_ids))
        assert torch.equal(labels, local.fetch_labels(label_ids))
        lf, ll = local.fetch_features_and_labels(feat_ids, label_ids)
        assert torch.equal(lf, feats) and torch.equal(ll, labels)
        with pytest.raises(ValueError, match="= 500 is outside"):
            client.fetch_features_and_labels(feat_ids, [500])


def test_client_rejects_incomplete_ranges(module_servers):
    with pytest.raises(ProtocolError, match="do not tile"):
        SamplingClient([module_servers["parts"][0].address])


def test_nothing_listening_raises_unavailable(free_port):
    addr = f"tcp://127.0.0.1:{free_port()}"
    with pytest.raises(ServerUnavailable, match=addr):
        SamplingClient([addr], timeout=0.5)
    assert ping(addr, timeout=0.3) is False


def test_ping_shutdown_with_token(serve, random_store):
    s = serve("--store", str(random_store.path))
    assert ping(s.address)
    with pytest.raises(ServerError, match="wrong token"):
        shutdown(s.address, "not-the-token")
    assert ping(s.address)
    shutdown(s.address, s.token)
    assert s.proc.wait(timeout=30) == 0
    out = s.proc.stdout.read()
    assert "serving" in out and "stopped" in out and s.token not in out
    assert ping(s.address, timeout=0.3) is False


def test_killed_server_raises_unavailable(serve, random_store):
    s = serve("--store", str(random_store.path))
    # a generous reply timeout for the first (cold) request on a loaded box; the retry window
    # after the server is gone is what this test times
    client = SamplingClient([s.address], timeout=30.0, retry_timeout=1.0)
    try:
        client.sample_blocks([1, 2], [2], seed=0)
        s.proc.kill()
        s.proc.wait(timeout=10)
        t0 = time.monotonic()
        with pytest.raises(ServerUnavailable, match=s.address):
            client.sample_blocks([1, 2], [2], seed=0)
        with pytest.raises(ServerUnavailable, match="retried for 1 s"):
            client.fetch_features([1])
        assert time.monotonic() - t0 < 15  # two retry windows of 1 s; hang guard, not a speed check
    finally:
        client.close()


def restart_later(serve, store, address: str, old, delay: float, started: list) -> threading.Thread:
    """In a thread: after ``delay`` s SIGKILL ``old`` (if alive), then serve ``store`` at ``address``
    (the new server is appended to ``started``)."""
    def restart() -> None:
        time.sleep(delay)
        if old.proc.poll() is None:
            old.proc.kill()
        old.proc.wait(timeout=10)
        started.append(serve("--store", str(store.path), bind=address))

    thread = threading.Thread(target=restart, daemon=True)
    thread.start()
    return thread


def test_client_rides_through_a_server_restart(serve, random_store):
    """A server killed with a request in flight, and one killed between calls, is restarted at
    the same address: the client re-sends and gets the same batch, never a partial one."""
    s = serve("--store", str(random_store.path))
    seeds = torch.tensor([1, 2, 77, 300, 499])
    client = SamplingClient([s.address], timeout=30.0, retry_timeout=120.0)
    try:
        want = client.sample_blocks(seeds, [3, 3], seed=11)
        want_feat = client.fetch_features(want[0].src_ids)
        # 1. in flight: the stopped server holds the request; it dies and a new one takes its place
        os.kill(s.proc.pid, signal.SIGSTOP)
        started = []
        thread = restart_later(serve, random_store, s.address, s, delay=0.5, started=started)
        got = client.sample_blocks(seeds, [3, 3], seed=11)
        thread.join(timeout=130)
        assert same_blocks(want, got)
        assert client.reconnects >= 1  # it did re-send (on a fresh socket)
        # 2. between calls: killed while the client is idle, restarted while it retries
        s2 = started[-1]
        s2.proc.kill()
        s2.proc.wait(timeout=10)
        thread = restart_later(serve, random_store, s.address, s2, delay=0.5, started=started)
        got_feat = client.fetch_features(want[0].src_ids)
        thread.join(timeout=130)
        assert torch.equal(want_feat, got_feat)
        assert client.reconnects >= 2
        assert same_blocks(want, client.sample_blocks(seeds, [3, 3], seed=11))
    finally:
        client.close()


def test_stalled_server_times_out(serve, random_store):
    s = serve("--store", str(random_store.path))
    client = SamplingClient([s.address], timeout=1.0)
    os.kill(s.proc.pid, signal.SIGSTOP)
    try:
        with pytest.raises(ServerUnavailable, match="no reply within 1.0 s"):
            client.sample_blocks([1, 2], [2], seed=0)
    finally:
        os.kill(s.proc.pid, signal.SIGCONT)
        client.close()


def malformed(rng: np.random.Generator, n: int, num_nodes: int):
    """n malformed requests, every one of which must be answered with ERROR."""
    one = np.array([1], np.int64).tobytes()

    def h(**kw):
        base = dict(op=P.Op.SAMPLE, req_id=int(rng.integers(1, 2**63)), dtype0=2, fanout=2, len0=1, width=1)
        base.update(kw)
        return P.Header(**base).pack()

    makers = [
        lambda: [rng.bytes(int(rng.choice([0, 1, 59, 61, 200])))],                          # random bytes
        lambda: [b"Q" + rng.bytes(59), one],                                                # bad magic
        lambda: [h()] + [one] * int(rng.choice([0, 2, 3])),                                 # wrong frame count
        lambda: [h(len0=int(rng.integers(2, 50))), one],                                    # bad length
        lambda: [h(len0=int(rng.integers(2**40, 2**63))), one],                             # huge count
        lambda: [h(op=int(rng.choice([0, 6, 7, 100, 255]))), one],                          # unknown op
        lambda: [h(), np.array([rng.choice([num_nodes, -1, 2**40])], np.int64).tobytes()],  # out-of-range id
        lambda: [h(fanout=int(rng.integers(-2**40, -1))), one],                             # negative fanout
        lambda: [h(dtype0=int(rng.choice([0, 3, 6, 12, 255]))), one],                       # bad dtype code
        lambda: [h(op=P.Op.FEATURES, fanout=0, field=int(rng.integers(2, 256))), one],      # bad field
        lambda: [h(version=int(rng.integers(2, 256))), one],                                # bad version
        lambda: [h(op=P.Op.SHUTDOWN, fanout=0, dtype0=6, len0=4, width=0), rng.bytes(4)],   # wrong token
        lambda: [h(flags=int(rng.integers(2, 256))), one],                                  # unknown flags
    ]
    return [makers[int(rng.integers(len(makers)))]() for _ in range(n)]


@pytest.mark.parametrize("security", ["plaintext", "curve"])
def test_fuzz_live_server(request, module_servers, random_store, security):
    """10,200 malformed requests (over CURVE too) each get ERROR; the server keeps serving."""
    keys = None
    if security == "curve":
        server, keys = request.getfixturevalue("curve_server"), request.getfixturevalue("curve_keydir")["client"]
    else:
        server = module_servers["whole"]
    addr = server.address
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.DEALER)
    sock.linger = 0
    if keys is not None:
        sock.curve_serverkey, sock.curve_publickey, sock.curve_secretkey = (
            keys.server_public, keys.pair.public, keys.pair.secret)
    sock.connect(addr)
    rng = np.random.default_rng(1234)
    total, batch = 10_200, 300
    errors = 0
    try:
        for start in range(0, total, batch):
            msgs = malformed(rng, batch, random_store.num_nodes)
            for m in msgs:
                sock.send_multipart(m)
            for _ in msgs:
                assert sock.poll(30_000), "server stopped answering during the fuzz run"
                reply = sock.recv_multipart()
                assert P.unpack_header(reply[0]).op == P.Op.ERROR
                errors += 1
    finally:
        sock.close()
    assert errors == total
    assert server.proc.poll() is None
    seeds = torch.arange(0, 500, 3)
    with SamplingClient([addr], curve=keys) as client:
        assert same_blocks(client.sample_blocks(seeds, [4, 4], seed=77),
                           LocalSampler(random_store).sample_blocks(seeds, [4, 4], seed=77))


def test_serve_cli_argument_errors(random_store, partition_dir):
    from bgl.cli import main

    assert main(["serve", "--store", str(random_store.path), "--partition", str(partition_dir)]) == 1
    assert main(["serve", "--partition", str(partition_dir), "--part", "5"]) == 1
    assert main(["serve", "--store", str(random_store.path / "missing")]) == 1
    r = subprocess.run([sys.executable, "-m", "bgl.sampler.server", "--help"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "--ready-file" in r.stdout


def test_malformed_address_raises_value_error_naming_it():
    with pytest.raises(ValueError, match=r"bad graph server address 'tcp://nohost:abc'"):
        SamplingClient(["tcp://nohost:abc"], timeout=0.5)


# A peer that answers every request with an INFO lacking "num_nodes" (as a server of another
# version might) for up to 60 s; stands in for a server because a real one always sends every key.
# It answers more than one request because a stray client elsewhere on the machine may reconnect
# to the reused ephemeral port first.
INFO_PEER = """
import json, time, zmq
from bgl.sampler import protocol as P
sock = zmq.Context.instance().socket(zmq.ROUTER)
sock.linger = 0
sock.bind("tcp://127.0.0.1:*")
print(sock.getsockopt_string(zmq.LAST_ENDPOINT), flush=True)
body = json.dumps({"node_offset": 0, "global_num_nodes": 10, "feat_dim": 0,
                   "feat_dtype": None, "num_classes": 0}).encode()
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    if sock.poll(100):
        frames = sock.recv_multipart()
        if len(frames) >= 2:
            head = P.Header(P.Op.INFO, P.peek_req_id(frames[1]), dtype0=6, len0=len(body)).pack()
            sock.send_multipart([frames[0], head, body])
"""


def test_info_reply_without_a_key_raises_protocol_error():
    peer = subprocess.Popen([sys.executable, "-c", INFO_PEER], stdout=subprocess.PIPE, text=True)
    try:
        addr = peer.stdout.readline().strip()
        assert addr.startswith("tcp://127.0.0.1:")
        with pytest.raises(ProtocolError, match=rf"{addr}.*'num_nodes'"):
            SamplingClient([addr], timeout=10.0)
    finally:
        if peer.poll() is None:
            peer.kill()
        peer.wait(timeout=10)
        peer.stdout.close()
