"""Fixtures for launch tests: a small 2-part partition, free ports, a launcher runner,
and an orphan scan.  Every launcher and every process it starts is cleaned up."""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

LAUNCH_TIMEOUT = 150  # seconds any single launch in a test may take before we kill it
REPO = Path(__file__).resolve().parents[2]
SSHD = "/usr/sbin/sshd"


@pytest.fixture(scope="session")
def two_part_partition(random_store_factory, tmp_path_factory) -> Path:
    """A 2-part random partition of a 400-node synthetic store (features, labels, splits)."""
    from bgl.partition import partition_graph

    store = random_store_factory(num_nodes=400, avg_degree=6.0, feat_dim=8, num_classes=3, seed=7)
    out = tmp_path_factory.mktemp("launch") / "parts"
    partition_graph(store, "random", 2, out, seed=0, measure_samples=False)
    return out


@pytest.fixture
def partition_dir(two_part_partition, tmp_path) -> Path:
    """The shared partition under this test's own tmp path, so the servers' command lines
    contain the test's unique path (the orphan scan looks for it)."""
    link = tmp_path / "parts"
    link.symlink_to(two_part_partition, target_is_directory=True)
    return link


@pytest.fixture
def hosts_file(tmp_path):
    """A hosts file naming only 127.0.0.1."""
    path = tmp_path / "hosts.txt"
    path.write_text("# this machine\n127.0.0.1\n")
    return path


def port_range_is_free(start: int, count: int) -> bool:
    for port in range(start, start + count):
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


@pytest.fixture
def free_port_base():
    """``free_port_base(count)`` -> a port P with P..P+count-1 free on 127.0.0.1 now.

    Drawn below the kernel's ephemeral range: a port in that range can be handed to some
    outgoing connection (a client, a rendezvous) between this probe and the server's bind,
    which made a launch test fail once with "Address already in use".
    """
    try:
        ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_low = 32768  # Linux's default

    def find(count: int = 4) -> int:
        rng = random.Random()
        high = max(10000 + count, ephemeral_low - count)
        for _ in range(200):
            start = rng.randrange(10000, high)
            if port_range_is_free(start, count):
                return start
        raise RuntimeError("no free port range found")
    return find


def processes_mentioning(text: str) -> list[psutil.Process]:
    """Live (non-zombie) processes other than us whose command line contains ``text``."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        try:
            if proc.pid == os.getpid() or proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if any(text in arg for arg in proc.info["cmdline"] or ()):
                found.append(proc)
        except psutil.Error:
            continue
    return found


class Launcher:
    """A ``bgl launch`` subprocess with its output in files."""

    def __init__(self, args: list[str], tmp_path: Path, env: dict | None = None,
                 prefix: list[str] = ()):
        self.out_path = tmp_path / "launcher.out"
        self.err_path = tmp_path / "launcher.err"
        self.tmp_path = tmp_path
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.popen = subprocess.Popen(
                [*prefix, sys.executable, "-m", "bgl", "launch", *args], stdout=out, stderr=err,
                stdin=subprocess.DEVNULL, cwd=tmp_path,
                env={**os.environ, "DGLBACKEND": "pytorch", **(env or {})})

    @property
    def stdout(self) -> str:
        return self.out_path.read_text(errors="replace")

    @property
    def stderr(self) -> str:
        return self.err_path.read_text(errors="replace")

    def wait_for_output(self, needle: str, timeout: float = LAUNCH_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.stdout:
            if self.popen.poll() is not None:
                pytest.fail(f"launcher exited ({self.popen.returncode}) before printing {needle!r}:\n"
                            f"{self.stdout[-3000:]}\n{self.stderr[-3000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"no {needle!r} within {timeout} s:\n{self.stdout[-3000:]}\n"
                            f"{self.stderr[-3000:]}")
            time.sleep(0.1)

    def wait(self, timeout: float = LAUNCH_TIMEOUT) -> int:
        return self.popen.wait(timeout=timeout)

    def describe(self) -> str:
        return f"exit {self.popen.returncode}\n--- stdout\n{self.stdout[-4000:]}\n--- stderr\n{self.stderr[-4000:]}"

    def cleanup(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        # Last resort so one failing test cannot leave servers behind for the others.
        for proc in processes_mentioning(str(self.tmp_path)):
            try:
                proc.kill()
            except psutil.Error:
                pass


@pytest.fixture
def launcher(tmp_path):
    """``launcher(args, env=None, prefix=())`` starts ``[*prefix] bgl launch ARGS`` in tmp_path
    (``prefix`` e.g. ``ip netns exec NS``); all are cleaned up."""
    started: list[Launcher] = []

    def start(args: list[str], env: dict | None = None, prefix: list[str] = ()) -> Launcher:
        started.append(Launcher([str(a) for a in args], tmp_path, env, list(prefix)))
        return started[-1]

    yield start
    for launched in started:
        launched.cleanup()


@pytest.fixture
def orphans(tmp_path):
    """``orphans()`` -> processes still alive that mention this test's tmp path (waits a bit,
    since processes killed a moment ago may still be exiting)."""
    def scan(timeout: float = 5.0) -> list[str]:
        deadline = time.monotonic() + timeout
        while True:
            left = processes_mentioning(str(tmp_path))
            if not left or time.monotonic() > deadline:
                out = []
                for p in left:
                    try:
                        out.append(f"{p.pid} {' '.join(p.cmdline())}")
                    except psutil.Error:
                        pass
                return out
            time.sleep(0.1)
    return scan


# Written into each test's tmp dir; a plain script with no launcher-specific code
# beyond reading BGL_SERVERS (which bgl.DataLoader would read for it).
TRAINER = textwrap.dedent("""
    import os, sys, time
    import torch
    import torch.distributed as dist
    from bgl.launch import lifecycle
    from bgl.sampler import SamplingClient

    mode = sys.argv[1]
    lifecycle.event("start")
    if mode == "crash":  # dies at once, before any batch (a crash loop under --max-restarts)
        sys.exit(7)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    with SamplingClient(os.environ["BGL_SERVERS"], timeout=5.0) as client:
        seeds = torch.arange(rank, client.num_nodes, world)[:32]
        blocks = client.sample_blocks(seeds, [4, 4], seed=rank)
        lifecycle.event("first_batch")
        feats = client.fetch_features(blocks[0].src_ids)
        assert torch.equal(blocks[-1].dst_ids, seeds)
        total = torch.tensor([len(seeds)])
        dist.all_reduce(total)
        print(f"rank {rank}/{world} inputs={blocks[0].num_src} feat={tuple(feats.shape)} "
              f"seeds_all_ranks={int(total)} parts={os.path.basename(os.environ['BGL_PARTITION'])} "
              f"local={','.join(client.local_servers) or '-'}",
              flush=True)
        if mode == "fail":
            sys.exit(5)
        if mode == "loop":
            print(f"ready {rank}", flush=True)
            deadline = time.time() + 90
            while time.time() < deadline:
                client.sample_blocks(seeds, [4, 4])
                time.sleep(0.05)
            sys.exit(3)  # nobody stopped us: the test will fail on this code
    lifecycle.event("train_end")
    dist.destroy_process_group()
""")


@pytest.fixture
def trainer_script(tmp_path) -> Path:
    """TRAINER written into this test's tmp dir; run it with argument "finish", "fail", "crash" or "loop"."""
    path = tmp_path / "trainer.py"
    path.write_text(TRAINER)
    return path


# ------------------------------------------------------------------------- sshd
def ensure_sshd() -> None:
    """Install openssh-server through .ci/setup-sshd.sh if needed; skip, saying why, if impossible."""
    if os.path.exists(SSHD) and shutil.which("ssh") and shutil.which("ssh-keygen"):
        return
    setup = REPO / ".ci" / "setup-sshd.sh"
    done = subprocess.run(["bash", str(setup)], capture_output=True, text=True, timeout=600)
    if done.returncode != 0 or not os.path.exists(SSHD):
        pytest.skip(f"openssh-server is not installed and {setup} could not install it: "
                    f"{(done.stderr or done.stdout).strip()[-500:]}")


@pytest.fixture(scope="session")
def ssh_keys(tmp_path_factory) -> dict:
    """Throwaway sshd host key and client key (authorized) in one dir:
    ``{"dir", "host_key", "key", "authorized_keys", "known_hosts"}``."""
    ensure_sshd()
    d = tmp_path_factory.mktemp("sshkeys")
    for name in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)],
                       check=True, timeout=60)
    (d / "authorized_keys").write_text((d / "client_key.pub").read_text())
    os.chmod(d / "authorized_keys", 0o600)
    return {"dir": d, "host_key": str(d / "host_key"), "key": str(d / "client_key"),
            "authorized_keys": str(d / "authorized_keys"), "known_hosts": str(d / "known_hosts")}


def spawn_sshd(keys: dict, listen: str, port: int, log_path: Path,
               prefix: list[str] = ()) -> subprocess.Popen:
    """A private sshd on ``listen:port`` (under ``prefix``, e.g. ``ip netns exec NS``) accepting
    ``keys``' client key; returns once it accepts connections (skips if it never does).

    The connect check runs under the same prefix, so it works inside a namespace too.
    """
    os.makedirs("/run/sshd", exist_ok=True)  # privilege-separation dir sshd insists on
    log = open(log_path, "wb")
    proc = subprocess.Popen(
        [*prefix, SSHD, "-D", "-e", "-f", "/dev/null", "-p", str(port), "-h", keys["host_key"],
         "-o", f"ListenAddress={listen}", "-o", f"AuthorizedKeysFile={keys['authorized_keys']}",
         "-o", "StrictModes=no", "-o", "PasswordAuthentication=no", "-o", "UsePAM=no",
         "-o", "PidFile=none", "-o", "PermitRootLogin=prohibit-password"],
        stdout=subprocess.DEVNULL, stderr=log)
    log.close()
    probe = [*prefix, sys.executable, "-c",
             f"import socket; socket.create_connection(({listen!r}, {port}), timeout=1).close()"]
    deadline = time.monotonic() + 30
    while subprocess.run(probe, capture_output=True, timeout=30).returncode != 0:
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_process(proc)
            pytest.skip(f"sshd on {listen}:{port} did not start: {log_path.read_text()[-500:]}")
        time.sleep(0.2)
    return proc


def stop_process(proc: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL after 10 s; always reaped."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class SshdTools:
    """What test modules need to run their own sshd (conftest functions are not importable)."""

    spawn = staticmethod(spawn_sshd)
    stop = staticmethod(stop_process)


@pytest.fixture(scope="session")
def sshd_tools() -> type[SshdTools]:
    """``sshd_tools.spawn(ssh_keys, listen, port, log_path, prefix=())`` and ``sshd_tools.stop(proc)``."""
    return SshdTools


# ------------------------------------------------------------------- a real Slurm
SLURM_SUBNET = "10.78.0"  # apart from test_netns_launch's 10.77.0, so both can run at once
SLURM_NODES = {"bgla": f"{SLURM_SUBNET}.2", "bglb": f"{SLURM_SUBNET}.3"}
SLURM_CONTROLLER_IP = f"{SLURM_SUBNET}.1"
SLURM_TOOLS = ("slurmctld", "slurmd", "srun", "sbatch", "salloc", "scancel", "scontrol", "sinfo",
               "squeue", "munged")


def in_netns(ns: str) -> list[str]:
    """Command prefix that runs in network namespace ``ns``.  ``nsenter --net`` rather than ``ip
    netns exec``: the latter mounts a fresh /sys, without the cgroup mounts slurmd needs."""
    return ["nsenter", f"--net=/run/netns/{ns}"]


def run_in(ns: str | None, argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    """``argv`` inside network namespace ``ns`` (here if None), output captured as text."""
    prefix = in_netns(ns) if ns else []
    return subprocess.run([*prefix, *argv], capture_output=True, text=True,
                          timeout=kwargs.pop("timeout", 60), **kwargs)


def require_namespaces() -> None:
    """Skip (saying why) without root; install iproute2 through .ci/setup-netns.sh if missing."""
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root (ip netns add)")
    if shutil.which("ip") and shutil.which("ss"):
        return
    setup = REPO / ".ci" / "setup-netns.sh"
    done = subprocess.run(["bash", str(setup)], capture_output=True, text=True, timeout=600)
    if done.returncode != 0 or not (shutil.which("ip") and shutil.which("ss")):
        pytest.skip(f"iproute2 (ip, ss) is not installed and {setup} could not install it: "
                    f"{(done.stderr or done.stdout).strip()[-500:]}")


class Namespaces:
    """Network namespaces ``{key: name}`` on one bridge inside the first; each key gets the
    address given.  :meth:`remove` kills whatever runs in them and deletes them."""

    def __init__(self, tag: str, addresses: dict[str, str]):
        self.names = {key: f"{tag}{key}" for key in addresses}
        self.addresses = dict(addresses)
        self.made: list[str] = []

    def create(self) -> None:
        for ns in self.names.values():
            done = run_in(None, ["ip", "netns", "add", ns])
            if done.returncode != 0:
                pytest.skip(f"cannot create a network namespace: {done.stderr.strip()}")
            self.made.append(ns)
            self._ip(ns, "link", "set", "lo", "up")
        hub, *others = self.names
        hub_ns = self.names[hub]
        self._ip(hub_ns, "link", "add", "br0", "type", "bridge")
        self._ip(hub_ns, "addr", "add", f"{self.addresses[hub]}/24", "dev", "br0")
        self._ip(hub_ns, "link", "set", "br0", "up")
        for i, key in enumerate(others):
            ns = self.names[key]
            self._ip(hub_ns, "link", "add", f"veth{i}", "type", "veth", "peer", "name", "eth0",
                     "netns", ns)
            self._ip(hub_ns, "link", "set", f"veth{i}", "master", "br0", "up")
            self._ip(ns, "addr", "add", f"{self.addresses[key]}/24", "dev", "eth0")
            self._ip(ns, "link", "set", "eth0", "up")

    @staticmethod
    def _ip(ns: str, *args: str) -> None:
        done = run_in(None, ["ip", "-n", ns, *args])
        if done.returncode != 0:
            pytest.skip(f"cannot build the namespaces' network (ip -n {ns} {' '.join(args)}): "
                        f"{done.stderr.strip()}")

    def link_bytes(self, key: str) -> int:
        """Bytes received plus sent so far by namespace ``key``'s end of the network: its ``eth0``
        (its veth to the bridge), the bridge ``br0`` in the first; loopback is not counted."""
        hub = next(iter(self.names))
        done = run_in(None, ["ip", "-n", self.names[key], "-s", "-j", "link", "show", "dev",
                             "br0" if key == hub else "eth0"])
        stats = json.loads(done.stdout)[0]["stats64"]
        return int(stats["rx"]["bytes"]) + int(stats["tx"]["bytes"])

    def pids(self, key: str) -> list[int]:
        """Processes in namespace ``key`` now."""
        done = run_in(None, ["ip", "netns", "pids", self.names[key]])
        return [int(p) for p in done.stdout.split()] if done.returncode == 0 else []

    def listening(self, key: str) -> set[int]:
        """TCP ports something listens on in namespace ``key``."""
        done = run_in(self.names[key], ["ss", "-Htln"])
        return {int(line.split()[3].rsplit(":", 1)[1]) for line in done.stdout.splitlines() if line.strip()}

    def kill_all(self, key: str) -> None:
        """SIGKILL every process in namespace ``key`` until none is left (a host lost at once)."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            victims = []
            for pid in self.pids(key):
                try:
                    victims.append(psutil.Process(pid))
                    victims[-1].kill()
                except psutil.Error:
                    pass
            if not victims:
                return
            psutil.wait_procs(victims, timeout=1)
        raise RuntimeError(f"processes {self.pids(key)} in namespace {self.names[key]} survive SIGKILL")

    def remove(self) -> list[str]:
        """Kill everything in them, delete them; returns the names that could not be deleted."""
        for key, ns in self.names.items():
            if ns in self.made:
                self.kill_all(key)
                run_in(None, ["ip", "netns", "del", ns])
        listed = run_in(None, ["ip", "netns", "list"]).stdout
        return [ns for ns in self.made if ns in listed]


def ensure_slurm() -> None:
    """Root, iproute2 and Debian's slurm-wlm + munge (installed by .ci/setup-slurm.sh if missing);
    skips saying why when that is impossible."""
    if os.geteuid() != 0:
        pytest.skip("the Slurm tests run slurmd/slurmctld as root in network namespaces: need root")
    if not (shutil.which("ip") and shutil.which("ss")):
        pytest.skip("iproute2 (ip, ss) is needed for the Slurm tests' namespaces")
    if all(shutil.which(t) or os.path.exists(f"/usr/sbin/{t}") for t in SLURM_TOOLS):
        return
    setup = REPO / ".ci" / "setup-slurm.sh"
    done = subprocess.run(["bash", str(setup)], capture_output=True, text=True, timeout=900)
    if done.returncode != 0 or not all(shutil.which(t) or os.path.exists(f"/usr/sbin/{t}")
                                       for t in SLURM_TOOLS):
        pytest.skip(f"slurm-wlm/munge are not installed and {setup} could not install them: "
                    f"{(done.stderr or done.stdout).strip()[-500:]}")


SLURM_CONF = """\
ClusterName=bgltest
SlurmctldHost={host}({ctl_ip})
SlurmctldPort={ctl_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool-%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd-%n.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ReturnToService=2
SlurmctldTimeout=10
SlurmdTimeout=10
MessageTimeout=5
KillWait=2
InactiveLimit=0
MinJobAge=5
{nodes}
PartitionName=bgl Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
"""


class SlurmCluster:
    """munged, slurmctld in namespace ``L`` and one slurmd per node namespace (see
    :func:`slurm_cluster`).  ``env`` is what Slurm's client commands need (``SLURM_CONF``)."""

    def __init__(self, root: Path, nets: Namespaces):
        self.root = root
        self.nets = nets
        self.conf = root / "slurm.conf"
        self.munge_socket = root / "munge" / "munge.sock"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.procs: dict[str, subprocess.Popen] = {}
        self.node_keys = {name: key for key, name in zip("AB", SLURM_NODES)}

    def write_config(self, ctl_port: int = 6817, slurmd_port: int = 6818) -> None:
        for d in ("state", *(f"spool-{n}" for n in SLURM_NODES)):
            (self.root / d).mkdir()
        cpus = 2
        nodes = "\n".join(f"NodeName={n} NodeAddr={a} CPUs={cpus} State=UNKNOWN"
                          for n, a in SLURM_NODES.items())
        self.conf.write_text(SLURM_CONF.format(
            host=socket.gethostname().split(".")[0], ctl_ip=SLURM_CONTROLLER_IP, ctl_port=ctl_port,
            slurmd_port=slurmd_port, munge_socket=self.munge_socket, d=self.root, nodes=nodes))

    def start_munge(self) -> None:
        mdir = self.munge_socket.parent
        mdir.mkdir(mode=0o700)
        key = mdir / "munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
        self.procs["munged"] = subprocess.Popen(
            ["munged", "--foreground", "--force", f"--socket={self.munge_socket}",
             f"--key-file={key}", f"--log-file={mdir / 'munged.log'}",
             f"--pid-file={mdir / 'munged.pid'}", f"--seed-file={mdir / 'munged.seed'}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        self._wait(lambda: self.munge_socket.exists(), "munged", mdir / "munged.log")

    def start_slurmctld(self) -> None:
        self.procs["slurmctld"] = subprocess.Popen(
            [*in_netns(self.nets.names["L"]), "slurmctld", "-D", "-i", "-f", str(self.conf)],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, env=self.env)
        self._wait(lambda: run_in(self.nets.names["L"], ["scontrol", "ping"], env=self.env)
                   .stdout.count("UP") >= 1, "slurmctld", self.root / "slurmctld.log")

    def start_slurmd(self, node: str) -> None:
        """slurmd for ``node`` in its namespace (again after :meth:`lose_node`)."""
        self.procs[node] = subprocess.Popen(
            [*in_netns(self.nets.names[self.node_keys[node]]), "slurmd", "-D",
             "-N", node, "-f", str(self.conf)],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, env=self.env)

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Every node idle (after a restart a node may first be down: resume it)."""
        deadline = time.monotonic() + timeout
        while True:
            states = self.node_states()
            if all(s == "idle" for s in states.values()) and len(states) == len(SLURM_NODES):
                return
            for node, state in states.items():
                if state.startswith("down") and self.procs[node].poll() is None:
                    self.scontrol("update", f"NodeName={node}", "State=RESUME")
            if time.monotonic() > deadline:
                logs = "".join((self.root / f"slurmd-{n}.log").read_text()[-800:]
                               for n in SLURM_NODES if (self.root / f"slurmd-{n}.log").exists())
                pytest.skip(f"Slurm nodes not idle within {timeout:g} s: {states}\n{logs}"
                            f"{(self.root / 'slurmctld.log').read_text()[-1500:]}")
            time.sleep(0.3)

    def node_states(self) -> dict[str, str]:
        done = run_in(self.nets.names["L"], ["sinfo", "-h", "-N", "-o", "%N %t"], env=self.env)
        return dict(line.split() for line in done.stdout.splitlines() if line.strip())

    def scontrol(self, *args: str) -> str:
        return run_in(self.nets.names["L"], ["scontrol", *args], env=self.env).stdout

    def lose_node(self, node: str) -> None:
        """The node goes away at once: every process in its namespace (slurmd, slurmstepd, the
        job's tasks) is SIGKILLed."""
        self.nets.kill_all(self.node_keys[node])

    def daemon_pids(self, name: str) -> set[int]:
        """Pid of daemon ``name`` (``slurmctld`` or a node) and of its helpers (slurmscriptd)."""
        proc = self.procs[name]
        try:
            return {proc.pid, *(c.pid for c in psutil.Process(proc.pid).children(recursive=True))}
        except psutil.Error:
            return {proc.pid}

    def jobs(self) -> str:
        return run_in(self.nets.names["L"], ["squeue", "-h", "-o", "%i %t %N"], env=self.env).stdout

    def _wait(self, ready, what: str, log: Path, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            proc = self.procs.get(what)
            if (proc is not None and proc.poll() is not None) or time.monotonic() > deadline:
                text = log.read_text()[-1500:] if log.exists() else "(no log)"
                pytest.skip(f"{what} did not start: {text}")
            time.sleep(0.2)

    def stop(self) -> None:
        for proc in self.procs.values():
            stop_process(proc)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """A real Slurm: slurmctld in namespace ``L`` (10.78.0.1, the login node), slurmd for node
    ``bgla`` in ``A`` (10.78.0.2) and ``bglb`` in ``B`` (10.78.0.3), one munged for all (its
    socket is a file: namespaces share the filesystem).  Torn down at the end of the session,
    whatever happened; fails if a namespace survives."""
    ensure_slurm()
    root = tmp_path_factory.mktemp("slurm")
    os.chmod(root, 0o755)
    nets = Namespaces(f"bgs{os.getpid() % 100000}",
                      {"L": SLURM_CONTROLLER_IP, "A": SLURM_NODES["bgla"], "B": SLURM_NODES["bglb"]})
    cluster = SlurmCluster(root, nets)
    try:
        nets.create()
        cluster.write_config()
        cluster.start_munge()
        cluster.start_slurmctld()
        for node in SLURM_NODES:
            cluster.start_slurmd(node)
        cluster.wait_idle()
        yield cluster
    finally:
        cluster.stop()
        left = nets.remove()
        assert not left, f"namespaces left behind: {left}"
