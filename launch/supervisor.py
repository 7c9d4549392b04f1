"""Start a cluster, stream its output, and stop all of it on the first failure.

Sequence (:meth:`Supervisor.run`):

1. backend preflight (hosts reachable, ports free) -- nothing starts
   if this fails;
2. one graph server per part, each given the per-launch SHUTDOWN token
   and CURVE keys through the agent's stdin (never argv);
3. wait until every server answers ``PING`` (deadline ``server_timeout``);
4. ``torch.distributed.run`` on every host with ``BGL_SERVERS`` /
   ``BGL_PARTITION`` set;
5. watch: a trainer exiting non-zero, a SIGINT/SIGTERM/SIGHUP to the
   launcher, or a backend reporting a lost machine (``lost_host``: the Slurm
   backend's slurmd watch, env mode's ``failed`` key) stops everything
   everywhere and raises :class:`LaunchAborted` naming who failed first (a
   machine the backend finds unreachable at that moment is named before the
   peers that failed because of it); all trainers exiting 0 shuts the servers
   down with the token and returns 0.
6. graph servers are supervised apart from trainers
   (:class:`~bgl.launch.server_watch.ServerWatch`): a server that exits or
   stops answering health PINGs is restarted at the same address; one that
   dies more than ``server_restarts`` times within ``restart_window``
   seconds stops the launch as in step 5.
7. with ``max_restarts`` > 0 a trainer group that fails (a worker killed, a host's torchrun
   gone) is restarted whole -- every host's torchrun stopped and started again, a DDP world
   restarts together -- with ``BGL_RESTART_COUNT`` = n in its environment, while the graph
   servers keep running; the training script resumes from its own last checkpoint
   (``examples/train_sage.py --checkpoint-dir``).  After ``max_restarts`` restarts the next
   failure stops the launch as in step 5.

Every line any process prints is re-printed as ``[host:role:rank] line``
(:class:`~bgl.launch.members.OutputPump`).

Security: every launch makes fresh CURVE key pairs
(:class:`~bgl.launch.run_keys.RunKeys`), and each process receives only the
keys it needs, over its agent's stdin (never argv).
"""
from __future__ import annotations

import logging
import secrets
import signal
import sys
import threading
import time
import uuid
from typing import Callable, TextIO

from bgl.errors import LaunchError
from bgl.sampler import client as sampler_client
from bgl.sampler.reconnect import ENV_RETRY_TIMEOUT

from .agent import exit_status
from .ett import Lifecycle, Timeline
from .backends import LocalBackend, SshBackend
from .members import Member, OutputPump
from .run_keys import RunKeys, keys_env, plain_env, warm_up_servers
from .server_watch import HANG_TIMEOUT, HEALTH_INTERVAL, ServerWatch
from .spec import (ENV_LAUNCH_ID, ENV_LIFECYCLE, ENV_RESTART_COUNT, ENV_SERVER_TOKEN, ClusterSpec,
                   ServerPlacement, check_plaintext_allowed, describe, server_argv, trainer_argv, trainer_env)

log = logging.getLogger(__name__)

POLL_SECONDS = 0.1


class LaunchAborted(LaunchError):
    """The launch was stopped; ``exit_code`` is what ``bgl launch`` should exit with."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code


def describe_status(status: int) -> str:
    """``137`` -> ``"exit status 137 (killed by SIGKILL)"``."""
    if status > 128:
        try:
            return f"exit status {status} (killed by {signal.Signals(status - 128).name})"
        except ValueError:
            pass
    return f"exit status {status}"


class Supervisor:
    """Runs one launch described by ``spec`` on ``backend`` (see module docstring).

    Parameters
    ----------
    spec : placements and command, from :func:`~bgl.launch.spec.build_cluster_spec`.
    backend : :class:`LocalBackend` or :class:`SshBackend`.
    server_timeout : seconds for every server to answer PING and the warm-up request
        (also for a restarted server to answer PING, and the trainers' retry window).
    server_restarts : restarts allowed per server within ``restart_window`` seconds.
    health_interval : seconds between health PINGs to each running server.
    hang_timeout : seconds without an answered health PING after which a server is replaced.
    grace : seconds between SIGTERM and SIGKILL on teardown.
    sink : where prefixed output goes (default ``sys.stdout``).
    curve : fresh CURVE keys for this run (default); False = plaintext, which only
        loopback hosts may use (LaunchError otherwise).
    max_restarts : times a failed trainer group is restarted (step 7 above; 0: the launch stops).
    """

    def __init__(self, spec: ClusterSpec, backend: LocalBackend | SshBackend, *,
                 server_timeout: float = 180.0, grace: float = 5.0, sink: TextIO | None = None,
                 curve: bool = True, server_restarts: int = 3, restart_window: float = 600.0,
                 health_interval: float = HEALTH_INTERVAL, hang_timeout: float = HANG_TIMEOUT,
                 max_restarts: int = 0):
        self.server_watch = ServerWatch(self._ping, self._start_server, self._stop_member,
                                        server_timeout=server_timeout, server_restarts=server_restarts,
                                        restart_window=restart_window, health_interval=health_interval,
                                        hang_timeout=hang_timeout)
        self.spec = spec
        self.backend = backend
        self.server_timeout = server_timeout
        self.grace = grace
        self.timeline = Timeline()  # the trainers' lifecycle events arrive through the output pump
        self.pump = OutputPump(sink or sys.stdout, on_event=self.timeline.trainer_event)
        self.launch_id = uuid.uuid4().hex[:12]
        # Lives only in this process and the servers' environments.
        self.token = secrets.token_hex(16)
        if not curve:
            check_plaintext_allowed(spec.hosts)
        self.keys = RunKeys.generate(spec) if curve else None
        self.client_keys = self.keys.launcher_client() if curve else None
        self.members: list[Member] = []
        self._signal: int | None = None
        self.max_restarts, self.trainer_restarts = int(max_restarts), 0

    # ------------------------------------------------------------------ public
    def run(self) -> int:
        """Run the launch to the end; 0 when every trainer exited 0.

        Raises
        ------
        LaunchError
            from preflight, before anything starts.
        LaunchAborted
            after teardown, naming the first process that failed or the
            signal that stopped the launch.
        """
        self.timeline.start()
        self.backend.preflight(self.spec)
        log.info("launch %s: %d server(s), %d host(s) x %d trainer(s)", self.launch_id,
                 len(self.spec.servers), len(self.spec.hosts), self.spec.num_trainers)
        restore = self._install_signal_handlers()
        try:
            try:
                failure = self._start_servers() or self._wait_servers_ready()
                if failure is None:
                    self._start_trainers()
                    failure = self._watch()
                    self.timeline.stop()
                if failure is None:
                    self._shutdown_servers()
                    return 0
            finally:
                self._teardown()  # whatever happened (even an exception here), nothing outlives us
                close = getattr(self.backend, "close", None)
                if close is not None:
                    close()
            message, code = failure
            raise LaunchAborted(message, code)
        finally:
            restore()

    # ------------------------------------------------------------------ steps
    def _start(self, role: str, what: str, prefix: str, name: str, placement, argv, env,
               secret_env) -> Member:
        env = {**env, ENV_LAUNCH_ID: self.launch_id, "PYTHONUNBUFFERED": "1"}
        log.debug("starting %s on %s: %s", what, placement.host.ip, describe(argv))
        launched = self.backend.start(f"{self.launch_id}-{name}", placement.host, argv, env,
                                      secret_env, self.spec)
        member = Member(role=role, what=what, prefix=prefix, launched=launched, placement=placement)
        member.reader = self.pump.start(member)
        self.members.append(member)
        return member

    def _start_servers(self) -> tuple[str, int] | None:
        for s in self.spec.servers:
            self._start_server(s)
        return None

    def _start_server(self, s: ServerPlacement, restart: int = 0) -> Member:
        """Start (or restart) the server of ``s``: same address, same token, same CURVE keys;
        a restart gets a fresh private directory of its own."""
        name = f"server{s.part}" + (f"-r{restart}" if restart else "")
        member = self._start("server", f"graph server for part {s.part} at {s.address}",
                             f"[{s.host.tag}:server:{s.part}]", name, s, server_argv(self.spec, s),
                             plain_env(self.keys), {ENV_SERVER_TOKEN: self.token, **keys_env(self.keys, None)})
        member.restart = restart
        return member

    def _wait_servers_ready(self) -> tuple[str, int] | None:
        deadline = time.monotonic() + self.server_timeout
        pending = [m for m in self.members if m.role == "server"]
        while pending:
            if self._signal is not None:
                return self._signal_failure()
            lost = self._lost_host()
            if lost:
                return lost, 1
            for m in list(pending):
                status = m.launched.popen.poll()
                if status is not None:
                    return self._blame(f"{self._exited(m, exit_status(status))} before answering PING")
                if self._ping(m.placement.address, 0.5):
                    m.ready = True
                    pending.remove(m)
            if pending and time.monotonic() > deadline:
                names = ", ".join(m.what for m in pending)
                return f"{names} did not answer PING within {self.server_timeout:g} s", 1
            if pending:
                time.sleep(POLL_SECONDS)
        log.info("all %d graph server(s) answer PING; warming them up", len(self.spec.servers))
        return self._warm_up_servers(deadline)

    def _warm_up_servers(self, deadline: float) -> tuple[str, int] | None:
        """One small sample + feature/label read through every server before trainers start.

        The servers' numba kernels compile on first use (tens of seconds on a
        busy machine when the on-disk cache is cold); doing it here keeps that
        out of the trainers' request timeouts.
        """
        outcome: list[BaseException | None] = []
        addresses = self.spec.server_addresses
        timeout = max(1.0, deadline - time.monotonic())

        def warm() -> None:
            try:
                warm_up_servers(addresses, timeout, curve=self.client_keys)
                outcome.append(None)
            except BaseException as e:  # reported by the main thread
                outcome.append(e)

        thread = threading.Thread(target=warm, name="server warm-up", daemon=True)
        thread.start()
        while thread.is_alive():
            if self._signal is not None:
                return self._signal_failure()
            lost = self._lost_host()
            if lost:
                return lost, 1
            for m in self.members:
                status = m.launched.popen.poll()
                if status is not None:
                    return self._blame(f"{self._exited(m, exit_status(status))} during warm-up")
            thread.join(POLL_SECONDS)
        if outcome and outcome[0] is not None:
            return f"graph servers failed the warm-up request: {outcome[0]}", 1
        log.info("graph servers ready")
        return None

    def _start_trainers(self) -> None:
        for t in self.spec.trainers:
            env = {**trainer_env(self.spec, t), ENV_RESTART_COUNT: str(self.trainer_restarts), ENV_LIFECYCLE: "1"}
            if self.server_watch.server_restarts:  # the trainers' clients wait for a restarted server this long
                env[ENV_RETRY_TIMEOUT] = f"{self.server_timeout:g}"
            name = f"node{t.node_rank}"
            log_dir = self.backend.tmpdir_for(f"{self.launch_id}-{name}") + "/torchrun-logs"
            self._start("trainer", f"trainers on {t.host.tag} (torchrun node_rank {t.node_rank})",
                        f"[{t.host.tag}:torchrun:{t.node_rank}]", name, t,
                        trainer_argv(self.spec, t, log_dir), {**env, **plain_env(self.keys)},
                        keys_env(self.keys, t.host.ip))

    def _watch(self) -> tuple[str, int] | None:
        trainers = [m for m in self.members if m.role == "trainer"]
        for m in self.members:
            m.next_ping = m.last_answer = time.monotonic()
        while True:
            if self._signal is not None:
                return self._signal_failure()
            lost = self._lost_host()
            if lost:
                log.error("%s; stopping everything", lost)
                return lost, 1
            for m in list(self.members):  # a restart appends to the list
                if m.done:
                    continue
                status = m.launched.popen.poll()
                if status is None:
                    if m.role == "server":
                        failure = self.server_watch.check(m)
                        if failure:
                            return failure
                    continue
                status = exit_status(status)
                if m.role == "server":
                    why = self._exited(m, status)
                    over = getattr(self.backend, "allocation_over", None)
                    if over is not None and over():  # scancel, time limit: no restart
                        log.error("%s; stopping everything", why)
                        return why, 1
                    failure = self.server_watch.died(m, why)
                    if failure:
                        return failure
                    continue
                if status != 0:
                    if self.trainer_restarts < self.max_restarts:
                        trainers = self._restart_trainers(m, status)
                        break  # the member list changed: scan it again
                    log.error("%s failed; stopping everything", m.what)
                    return self._blame(self._exited(m, status))
                m.done = True
            if all(m.done for m in trainers):
                log.info("all trainers exited 0")
                return None
            time.sleep(POLL_SECONDS)

    def _restart_trainers(self, failed: Member, status: int) -> list[Member]:
        """Stop every host's trainers and start them all again (one more restart counted); the
        graph servers keep running.  Returns the new trainer members."""
        self.timeline.failure()
        self.trainer_restarts += 1
        log.warning("%s; restarting the trainers (%d of %d restarts)", self._exited(failed, status),
                    self.trainer_restarts, self.max_restarts)
        for m in self.members:
            if m.role == "trainer" and not m.done:
                if m.launched.popen.poll() is None:
                    self._stop_member(m)
                m.done = True
        self._start_trainers()
        now = time.monotonic()
        fresh = [m for m in self.members if m.role == "trainer" and not m.done]
        for m in fresh:
            m.next_ping = m.last_answer = now
        return fresh

    def lifecycle(self) -> Lifecycle | None:
        """Where the wall time went so far (:mod:`bgl.launch.ett`); None before any trainer started."""
        return self.timeline.summary() if any(m.role == "trainer" for m in self.members) else None

    def _ping(self, address: str, timeout: float) -> bool:
        """True if the server at ``address`` answers PING (with the launcher's keys) within ``timeout`` s."""
        return sampler_client.ping(address, timeout=timeout, curve=self.client_keys)

    def _stop_member(self, m: Member) -> None:
        """Stop one process (polite, then SIGKILL after the grace period) and reap it."""
        self.backend.stop(m.launched)
        deadline = time.monotonic() + self.grace + 3.0
        while time.monotonic() < deadline and m.launched.popen.poll() is None:
            time.sleep(POLL_SECONDS)
        if m.launched.popen.poll() is None:
            self.backend.kill(m.launched)
            m.launched.popen.wait(timeout=10)

    def _exited(self, m: Member, status: int) -> str:
        """``host H: WHAT exited with STATUS[; why]`` -- the host comes first, so a lost host is named."""
        text = f"{m.launched.host.label}: {m.what} exited with {describe_status(status)}"
        explain = getattr(self.backend, "explain_exit", None)
        hint = explain(m.launched, status) if explain else None
        return f"{text} ({hint})" if hint else text

    def _lost_host(self) -> str | None:
        """A backend that watches its machines (Slurm) names one that is gone; others never do."""
        probe = getattr(self.backend, "lost_host", None)
        return probe() if probe is not None else None

    def _blame(self, failure: str) -> tuple[str, int]:
        """``failure`` as the launch's failure, led by a machine the backend finds gone right now:
        when a node vanishes its peers fail first (their connections to it break), but the node
        is the cause."""
        probe = getattr(self.backend, "lost_host_now", None)
        lost = probe() if probe is not None else None
        return (f"{lost}; then {failure}" if lost else failure), 1

    def _signal_failure(self) -> tuple[str, int]:
        name = signal.Signals(self._signal).name
        return f"launcher received {name}", 128 + self._signal

    # ------------------------------------------------------------------ shutdown
    def _shutdown_servers(self) -> None:
        servers = [m for m in self.members if m.role == "server" and not m.done]
        for m in servers:
            try:
                sampler_client.shutdown(m.placement.address, self.token, timeout=2.0, curve=self.client_keys)
            except Exception as e:  # a dead server is fine now; teardown covers it
                log.warning("SHUTDOWN to %s failed: %s", m.placement.address, e)
        deadline = time.monotonic() + self.grace
        while time.monotonic() < deadline and any(m.launched.popen.poll() is None for m in servers):
            time.sleep(POLL_SECONDS)
        for m in servers:
            if m.launched.popen.poll() is None:
                log.warning("%s still runs %.0f s after SHUTDOWN; stopping it", m.what, self.grace)

    def _teardown(self) -> None:
        """Stop every live process: polite stop, agent's own TERM->KILL, then kill from here."""
        live = [m for m in self.members if m.launched.popen.poll() is None]
        for m in live:
            self.backend.stop(m.launched)
        # Agents need `grace` to escalate to SIGKILL themselves; allow a little more.
        deadline = time.monotonic() + self.grace + 3.0
        while time.monotonic() < deadline and any(m.launched.popen.poll() is None for m in live):
            time.sleep(POLL_SECONDS)
        for m in live:
            if m.launched.popen.poll() is None:
                log.warning("%s did not stop within %.0f s; killing it", m.what, self.grace + 3)
                self.backend.kill(m.launched)
        for m in self.members:
            try:
                m.launched.popen.wait(timeout=10)
            except Exception:
                log.error("%s (pid %d) is still running after SIGKILL", m.what, m.launched.popen.pid)
            if m.reader is not None:
                m.reader.join(timeout=5)
            if m.launched.popen.stdin and not m.launched.popen.stdin.closed:
                try:
                    m.launched.popen.stdin.close()
                except OSError:
                    pass
            forget = getattr(self.backend, "forget", None)  # local: remove a killed agent's private dir
            if forget is not None:
                forget(m.launched)

    # ------------------------------------------------------------------ signals
    def _install_signal_handlers(self) -> Callable[[], None]:
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        # SIGHUP: a lost terminal, or salloc giving up its allocation (scancel)
        previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}

        def on_signal(signum, _frame):
            if self._signal is None:
                self._signal = signum
            else:  # a second Ctrl-C: skip the grace period
                self.grace = 0.0

        for sig in previous:
            signal.signal(sig, on_signal)

        def restore() -> None:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

        return restore
