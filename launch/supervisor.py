"""Start a cluster, stream its output, and stop all of it on the first failure.

Sequence (:meth:`Supervisor.run`):

1. backend preflight (hosts reachable, ports free) -- nothing starts
   if this fails;
2. one graph server per part, each given the per-launch SHUTDOWN token
   and CURVE keys through the agent's stdin (never argv);
3. wait until every server answers ``PING`` (deadline ``server_timeout``);
4. ``torch.distributed.run`` on every host with ``BGL_SERVERS`` /
   ``BGL_PARTITION`` set;
5. watch: a trainer exiting non-zero or a SIGINT/SIGTERM to the launcher
   stops everything everywhere and raises :class:`LaunchAborted` naming
   who failed first; all trainers exiting 0 shuts the servers down with
   the token and returns 0.
6. graph servers are supervised apart from trainers: a server that exits
   (or answers no health PING for ``hang_timeout`` s, then is stopped) is
   restarted on its host at the same address with the same CURVE keys and
   token, and the launcher logs how long restart-to-serving (answering
   PING) took.  A server holds no state beyond its partition files, and
   trainers' clients re-send what the dead one never answered (their retry
   window, ``$BGL_SERVER_RETRY_TIMEOUT``, is ``server_timeout``), so the run
   carries on with the same batches.  A server that dies more than
   ``server_restarts`` times within ``restart_window`` seconds stops the
   launch as in step 5, the message naming it and how often it died.

Every line any process prints is re-printed as ``[host:role:rank] line``.

Security: every launch makes fresh CURVE key pairs (:class:`RunKeys`): one
for the graph servers, one for each trainer host and one for the launcher
itself.  Each process receives only what it needs over its agent's stdin
(the ssh channel for remote hosts), and its agent writes them, mode 0600,
into the process's private run directory as ``$BGL_CURVE_DIR``: servers get
their pair and the allow-list of the run's client public keys; trainers get
the servers' public key and their host's pair.  Nobody outside the run can
read from or talk to its servers, and the keys vanish with the run.
"""
from __future__ import annotations

import logging
import re
import secrets
import signal
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Callable, TextIO

from bgl.errors import LaunchError
from bgl.sampler import client as sampler_client
from bgl.sampler import curve_keys

from .agent import exit_status
from .backends import Launched, LocalBackend, SshBackend  # noqa: F401 (types)
from .spec import (ENV_LAUNCH_ID, ENV_SERVER_TOKEN, ClusterSpec, ServerPlacement,
                   TrainerPlacement, check_plaintext_allowed, describe, server_argv, trainer_argv,
                   trainer_env)

log = logging.getLogger(__name__)

_RANK_LINE = re.compile(rb"^\[bgl-rank (\d+)\]:")
POLL_SECONDS = 0.1
# Health check of running servers: a PING (waiting PING_TIMEOUT s) every ``health_interval`` s
# (default HEALTH_INTERVAL); none answered for ``hang_timeout`` s (default HANG_TIMEOUT) and the
# server counts as hung.  PINGs queue behind the server's sampling requests, so a busy server
# may miss a few; the hang timeout is long enough that only a stuck one is replaced.
HEALTH_INTERVAL = 5.0
PING_TIMEOUT = 2.0
HANG_TIMEOUT = 30.0


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


@dataclass
class Member:
    """One supervised process and what it is, for messages."""

    role: str  # "server" | "trainer"
    what: str  # human description used in failure messages
    prefix: str  # "[host:role:rank]"
    launched: Launched
    placement: ServerPlacement | TrainerPlacement
    reader: threading.Thread | None = None
    ready: bool = False
    done: bool = False
    restart: int = 0  # 0 = first start; n = n-th restart of this server
    restarted_at: float | None = None  # monotonic time its predecessor was found dead
    next_ping: float = 0.0
    last_answer: float = 0.0  # monotonic time of its last answered PING


class OutputPump:
    """Copies each process's merged stdout/stderr to ``sink`` line by line, prefixed."""

    def __init__(self, sink: TextIO):
        self.sink = sink
        self.lock = threading.Lock()
        self.broken = False

    def emit(self, prefix: str, text: str) -> None:
        """Write ``prefix text`` as one line to the sink; stops writing (but never raises) once the
        sink is broken.
        """
        with self.lock:
            if self.broken:
                return
            try:
                self.sink.write(f"{prefix} {text}\n")
                self.sink.flush()
            except (OSError, ValueError):
                # Our stdout went away (`bgl launch | head`): keep draining the pipes so no
                # process blocks on a full pipe, but stop writing.
                self.broken = True

    def start(self, member: Member) -> threading.Thread:
        """Start a daemon thread that copies ``member``'s output to the sink with its prefix; returns
        the thread.
        """
        host = member.launched.host.ip

        def pump() -> None:
            stream = member.launched.popen.stdout
            for raw in iter(stream.readline, b""):
                line = raw.rstrip(b"\r\n")
                prefix = member.prefix
                if member.role == "trainer":
                    m = _RANK_LINE.match(line)
                    if m:  # a worker line tee'd by torchrun: name the global rank
                        prefix = f"[{host}:trainer:{int(m.group(1))}]"
                        line = line[m.end():]
                self.emit(prefix, line.decode("utf-8", errors="replace"))
            stream.close()

        thread = threading.Thread(target=pump, name=f"pump {member.prefix}", daemon=True)
        thread.start()
        return thread


@dataclass(frozen=True)
class RunKeys:
    """The CURVE key pairs of one launch (fresh for every run, held only in memory here)."""

    server: curve_keys.KeyPair
    launcher: curve_keys.KeyPair
    hosts: dict  # host ip -> KeyPair of the trainers on that host

    @classmethod
    def generate(cls, spec: ClusterSpec) -> "RunKeys":
        """A server pair, a launcher pair and one pair per distinct trainer host."""
        hosts = {t.host.ip: curve_keys.new_keypair() for t in spec.trainers}
        return cls(curve_keys.new_keypair(), curve_keys.new_keypair(), hosts)

    @property
    def allowed(self) -> list[bytes]:
        """Client public keys the servers admit: the launcher's and every trainer host's."""
        return [self.launcher.public, *(p.public for p in self.hosts.values())]

    def launcher_client(self) -> curve_keys.ClientKeys:
        """Keys the launcher's own PING/warm-up/SHUTDOWN requests use."""
        return curve_keys.ClientKeys(self.server.public, self.launcher)

    def server_bundle(self) -> str:
        """``BGL_CURVE_KEYS`` for a graph server: its pair and the allow-list."""
        return curve_keys.encode_bundle(server=self.server, allowed=self.allowed)

    def trainer_bundle(self, host_ip: str) -> str:
        """``BGL_CURVE_KEYS`` for the trainers on ``host_ip``: server public key and the host's pair."""
        return curve_keys.encode_bundle(server_public=self.server.public, client=self.hosts[host_ip])


def warm_up_servers(addresses: list[str], timeout: float, curve=None) -> None:
    """Sample 2 hops from a few seeds spread over all servers and read their features/labels.

    Raises whatever the client raises (``ServerUnavailable``, ``ServerError``).
    """
    import torch

    from bgl.sampler import SamplingClient

    with SamplingClient(addresses, timeout=timeout, curve=curve) as client:
        n = client.num_nodes
        seeds = torch.linspace(0, n - 1, steps=min(n, 8 * len(addresses))).long().unique()
        blocks = client.sample_blocks(seeds, [2, 2], seed=0)
        if client.feat_dim:
            client.fetch_features(blocks[0].src_ids)
        if client.num_classes:
            client.fetch_labels(seeds)


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
    """

    def __init__(self, spec: ClusterSpec, backend: LocalBackend | SshBackend, *,
                 server_timeout: float = 180.0, grace: float = 5.0, sink: TextIO | None = None,
                 curve: bool = True, server_restarts: int = 3, restart_window: float = 600.0,
                 health_interval: float = HEALTH_INTERVAL, hang_timeout: float = HANG_TIMEOUT):
        if server_restarts < 0:
            raise LaunchError(f"--server-restarts must be >= 0, got {server_restarts}")
        if restart_window <= 0:
            raise LaunchError(f"--server-restart-window must be > 0, got {restart_window:g}")
        if health_interval <= 0:
            raise LaunchError(f"--server-ping-interval must be > 0, got {health_interval:g}")
        if hang_timeout <= 0:
            raise LaunchError(f"--server-hang-timeout must be > 0, got {hang_timeout:g}")
        self.health_interval = health_interval
        self.hang_timeout = hang_timeout
        self.spec = spec
        self.server_restarts = server_restarts
        self.restart_window = restart_window
        self.deaths: dict[int, list[float]] = {}  # part -> monotonic times its server died
        self.backend = backend
        self.server_timeout = server_timeout
        self.grace = grace
        self.pump = OutputPump(sink or sys.stdout)
        self.launch_id = uuid.uuid4().hex[:12]
        # Lives only in this process and the servers' environments.
        self.token = secrets.token_hex(16)
        if not curve:
            check_plaintext_allowed(spec.hosts)
        self.keys = RunKeys.generate(spec) if curve else None
        self.client_keys = self.keys.launcher_client() if curve else None
        self.members: list[Member] = []
        self._signal: int | None = None

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
                if failure is None:
                    self._shutdown_servers()
                    return 0
            finally:
                self._teardown()  # whatever happened (even an exception here), nothing outlives us
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
                             f"[{s.host.ip}:server:{s.part}]", name, s, server_argv(self.spec, s),
                             self._plain_env(), {ENV_SERVER_TOKEN: self.token, **self._keys_env(None)})
        member.restart = restart
        return member

    def _wait_servers_ready(self) -> tuple[str, int] | None:
        deadline = time.monotonic() + self.server_timeout
        pending = [m for m in self.members if m.role == "server"]
        while pending:
            if self._signal is not None:
                return self._signal_failure()
            for m in list(pending):
                status = m.launched.popen.poll()
                if status is not None:
                    return (f"{self._exited(m, exit_status(status))} before answering PING", 1)
                if sampler_client.ping(m.placement.address, timeout=0.5, curve=self.client_keys):
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
            for m in self.members:
                status = m.launched.popen.poll()
                if status is not None:
                    return f"{self._exited(m, exit_status(status))} during warm-up", 1
            thread.join(POLL_SECONDS)
        if outcome and outcome[0] is not None:
            return f"graph servers failed the warm-up request: {outcome[0]}", 1
        log.info("graph servers ready")
        return None

    def _start_trainers(self) -> None:
        env = trainer_env(self.spec)
        if self.server_restarts:  # the trainers' clients wait for a restarted server this long
            env[sampler_client.ENV_RETRY_TIMEOUT] = f"{self.server_timeout:g}"
        for t in self.spec.trainers:
            name = f"node{t.node_rank}"
            log_dir = self.backend.tmpdir_for(f"{self.launch_id}-{name}") + "/torchrun-logs"
            self._start("trainer", f"trainers on {t.host.ip} (torchrun node_rank {t.node_rank})",
                        f"[{t.host.ip}:torchrun:{t.node_rank}]", name, t,
                        trainer_argv(self.spec, t, log_dir), {**env, **self._plain_env()},
                        self._keys_env(t.host.ip))

    def _keys_env(self, trainer_host: str | None) -> dict[str, str]:
        """Secret variables carrying a server's (``trainer_host`` None) or a trainer host's keys."""
        if self.keys is None:
            return {}
        bundle = self.keys.server_bundle() if trainer_host is None else self.keys.trainer_bundle(trainer_host)
        return {curve_keys.ENV_CURVE_KEYS: bundle}

    def _plain_env(self) -> dict[str, str]:
        """Without CURVE, blank ``BGL_CURVE_DIR`` so a value in the launcher's env is not inherited."""
        return {} if self.keys is not None else {curve_keys.ENV_CURVE_DIR: ""}

    def _watch(self) -> tuple[str, int] | None:
        trainers = [m for m in self.members if m.role == "trainer"]
        for m in self.members:
            m.next_ping = m.last_answer = time.monotonic()
        while True:
            if self._signal is not None:
                return self._signal_failure()
            for m in list(self.members):  # a restart appends to the list
                if m.done:
                    continue
                status = m.launched.popen.poll()
                if status is None:
                    if m.role == "server":
                        failure = self._check_server(m)
                        if failure:
                            return failure
                    continue
                status = exit_status(status)
                if m.role == "server":
                    failure = self._server_died(m, self._exited(m, status))
                    if failure:
                        return failure
                    continue
                if status != 0:
                    log.error("%s failed; stopping everything", m.what)
                    return self._exited(m, status), 1
                m.done = True
            if all(m.done for m in trainers):
                log.info("all trainers exited 0")
                return None
            time.sleep(POLL_SECONDS)

    def _check_server(self, m: Member) -> tuple[str, int] | None:
        """A live server: a restarted one is PINGed until it serves (logging how long that took);
        a serving one gets a health PING every ``health_interval`` s and is restarted after
        ``hang_timeout`` s without an answer."""
        now = time.monotonic()
        if not m.ready:  # restarted, not serving yet
            if sampler_client.ping(m.placement.address, timeout=0.5, curve=self.client_keys):
                m.ready = True
                m.next_ping = m.last_answer = time.monotonic()
                log.warning("%s restarted (restart %d): serving again %.2f s after it was found dead",
                            m.what, m.restart, time.monotonic() - m.restarted_at)
            elif now - m.restarted_at > self.server_timeout:
                log.error("%s restarted but did not answer PING within %g s", m.what, self.server_timeout)
                return (f"host {m.launched.host.ip}: {m.what} was restarted but did not answer PING "
                        f"within {self.server_timeout:g} s", 1)
            return None
        if now < m.next_ping:
            return None
        if sampler_client.ping(m.placement.address, timeout=PING_TIMEOUT, curve=self.client_keys):
            m.last_answer = time.monotonic()
        else:
            log.warning("%s missed a health PING (none answered for %.1f s)", m.what,
                        time.monotonic() - m.last_answer)
        m.next_ping = time.monotonic() + self.health_interval
        silent = time.monotonic() - m.last_answer
        if silent < self.hang_timeout or m.launched.popen.poll() is not None:
            return None  # (one that exited meanwhile is handled as an exit on the next pass)
        self._stop_member(m)
        return self._server_died(m, f"host {m.launched.host.ip}: {m.what} stopped answering PING "
                                    f"(none answered for {silent:.0f} s)")

    def _stop_member(self, m: Member) -> None:
        """Stop one process (polite, then SIGKILL after the grace period) and reap it."""
        self.backend.stop(m.launched)
        deadline = time.monotonic() + self.grace + 3.0
        while time.monotonic() < deadline and m.launched.popen.poll() is None:
            time.sleep(POLL_SECONDS)
        if m.launched.popen.poll() is None:
            self.backend.kill(m.launched)
            m.launched.popen.wait(timeout=10)

    def _server_died(self, m: Member, why: str) -> tuple[str, int] | None:
        """Restart the dead server ``m`` unless it died too often; else the failure to stop with."""
        m.done = True
        now = time.monotonic()
        part = m.placement.part
        deaths = [t for t in self.deaths.get(part, []) if now - t <= self.restart_window] + [now]
        self.deaths[part] = deaths
        if len(deaths) > self.server_restarts:
            log.error("%s; it died %d time(s) in %g s, past --server-restarts %d; stopping everything",
                      why, len(deaths), self.restart_window, self.server_restarts)
            return (f"{why} while trainers ran; it died {len(deaths)} time(s) within "
                    f"{self.restart_window:g} s, more than --server-restarts {self.server_restarts} allows", 1)
        restart = m.restart + 1
        log.warning("%s; restarting it on %s at the same address (restart %d, %d of %d allowed per %g s)",
                    why, m.launched.host.ip, restart, len(deaths), self.server_restarts, self.restart_window)
        new = self._start_server(m.placement, restart)
        new.restarted_at = now
        return None

    def _exited(self, m: Member, status: int) -> str:
        """``host H: WHAT exited with STATUS[; why]`` -- the host comes first, so a lost host is named."""
        text = f"host {m.launched.host.ip}: {m.what} exited with {describe_status(status)}"
        explain = getattr(self.backend, "explain_exit", None)
        hint = explain(m.launched, status) if explain else None
        return f"{text} ({hint})" if hint else text

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

    # ------------------------------------------------------------------ signals
    def _install_signal_handlers(self) -> Callable[[], None]:
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

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
