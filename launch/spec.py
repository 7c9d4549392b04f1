"""The cluster spec: where every graph server and trainer runs, and on which port.

Pure data, no processes: :func:`build_cluster_spec` turns a hosts list and
the launch options into a frozen :class:`ClusterSpec`, validating
everything that can be checked before anything starts (enough server
slots for the parts, ports in range and not colliding).

Placement rules
---------------
* One graph server per partition part.  Part ``k`` runs on host
  ``k % num_hosts`` (round-robin), as its ``k // num_hosts``-th server.
* A host may hold at most ``num_servers_per_host`` servers, so a launch
  needs ``num_parts <= num_hosts * num_servers_per_host``.
* Server ``j`` of a host binds ``host.port + j`` (the hosts file's port,
  or ``port_base``) on the host's own address.
* ``torch.distributed.run`` runs on every host with ``num_trainers``
  processes each; its rendezvous (``master_port``) is on the first host,
  by default the first port after that host's server slots.
* Co-located reads (``local_reads``, on by default): a trainer's
  ``BGL_LOCAL_PARTS`` lists the parts served from its own host's address, and
  its client reads those from the partition files instead of over a socket
  (:mod:`bgl.sampler.colocated`).
"""
from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from bgl.errors import LaunchError

from .hosts import Host

DEFAULT_PORT_BASE = 30050
# Environment contract with bgl.DataLoader (see ARCHITECTURE.md, "Launch").
ENV_SERVERS = "BGL_SERVERS"
ENV_PARTITION = "BGL_PARTITION"
ENV_LOCAL_PARTS = "BGL_LOCAL_PARTS"
# Every launched process carries the launch id (logs of one launch can be told apart).
ENV_LAUNCH_ID = "BGL_LAUNCH_ID"
# The SHUTDOWN token travels in this variable, never on a command line.
ENV_SERVER_TOKEN = "BGL_SERVER_TOKEN"
# How many times the trainers were restarted (--max-restarts): > 0 tells a script to resume.
ENV_RESTART_COUNT = "BGL_RESTART_COUNT"
# "1": the launcher reads the trainers' lifecycle events from their stdout (bgl.launch.lifecycle).
ENV_LIFECYCLE = "BGL_LIFECYCLE"
# torchrun prefixes each worker's tee'd line with this; the supervisor turns it into the rank.
RANK_PREFIX_TEMPLATE = "[bgl-rank ${rank}]:"


@dataclass(frozen=True)
class ServerPlacement:
    """One graph server: serves partition ``part`` on ``host`` at ``port``."""

    part: int
    host_index: int
    host: Host
    port: int

    @property
    def address(self) -> str:
        """ZeroMQ endpoint of this server (``tcp://host:port``)."""
        return f"tcp://{self.host.url_host()}:{self.port}"

    @property
    def label(self) -> str:
        """Output prefix label ``ip:server:part``."""
        return f"{self.host.ip}:server:{self.part}"


@dataclass(frozen=True)
class TrainerPlacement:
    """One ``torch.distributed.run`` agent: node ``node_rank`` on ``host``."""

    node_rank: int
    host: Host

    @property
    def label(self) -> str:
        """Output prefix label ``ip:torchrun:node_rank``."""
        return f"{self.host.ip}:torchrun:{self.node_rank}"


@dataclass(frozen=True)
class ClusterSpec:
    """Everything a backend needs to start a launch; built by :func:`build_cluster_spec`."""

    hosts: tuple[Host, ...]
    partition_dir: str
    num_parts: int
    num_trainers: int
    num_servers_per_host: int
    servers: tuple[ServerPlacement, ...]
    trainers: tuple[TrainerPlacement, ...]
    master_addr: str
    master_port: int
    command: tuple[str, ...]
    python: str = sys.executable
    workdir: str = field(default_factory=os.getcwd)
    server_threads: int | None = None
    local_reads: bool = True

    def local_parts(self, host: Host) -> list[int]:
        """Parts whose graph server runs at ``host``'s address (what its trainers may read directly)."""
        return sorted(s.part for s in self.servers if s.host.ip == host.ip)

    @property
    def server_addresses(self) -> list[str]:
        """Addresses of all graph servers in part order (the ``BGL_SERVERS`` value)."""
        return [s.address for s in sorted(self.servers, key=lambda s: s.part)]

    def to_dict(self) -> dict:
        """The spec as a JSON-ready dict (for logs and dry runs)."""
        return {
            "hosts": [h.ip if h.port is None else f"{h.ip} {h.port}" for h in self.hosts],
            "partition_dir": self.partition_dir,
            "num_parts": self.num_parts,
            "servers": [{"part": s.part, "address": s.address} for s in self.servers],
            "trainers": [{"node_rank": t.node_rank, "host": t.host.ip, "nproc": self.num_trainers,
                          "local_parts": self.local_parts(t.host) if self.local_reads else []}
                         for t in self.trainers],
            "master": f"{self.master_addr}:{self.master_port}",
            "command": list(self.command),
        }


def build_cluster_spec(hosts: Sequence[Host], partition_dir: str | os.PathLike, num_parts: int,
                       command: Sequence[str], *, num_trainers: int = 1,
                       num_servers_per_host: int = 1, port_base: int = DEFAULT_PORT_BASE,
                       master_port: int | None = None, python: str = sys.executable,
                       workdir: str | os.PathLike | None = None,
                       server_threads: int | None = None, local_reads: bool = True) -> ClusterSpec:
    """Place servers and trainers (see the module docstring for the rules).

    Raises
    ------
    LaunchError
        if there are too few server slots, a count is < 1, a port falls
        outside 1..65535 or two processes would bind the same address, or
        the training command is empty.
    """
    hosts = tuple(hosts)
    if not hosts:
        raise LaunchError("no hosts given")
    for name, value in (("num_parts", num_parts), ("num_trainers", num_trainers),
                        ("num_servers_per_host", num_servers_per_host)):
        if not isinstance(value, int) or value < 1:
            raise LaunchError(f"{name} must be an integer >= 1, got {value!r}")
    if not 1 <= port_base <= 65535:
        raise LaunchError(f"port_base must be in 1..65535, got {port_base}")
    if server_threads is not None and (not isinstance(server_threads, int) or server_threads < 1):
        raise LaunchError(f"server_threads must be an integer >= 1, got {server_threads!r}")
    if not command:
        raise LaunchError("no training command given (put it after '--', e.g. -- python train.py)")
    slots = len(hosts) * num_servers_per_host
    if num_parts > slots:
        raise LaunchError(
            f"the partition has {num_parts} parts but {len(hosts)} host(s) x "
            f"{num_servers_per_host} server(s) per host = {slots} server slot(s); "
            f"add hosts or pass --num-servers-per-host {-(-num_parts // len(hosts))}")

    servers = []
    for part in range(num_parts):
        h = part % len(hosts)
        host = hosts[h]
        port = (host.port or port_base) + part // len(hosts)
        servers.append(ServerPlacement(part=part, host_index=h, host=host, port=port))
    if master_port is None:
        master_port = (hosts[0].port or port_base) + num_servers_per_host

    used: dict[tuple[str, int], str] = {}
    for what, ip, port in [*((f"server for part {s.part}", s.host.ip, s.port) for s in servers),
                           ("torch.distributed master", hosts[0].ip, master_port)]:
        if not 1 <= port <= 65535:
            raise LaunchError(f"{what} on {ip} would use port {port}, outside 1..65535")
        if (ip, port) in used:
            raise LaunchError(f"{what} and {used[(ip, port)]} would both use {ip}:{port}; "
                              "spread the ports in the hosts file or change --port-base")
        used[(ip, port)] = what

    trainers = tuple(TrainerPlacement(node_rank=i, host=h) for i, h in enumerate(hosts))
    return ClusterSpec(
        hosts=hosts, partition_dir=str(Path(partition_dir).absolute()), num_parts=num_parts,
        num_trainers=num_trainers, num_servers_per_host=num_servers_per_host,
        servers=tuple(servers), trainers=trainers, master_addr=hosts[0].ip,
        master_port=master_port, command=tuple(command), python=python,
        workdir=str(Path(workdir).absolute()) if workdir else os.getcwd(),
        server_threads=server_threads, local_reads=bool(local_reads),
    )


def check_server_slots(num_parts: int, num_nodes: int, servers_per_node: int, where: str) -> None:
    """LaunchError unless ``num_nodes`` nodes with ``servers_per_node`` servers each can serve
    ``num_parts`` parts; ``where`` names the nodes (``"the allocation (n[1-2])"``)."""
    slots = num_nodes * servers_per_node
    if num_parts > slots:
        raise LaunchError(
            f"the partition has {num_parts} parts but {where} has {num_nodes} node(s) x "
            f"{servers_per_node} server(s) per node = {slots} server slot(s); pass "
            f"--servers-per-node {-(-num_parts // num_nodes)} or run on {num_parts} nodes")


def check_plaintext_allowed(hosts: Sequence[Host]) -> None:
    """LaunchError unless every host is a loopback address (plaintext servers trust whoever
    reaches their port, so ``--no-curve`` is for one machine only)."""
    from bgl.sampler.server import is_loopback_endpoint

    remote = [h.ip for h in hosts if not is_loopback_endpoint(f"tcp://{h.url_host()}:1")]
    if remote:
        raise LaunchError(f"--no-curve (plaintext graph servers) is for loopback hosts only; "
                          f"{', '.join(remote)} would serve the graph to anyone who reaches it")


def server_argv(spec: ClusterSpec, server: ServerPlacement) -> list[str]:
    """Command line of one graph server (the token comes through the environment)."""
    argv = [spec.python, "-m", "bgl.sampler.server", "--partition", spec.partition_dir,
            "--part", str(server.part), "--bind", server.address]
    if spec.server_threads is not None:
        argv += ["--threads", str(spec.server_threads)]
    return argv


def is_bare_python(arg: str) -> bool:
    """``python``, ``python3``, ``python3.11``: a PATH lookup, not a chosen interpreter."""
    name = arg.strip()
    return "/" not in name and name.startswith("python") and \
        all(c.isdigit() or c == "." for c in name[len("python"):])


#: Interpreter options that take the next argument as their value (``python -W error x.py``).
_PYTHON_OPTIONS_WITH_VALUE = ("-W", "-X")


def training_program(command: Sequence[str]) -> tuple[str, str] | None:
    """What the training command runs, as ``("script", path)`` for ``python [opts] path ...``,
    ``("program", name)`` for any other program, or None (``python -m mod``, ``python -c``, stdin)."""
    if not command:
        return None
    first = command[0]
    if not (is_bare_python(first) or is_bare_python(os.path.basename(first))):
        return "program", first
    args = iter(command[1:])
    for arg in args:
        if arg in _PYTHON_OPTIONS_WITH_VALUE:
            next(args, None)
        elif arg == "-" or arg.startswith(("-m", "-c")):
            return None
        elif not arg.startswith("-"):
            return "script", arg
    return None


def check_training_program(command: Sequence[str], workdir: str | os.PathLike | None) -> None:
    """LaunchError unless the training script (or program) exists here, relative to ``workdir``.

    For the backends whose trainers run on this machine (local, env): a missing script would
    otherwise surface only after every graph server started, as torchrun's traceback.
    """
    import shutil

    what = training_program(command)
    if what is None:
        return
    kind, name = what
    base = Path(workdir) if workdir else Path.cwd()
    if kind == "program" and "/" not in name:
        if shutil.which(name) is None:
            raise LaunchError(f"training program {name!r} is not on PATH; nothing was started")
        return
    path = base / name
    if not path.is_file():
        where = "" if Path(name).is_absolute() else f" (in {base})"
        raise LaunchError(f"training {kind} {name} not found{where}; nothing was started")


def trainer_argv(spec: ClusterSpec, trainer: TrainerPlacement, log_dir: str) -> list[str]:
    """``python -m torch.distributed.run ... <user command>`` for one host.

    The user command runs with ``--no-python`` exactly as given, except that a
    bare ``python``/``python3`` becomes the launcher's interpreter, so every
    host uses the same environment (as DistDGL assumes).  ``--tee 3`` with
    ``log_dir`` makes torchrun prefix each worker's lines with its rank.  ``--monitor-interval 0.1``
    (torch 2.2 polls every 5 s by default): torchrun notices a dead worker within 0.1 s rather than
    up to 5 s, which was most of the detection time of a failure ``--max-restarts`` recovers from.
    """
    user = list(spec.command)
    if is_bare_python(user[0]):
        user[0] = spec.python
    return [spec.python, "-m", "torch.distributed.run",
            f"--nnodes={len(spec.hosts)}", f"--node_rank={trainer.node_rank}",
            f"--nproc_per_node={spec.num_trainers}",
            f"--master_addr={spec.master_addr}", f"--master_port={spec.master_port}",
            "--monitor-interval=0.1", "--tee=3", f"--log_dir={log_dir}", "--no-python", *user]


def trainer_env(spec: ClusterSpec, trainer: TrainerPlacement | None = None) -> dict[str, str]:
    """Environment of the trainers on ``trainer``'s host: where the servers are, where the
    partition is, and which parts they read from its files (none without ``trainer`` or
    with ``local_reads`` off)."""
    local = spec.local_parts(trainer.host) if trainer is not None and spec.local_reads else []
    return {
        ENV_SERVERS: ",".join(spec.server_addresses),
        ENV_PARTITION: spec.partition_dir,
        ENV_LOCAL_PARTS: ",".join(map(str, local)),
        "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE": RANK_PREFIX_TEMPLATE,
    }


def describe(argv: Sequence[str]) -> str:
    """A shell-quoted command line for logs."""
    return shlex.join(argv)
