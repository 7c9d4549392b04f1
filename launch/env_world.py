"""Where this process stands in a job someone else started: ranks, nodes and the rendezvous.

``bgl launch --backend env`` runs as every trainer process of a job started by
torchrun (its own multi-node rendezvous), TorchX ``dist.ddp``, a Kubeflow
PyTorchJob or a plain ``srun``.  :func:`read_world` reads what they set:

=====================  =============================================  ==========================
what                   torchrun / TorchX / Kubeflow                   plain ``srun``
=====================  =============================================  ==========================
global rank            ``RANK``                                       ``SLURM_PROCID``
number of processes    ``WORLD_SIZE``                                 ``SLURM_NTASKS``
rank on this node      ``LOCAL_RANK`` (0 if unset: one per pod)       ``SLURM_LOCALID``
processes on the node  ``LOCAL_WORLD_SIZE`` (1 if unset)              ``SLURM_STEP_TASKS_PER_NODE``
node rank              ``GROUP_RANK`` (torchrun), ``NODE_RANK``,      ``SLURM_NODEID``
                       else ``RANK // LOCAL_WORLD_SIZE``
number of nodes        ``GROUP_WORLD_SIZE``, else                     ``SLURM_STEP_NUM_NODES``
                       ``WORLD_SIZE // LOCAL_WORLD_SIZE``
rendezvous             ``MASTER_ADDR``, ``MASTER_PORT``               the same (required)
=====================  =============================================  ==========================

torchrun's agent already hosts a TCPStore at ``MASTER_ADDR:MASTER_PORT`` and
says so in ``TORCHELASTIC_USE_AGENT_STORE=True``; bgl then joins it as a client
(keys under ``bgl/<run id>/<attempt>/``).  Elsewhere rank 0's bgl process hosts
that store itself and tells its trainer, through the same variable, to join it
rather than bind the port a second time.
"""
from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass
from datetime import timedelta
from typing import Mapping

from bgl.errors import LaunchError

STORE_PREFIX = "bgl"
_PER_NODE = re.compile(r"^(\d+)(?:\(x(\d+)\))?$")


def env_int(env: Mapping[str, str], key: str, *, minimum: int = 0) -> int | None:
    """``int(env[key])``, None if unset or blank; LaunchError naming ``key`` if it is not an
    integer >= ``minimum`` (counts like ``SLURM_CPUS_ON_NODE=8``; a per-node list such as
    ``2(x3)`` goes through :func:`tasks_on_node`)."""
    raw = env.get(key)
    if raw is None or raw.strip() == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise LaunchError(f"{key}={raw!r} is not an integer") from None
    if value < minimum:
        raise LaunchError(f"{key} must be >= {minimum}, got {value}")
    return value


def tasks_on_node(per_node: str, node: int) -> int:
    """Entry ``node`` of a Slurm per-node count list: ``"2(x3),1"`` -> 2, 2, 2, 1."""
    counts: list[int] = []
    for item in per_node.split(","):
        m = _PER_NODE.match(item.strip())
        if not m:
            raise LaunchError(f"tasks-per-node list {per_node!r}: cannot read {item!r}")
        counts += [int(m.group(1))] * int(m.group(2) or 1)
    if not 0 <= node < len(counts):
        raise LaunchError(f"tasks-per-node list {per_node!r} has no entry for node {node}")
    return counts[node]


@dataclass(frozen=True)
class World:
    """This process's place in the job (see the module docstring for where each comes from)."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    node_rank: int
    num_nodes: int
    master_addr: str
    master_port: int
    source: str  # "torch" or "slurm"
    agent_store: bool  # torchrun's agent hosts the store at MASTER_ADDR:MASTER_PORT
    run_id: str
    attempt: str

    @property
    def is_node_leader(self) -> bool:
        """The process that starts this node's graph servers (local rank 0)."""
        return self.local_rank == 0

    def trainer_env(self) -> dict[str, str]:
        """What the training command needs to join torch's rendezvous as this rank."""
        env = {"RANK": str(self.rank), "WORLD_SIZE": str(self.world_size),
               "LOCAL_RANK": str(self.local_rank), "LOCAL_WORLD_SIZE": str(self.local_world_size),
               "GROUP_RANK": str(self.node_rank), "MASTER_ADDR": self.master_addr,
               "MASTER_PORT": str(self.master_port)}
        # Our rank 0 hosts the store (below) unless torchrun's agent does: either way the
        # trainers join it instead of binding MASTER_PORT again.
        env["TORCHELASTIC_USE_AGENT_STORE"] = "True"
        env["TORCHELASTIC_RESTART_COUNT"] = self.attempt
        return env


def read_world(env: Mapping[str, str] | None = None) -> World:
    """Read this process's rank, node and rendezvous from the environment.

    Raises
    ------
    LaunchError
        when neither torch's (``RANK``/``WORLD_SIZE``) nor Slurm's (``SLURM_PROCID``)
        variables are there, when ``MASTER_ADDR`` or ``MASTER_PORT`` is missing, or a value is
        out of range; the message names the variable.
    """
    env = os.environ if env is None else env
    if env.get("RANK") is not None or env.get("WORLD_SIZE") is not None:
        source = "torch"
        rank, world = env_int(env, "RANK"), env_int(env, "WORLD_SIZE", minimum=1)
        if rank is None or world is None:
            missing = "RANK" if rank is None else "WORLD_SIZE"
            raise LaunchError(f"--backend env: {missing} is not set (RANK and WORLD_SIZE come together)")
        local_rank = env_int(env, "LOCAL_RANK") or 0
        local_world = env_int(env, "LOCAL_WORLD_SIZE", minimum=1) or 1
        node_rank = env_int(env, "GROUP_RANK")
        if node_rank is None:
            node_rank = env_int(env, "NODE_RANK")
        if node_rank is None:
            node_rank = rank // local_world
        num_nodes = env_int(env, "GROUP_WORLD_SIZE", minimum=1) or max(1, world // local_world)
    elif env.get("SLURM_PROCID") is not None:
        source = "slurm"
        rank, world = env_int(env, "SLURM_PROCID"), env_int(env, "SLURM_NTASKS", minimum=1)
        if world is None:
            raise LaunchError("--backend env under srun: SLURM_NTASKS is not set")
        local_rank = env_int(env, "SLURM_LOCALID") or 0
        node_rank = env_int(env, "SLURM_NODEID") or 0
        num_nodes = (env_int(env, "SLURM_STEP_NUM_NODES", minimum=1) or env_int(env, "SLURM_NNODES", minimum=1)
                     or 1)
        per_node = env.get("SLURM_STEP_TASKS_PER_NODE") or env.get("SLURM_TASKS_PER_NODE")
        local_world = tasks_on_node(per_node, node_rank) if per_node else max(1, world // num_nodes)
    else:
        raise LaunchError("--backend env runs as each trainer of a job started by torchrun, TorchX, "
                          "Kubeflow or srun, but neither RANK/WORLD_SIZE nor SLURM_PROCID is set")
    if not env.get("MASTER_ADDR"):
        raise LaunchError("--backend env: MASTER_ADDR is not set; bgl agrees on graph-server "
                          "addresses through torch's rendezvous store at MASTER_ADDR:MASTER_PORT "
                          "(torchrun, TorchX and Kubeflow set both; under srun export them)")
    master_port = env_int(env, "MASTER_PORT", minimum=1)
    if master_port is None or master_port > 65535:
        raise LaunchError(f"--backend env: MASTER_PORT must be a port 1..65535, got "
                          f"{env.get('MASTER_PORT')!r}")
    for name, value, limit in (("rank", rank, world), ("local rank", local_rank, local_world),
                               ("node rank", node_rank, num_nodes)):
        if not 0 <= value < limit:
            raise LaunchError(f"--backend env: {name} {value} is outside 0..{limit - 1} "
                              f"(from the {source} variables)")
    run_id = env.get("TORCHELASTIC_RUN_ID") or env.get("SLURM_JOB_ID") or "run"
    return World(rank=rank, world_size=world, local_rank=local_rank, local_world_size=local_world,
                 node_rank=node_rank, num_nodes=num_nodes, master_addr=env["MASTER_ADDR"],
                 master_port=master_port, source=source,
                 agent_store=env.get("TORCHELASTIC_USE_AGENT_STORE") == "True",
                 run_id=run_id, attempt=env.get("TORCHELASTIC_RESTART_COUNT", "0"))


class RunStore:
    """The keys of one run and attempt in torch's store.

    ``set``/``get``/``add`` are the store's own; :meth:`has` asks, without
    blocking, whether keys are set (torch 2.2's Python store has no ``check``:
    every :meth:`set` also bumps a counter ``KEY?``, and ``add(KEY?, 0)`` reads it).
    """

    def __init__(self, store, prefix: str):
        self.store = store
        self.prefix = prefix

    def set(self, key: str, value: str) -> None:
        self.store.set(self.prefix + key, value)
        self.store.add(self.prefix + key + "?", 1)

    def get(self, key: str) -> bytes:
        return self.store.get(self.prefix + key)

    def add(self, key: str, amount: int) -> int:
        return self.store.add(self.prefix + key, amount)

    def has(self, keys: list[str]) -> bool:
        """Are all ``keys`` set now?  Never blocks (``get`` would wait for a missing key)."""
        return all(self.store.add(self.prefix + k + "?", 0) > 0 for k in keys)


def connect_store(world: World, timeout: float) -> RunStore:
    """torch's TCPStore at ``MASTER_ADDR:MASTER_PORT`` (joined, or hosted by rank 0 when no
    torchrun agent hosts it), under a prefix of this run and attempt."""
    from torch.distributed import TCPStore

    host_it = world.rank == 0 and not world.agent_store
    try:
        store = TCPStore(world.master_addr, world.master_port, world.world_size if host_it else None,
                         host_it, timedelta(seconds=timeout), wait_for_workers=False)
    except (RuntimeError, OSError) as e:
        what = "host" if host_it else "reach"
        raise LaunchError(f"--backend env: cannot {what} the rendezvous store at "
                          f"{world.master_addr}:{world.master_port}: {e}") from None
    return RunStore(store, f"{STORE_PREFIX}/{world.run_id}/{world.attempt}/")


def node_address(master_addr: str, env: Mapping[str, str] | None = None) -> str:
    """The address other nodes reach this one at: ``BGL_NODE_ADDR`` if set, else the local end
    of a route towards ``MASTER_ADDR`` (no packet is sent)."""
    env = os.environ if env is None else env
    if env.get("BGL_NODE_ADDR"):
        return env["BGL_NODE_ADDR"]
    try:
        info = socket.getaddrinfo(master_addr, 1, proto=socket.IPPROTO_UDP)[0]
    except socket.gaierror as e:
        raise LaunchError(f"--backend env: MASTER_ADDR {master_addr!r} does not resolve: {e}") from None
    with socket.socket(info[0], socket.SOCK_DGRAM) as s:
        s.connect(info[4])
        return s.getsockname()[0]
