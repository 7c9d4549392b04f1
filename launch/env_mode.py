"""``bgl launch --backend env``: bgl inside a job whose processes someone else started.

torchrun (``--nnodes N --nproc_per_node M``), TorchX ``dist.ddp``, a Kubeflow
PyTorchJob or ``srun`` starts ``bgl launch --backend env ... -- CMD`` once per
trainer.  Each of those processes (:func:`run_env_mode`):

1. reads its rank and node from the environment (:mod:`~bgl.launch.env_world`);
2. joins torch's TCPStore at ``MASTER_ADDR:MASTER_PORT``: each node's local
   rank 0 publishes the node's address, then every process builds the same
   :class:`~bgl.launch.spec.ClusterSpec` from them (part ``k`` on node
   ``k % nodes``, as everywhere; no hosts file);
3. rank 0 makes the run's CURVE keys and SHUTDOWN token and publishes them
   in the store (so the store must be as private as torch's rendezvous
   already has to be: whoever can reach ``MASTER_PORT`` can join the process
   group as well);
4. local rank 0 starts its node's graph servers under the agent, waits for
   their PING and marks its parts ready; once every part is, rank 0 sends
   the warm-up request through all servers;
5. every process runs ``CMD`` under the agent with ``BGL_SERVERS``,
   ``BGL_PARTITION``, ``BGL_LOCAL_PARTS``, its CURVE keys, and the torch
   variables that make its ``init_process_group`` join the same store;
6. supervises as ``bgl launch`` does (a graph server that dies is restarted
   on its node); a trainer that fails, anywhere, is written to the store as
   ``failed`` and every other process stops with that message; a node
   leader keeps its servers until every trainer of the job is done.
"""
from __future__ import annotations

import argparse
import logging
import secrets
import socket
import sys
import time
from typing import Sequence

from bgl.errors import LaunchError
from bgl.sampler.reconnect import ENV_RETRY_TIMEOUT

from .backends import LocalBackend, port_is_free
from .env_world import World, connect_store, node_address, read_world
from .hosts import Host
from .run_keys import RunKeys, keys_env, plain_env
from .spec import (ENV_LIFECYCLE, ENV_RESTART_COUNT, ClusterSpec, TrainerPlacement, build_cluster_spec,
                   check_plaintext_allowed, check_server_slots, is_bare_python, trainer_env)
from .supervisor import POLL_SECONDS, LaunchAborted, Supervisor

log = logging.getLogger(__name__)

STORE_POLL = 0.5  # seconds between looks at the store's ``failed`` key


class EnvBackend(LocalBackend):
    """Starts this process's own servers and trainer here; reports a failure any other
    process of the job wrote to the store (as a lost host: the launch stops on it)."""

    def __init__(self, store, world: World, grace: float):
        super().__init__(grace=grace, name="env")
        self.store = store
        self.world = world
        self._next_look = 0.0

    def preflight(self, spec: ClusterSpec) -> None:
        """Only this node's server ports: the other nodes check their own."""
        for s in spec.servers:
            if s.host_index == self.world.node_rank and not port_is_free(s.host.ip, s.port):
                raise LaunchError(f"port {s.port} on {s.host.ip} (graph server for part {s.part}) "
                                  "is already in use; choose another --port-base")

    def lost_host(self) -> str | None:
        """The ``failed`` message of another process of the job, if one wrote it."""
        now = time.monotonic()
        if now < self._next_look:
            return None
        self._next_look = now + STORE_POLL
        try:
            if self.store.has(["failed"]):
                return self.store.get("failed").decode(errors="replace")
        except RuntimeError as e:  # the store's host (rank 0) is gone: so is the job
            return f"the rendezvous store at {self.world.master_addr}:{self.world.master_port} is gone ({e})"
        return None


def _wait_keys(store, keys: list[str], what: str, timeout: float, backend: EnvBackend,
               supervisor: Supervisor | None = None) -> None:
    """Block until every key is in the store, staying responsive to failures and signals."""
    deadline = time.monotonic() + timeout
    while not store.has(keys):
        failure = backend.lost_host()
        if failure:
            raise LaunchAborted(failure)
        if supervisor is not None and supervisor._signal is not None:
            raise LaunchAborted(*supervisor._signal_failure())
        if time.monotonic() > deadline:
            missing = [k for k in keys if not store.has([k])]
            raise LaunchAborted(f"{what}: not in the rendezvous store within {timeout:g} s "
                                f"(missing {', '.join(missing)})")
        time.sleep(POLL_SECONDS)


class EnvSupervisor(Supervisor):
    """:class:`Supervisor` for one process of an externally started job (module docstring)."""

    def __init__(self, spec: ClusterSpec, backend: EnvBackend, world: World, keys: RunKeys | None,
                 token: str, **options):
        super().__init__(spec, backend, **options)  # its own fresh keys are replaced below
        self.world = world
        self.store = backend.store
        self.keys = keys
        self.client_keys = keys.launcher_client() if keys else None
        self.token = token
        self.host = spec.hosts[world.node_rank]
        self.my_servers = [s for s in spec.servers if s.host_index == world.node_rank] \
            if world.is_node_leader else []

    def run(self) -> int:
        self.timeline.start()  # this process's own lifecycle: its trainer's events (one line per rank)
        self.backend.preflight(self.spec)
        restore = self._install_signal_handlers()
        try:
            try:
                failure = self._run_steps()
            except LaunchAborted as e:
                failure = (str(e), e.exit_code)
            except RuntimeError as e:  # torch's store: its host (rank 0) went away mid-request
                failure = (f"the rendezvous store at {self.world.master_addr}:"
                           f"{self.world.master_port} failed: {e}", 1)
            finally:
                self._teardown()
            if failure is None:
                return 0
            message, code = failure
            self._publish_failure(message)
            raise LaunchAborted(message, code)
        finally:
            restore()

    def _publish_failure(self, message: str) -> None:
        """Tell every other process of the job (the first failure is the one that stays)."""
        try:
            if not self.store.has(["failed"]):
                self.store.set("failed", f"rank {self.world.rank} ({self.host.label}): {message}")
        except RuntimeError:
            pass  # the store went away with rank 0: the others notice that themselves

    def _run_steps(self) -> tuple[str, int] | None:
        if self.my_servers:
            for s in self.my_servers:
                self._start_server(s)
            failure = self._wait_servers_ready()
            if failure:
                return failure
            for s in self.my_servers:
                self.store.set(f"ready/{s.part}", "1")
        _wait_keys(self.store, [f"ready/{p}" for p in range(self.spec.num_parts)],
                   "graph servers of every node", self.server_timeout, self.backend, self)
        if self.world.rank == 0:
            failure = Supervisor._warm_up_servers(self, time.monotonic() + self.server_timeout)
            if failure:
                return failure
            self.store.set("warm", "1")
        _wait_keys(self.store, ["warm"], "the warm-up request", self.server_timeout, self.backend, self)
        self._start_trainer()
        failure = self._watch()
        self.timeline.stop()
        if failure:
            return failure
        done = self.store.add("done", 1)
        log.info("rank %d: trainer done (%d of %d)", self.world.rank, done, self.world.world_size)
        if self.my_servers:
            failure = self._serve_until_all_done()
            if failure:
                return failure
            self._shutdown_servers()
        self._leave()
        return None

    def _leave(self) -> None:
        """Count this process out; rank 0, whose process may host the store, waits (up to
        ``grace`` + 10 s) until every other process has, so none loses the store mid-request."""
        self.store.add("left", 1)
        if self.world.rank == 0 and not self.world.agent_store:
            deadline = time.monotonic() + self.grace + 10.0
            while self.store.add("left", 0) < self.world.world_size and time.monotonic() < deadline:
                time.sleep(POLL_SECONDS)

    def _warm_up_servers(self, deadline: float) -> tuple[str, int] | None:
        return None  # only rank 0 warms up, once every node's servers answer (see _run_steps)

    def _start_trainer(self) -> None:
        placement = TrainerPlacement(node_rank=self.world.node_rank, host=self.host)
        env = {**trainer_env(self.spec, placement), **self.world.trainer_env(), **plain_env(self.keys)}
        env.pop("TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", None)
        # The job's launcher restarts whole processes (torchrun's count is the restart number).
        env[ENV_LIFECYCLE], env[ENV_RESTART_COUNT] = "1", "0"
        if self.server_watch.server_restarts:  # the client waits for a restarted server this long
            env[ENV_RETRY_TIMEOUT] = f"{self.server_timeout:g}"
        user = list(self.spec.command)
        if is_bare_python(user[0]):
            user[0] = self.spec.python
        self._start("trainer", f"trainer rank {self.world.rank} on {self.host.tag}",
                    f"[{self.host.tag}:trainer:{self.world.rank}]", f"rank{self.world.rank}",
                    placement, user, env, keys_env(self.keys, self.host.ip))

    def _serve_until_all_done(self) -> tuple[str, int] | None:
        """Keep this node's servers (restarted if they die) until every trainer reported done."""
        while self.store.add("done", 0) < self.world.world_size:
            if self._signal is not None:
                return self._signal_failure()
            failure = self.backend.lost_host()
            if failure:
                return failure, 1
            for m in list(self.members):
                if m.role == "server" and not m.done:
                    status = m.launched.popen.poll()
                    failure = (self.server_watch.check(m) if status is None else
                               self.server_watch.died(m, self._exited(m, status)))
                    if failure:
                        return failure
            time.sleep(POLL_SECONDS)
        return None


def node_hosts(store, world: World, timeout: float, backend: EnvBackend) -> list[Host]:
    """Every node's address (each leader publishes its own), named by host name (plus the node
    rank where names repeat, as on one machine)."""
    if world.is_node_leader:
        store.set(f"node/{world.node_rank}", f"{node_address(world.master_addr)} {socket.gethostname()}")
    keys = [f"node/{n}" for n in range(world.num_nodes)]
    _wait_keys(store, keys, "node addresses", timeout, backend)
    entries = [store.get(k).decode().split(" ", 1) for k in keys]
    names = [name for _, name in entries]
    return [Host(ip=ip, name=name if names.count(name) == 1 else f"{name}-{n}", line=n + 1)
            for n, (ip, name) in enumerate(entries)]


def run_env_mode(args: argparse.Namespace, command: Sequence[str], num_parts: int) -> int:
    """``bgl launch --backend env``: see the module docstring; returns this trainer's exit code."""
    world = read_world()
    check_server_slots(num_parts, world.num_nodes, args.num_servers_per_host, "the job")
    if args.num_trainers is not None and args.num_trainers != world.local_world_size:
        raise LaunchError(f"--num-trainers {args.num_trainers} but this node runs "
                          f"{world.local_world_size} trainer process(es) (LOCAL_WORLD_SIZE); under "
                          "--backend env the job's launcher decides (torchrun --nproc_per_node)")
    if not command:
        raise LaunchError("no training command given (put it after '--', e.g. -- python train.py)")
    store = connect_store(world, args.server_timeout)
    backend = EnvBackend(store, world, args.grace)
    hosts = node_hosts(store, world, args.server_timeout, backend)
    if args.no_curve:
        check_plaintext_allowed(hosts)
    # Ports: part k on node n binds port_base + k // nodes there, shifted by n * servers-per-node so
    # that nodes sharing an address (several agents on one machine) never collide.
    hosts = [Host(ip=h.ip, port=args.port_base + n * args.num_servers_per_host, line=h.line, name=h.name)
             for n, h in enumerate(hosts)]
    spec = build_cluster_spec(
        hosts, args.partition, num_parts, command, num_trainers=world.local_world_size,
        num_servers_per_host=args.num_servers_per_host, master_port=world.master_port,
        python=args.python, workdir=args.workdir, server_threads=args.server_threads,
        local_reads=not args.no_local_reads)
    if world.rank == 0:
        keys = None if args.no_curve else RunKeys.generate(spec)
        store.set("keys", keys.to_text() if keys else "")
        store.set("token", secrets.token_hex(16))
    _wait_keys(store, ["keys", "token"], "the run's keys", args.server_timeout, backend)
    text = store.get("keys").decode()
    keys = RunKeys.from_text(text) if text else None
    supervisor = EnvSupervisor(
        spec, backend, world, keys, store.get("token").decode(), server_timeout=args.server_timeout,
        grace=args.grace, server_restarts=args.server_restarts,
        restart_window=args.server_restart_window, health_interval=args.server_ping_interval,
        hang_timeout=args.server_hang_timeout)
    try:
        return supervisor.run()
    except LaunchAborted as e:
        print(f"bgl launch: rank {world.rank}: failed: {e}", file=sys.stderr)
        return e.exit_code
    finally:
        lifecycle = supervisor.lifecycle()
        if lifecycle is not None:  # this process's last line: where its wall time went (ETT)
            print(f"bgl launch: rank {world.rank}: {lifecycle.line()}", file=sys.stderr, flush=True)
