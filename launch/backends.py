"""How a launch starts processes: on this machine, or on other machines over ssh.

Both backends run every command under :mod:`bgl.launch.agent`, which owns
teardown on the far side: closing the agent's stdin (or SIGTERM to the
agent) stops the command's whole process tree, and so does the launcher
dying, because its end of the pipe closes with it.  Backends therefore only
need three verbs: ``start``, ``stop`` (polite: close stdin, signal the
agent) and ``kill`` (last resort once the grace period is over).

Every process's stdout and stderr come back merged on ``Popen.stdout`` for
the supervisor to prefix and print.
"""
from __future__ import annotations

import errno
import logging
import os
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Mapping, Sequence

import psutil

from bgl.errors import LaunchError

from .hosts import Host
from .spec import ClusterSpec

log = logging.getLogger(__name__)

# Variables of the launcher's environment that remote commands also need.
FORWARD_ENV = ("DGLBACKEND", "OMP_NUM_THREADS", "PYTHONPATH", "PYTHONHASHSEED",
               # which interface torch.distributed's transports use on a multi-homed host
               "GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "TP_SOCKET_IFNAME")
# ssh's own exit status when the connection fails or drops (the remote command never exits 255 here:
# the agent reports a command's 255 as is, but a lost host is far more likely).
SSH_CONNECTION_LOST = 255


@dataclass
class Launched:
    """A started process: ``popen`` is the local end (the agent, or the ssh client)."""

    name: str
    host: Host
    popen: subprocess.Popen
    tmpdir: str


def agent_argv(python: str, tmpdir: str, grace: float, argv: Sequence[str]) -> list[str]:
    """Command line that runs ``argv`` under :mod:`bgl.launch.agent` with private ``tmpdir`` and
    teardown ``grace`` seconds.
    """
    return [python, "-m", "bgl.launch.agent", "--tmpdir", tmpdir, "--grace", str(grace),
            "--", *argv]


def secret_block(secret_env: Mapping[str, str]) -> bytes:
    """The agent's stdin preamble: ``KEY=VALUE`` lines, then an empty line."""
    for key, value in secret_env.items():
        if "\n" in key or "\n" in value or "=" in key:
            raise LaunchError(f"secret variable {key!r} cannot be sent (newline or '=' in it)")
    return "".join(f"{k}={v}\n" for k, v in secret_env.items()).encode() + b"\n"


def port_is_free(ip: str, port: int) -> bool:
    """Can a server bind ``ip:port`` now?

    Uses SO_REUSEADDR like ZeroMQ's listening sockets do, so connections in
    TIME_WAIT left by a killed server do not count as "in use": only a live
    listener does.
    """
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((ip, port))
            return True
        except OSError:
            return False


def spawn_agent(argv: list[str], env: Mapping[str, str] | None, cwd: str | None,
                secret_env: Mapping[str, str]) -> subprocess.Popen:
    """Start ``argv`` (an agent command line, or ssh/srun around one) with stdin and merged
    stdout/stderr piped, in a session of its own, and write ``secret_env`` to its stdin."""
    popen = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        env=dict(env) if env is not None else None, cwd=cwd,
        start_new_session=True,  # our Ctrl-C must reach the launcher only; it tears down in order
    )
    try:
        popen.stdin.write(secret_block(secret_env))
        popen.stdin.flush()
    except BrokenPipeError:
        pass  # it died at once; the supervisor sees the exit status
    return popen


def close_stdin(popen: subprocess.Popen) -> None:
    """Close our end of ``popen``'s stdin: the agent at the far end reads EOF and stops."""
    try:
        if popen.stdin and not popen.stdin.closed:
            popen.stdin.close()
    except OSError:
        pass


@dataclass
class LocalBackend:
    """Runs every process on this machine; every host must be one of its addresses."""

    grace: float = 5.0
    name: str = "local"

    def preflight(self, spec: ClusterSpec) -> None:
        """Every host is an address of this machine and every port is free."""
        for host in spec.hosts:
            family = socket.AF_INET6 if ":" in host.ip else socket.AF_INET
            with socket.socket(family, socket.SOCK_STREAM) as s:
                try:
                    s.bind((host.ip, 0))
                except OSError as e:
                    if e.errno == errno.EADDRNOTAVAIL:
                        raise LaunchError(
                            f"host {host.ip} (hosts file line {host.line}) is not an address of "
                            "this machine; --backend local runs every process here "
                            "(use --backend ssh for other machines)") from None
                    raise LaunchError(f"cannot use host {host.ip}: {e}") from None
        wanted = [(s.host.ip, s.port, f"graph server for part {s.part}") for s in spec.servers]
        wanted.append((spec.master_addr, spec.master_port, "torch.distributed master"))
        for ip, port, what in wanted:
            if not port_is_free(ip, port):
                raise LaunchError(f"port {port} on {ip} ({what}) is already in use; "
                                  "choose another --port-base")

    def tmpdir_for(self, name: str) -> str:
        """The agent's private directory for process ``name`` (removed when it exits)."""
        return os.path.join(tempfile.gettempdir(), f"bgl-{name}")

    def start(self, name: str, host: Host, argv: Sequence[str], env: Mapping[str, str],
              secret_env: Mapping[str, str], spec: ClusterSpec) -> Launched:
        """Start ``argv`` here under the agent, ``env`` added to ours, secrets through its stdin."""
        tmpdir = self.tmpdir_for(name)
        full = agent_argv(spec.python, tmpdir, self.grace, argv)
        popen = spawn_agent(full, {**os.environ, **env}, spec.workdir, secret_env)
        return Launched(name=name, host=host, popen=popen, tmpdir=tmpdir)

    def forget(self, proc: Launched) -> None:
        """After ``proc``'s agent has exited: remove its private dir if the agent could not (killed
        by SIGKILL, say), so no CURVE secret key of a finished launch stays in ``/tmp``."""
        if proc.popen.poll() is not None:
            shutil.rmtree(proc.tmpdir, ignore_errors=True)

    def stop(self, proc: Launched) -> None:
        """Polite stop: close the agent's stdin and SIGTERM it."""
        close_stdin(proc.popen)
        try:
            proc.popen.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass

    def kill(self, proc: Launched) -> None:
        """Last resort: SIGKILL the agent's whole process tree."""
        # The agent did not finish its own teardown in time: kill its whole tree from here.
        try:
            victims = psutil.Process(proc.popen.pid).children(recursive=True)
        except psutil.Error:
            victims = []
        for p in victims:
            try:
                p.kill()
            except psutil.Error:
                pass
        try:
            os.killpg(proc.popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


@dataclass
class SshBackend:
    """Runs every process on its host through ``ssh`` (key-based, non-interactive).

    The remote command is ``cd WORKDIR && exec env K=V ... PYTHON -m
    bgl.launch.agent ...``: the agent replaces the login shell, so closing
    the ssh client's stdin (or killing the client, which drops the
    connection) reaches the agent as end-of-file and it tears the command's
    process group down.  :meth:`kill` additionally sends ``kill -TERM`` to
    the agent's pid (from its pid file) over a fresh ssh connection.
    """

    grace: float = 5.0
    ssh_port: int = 22
    ssh_key: str | None = None
    user: str | None = None
    strict_host_key_checking: str = "accept-new"
    connect_timeout: float = 5.0
    extra_options: tuple[str, ...] = ()
    remote_tmp: str = "/tmp"
    name: str = "ssh"
    _ssh: str = field(default="ssh", repr=False)

    def ssh_argv(self, host: Host, remote_command: str) -> list[str]:
        """The ``ssh`` command line (batch mode, our options) that runs ``remote_command`` on ``host``."""
        argv = [self._ssh, "-o", "BatchMode=yes",
                "-o", f"StrictHostKeyChecking={self.strict_host_key_checking}",
                "-o", f"ConnectTimeout={max(1, int(self.connect_timeout))}",
                "-o", "LogLevel=ERROR", "-p", str(self.ssh_port),
                # a host that vanishes without closing the connection (power loss, network cut)
                # still ends the ssh client, so the launcher notices within ~15 s
                "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"]
        if self.ssh_key:
            argv += ["-i", self.ssh_key, "-o", "IdentitiesOnly=yes"]
        for opt in self.extra_options:
            argv += ["-o", opt]
        target = f"{self.user}@{host.ip}" if self.user else host.ip
        return [*argv, target, remote_command]

    def preflight(self, spec: ClusterSpec) -> None:
        """Every host answers on its ssh port, accepts our key, and can import bgl."""
        probe = (f"cd {shlex.quote(spec.workdir)} && "
                 f"{shlex.quote(spec.python)} -c 'import bgl.launch.agent'")
        for host in dict.fromkeys(spec.hosts):  # once per distinct host, in file order
            where = f"host {host.ip} (hosts file line {host.line})"
            try:
                socket.create_connection((host.ip, self.ssh_port), timeout=self.connect_timeout).close()
            except OSError as e:
                reason = "timed out" if isinstance(e, TimeoutError) else (e.strerror or str(e))
                raise LaunchError(f"{where}: cannot reach ssh port {self.ssh_port}: {reason}") from None
            try:
                done = subprocess.run(self.ssh_argv(host, probe), stdin=subprocess.DEVNULL,
                                      capture_output=True, text=True,
                                      timeout=self.connect_timeout + 30)
            except subprocess.TimeoutExpired:
                raise LaunchError(f"{where}: ssh probe did not finish within "
                                  f"{self.connect_timeout + 30:.0f} s") from None
            if done.returncode != 0:
                detail = (done.stderr or done.stdout).strip().splitlines()[-3:]
                raise LaunchError(
                    f"{where}: ssh -p {self.ssh_port} failed (exit {done.returncode}) while "
                    f"checking that {spec.python} can import bgl in {spec.workdir}: "
                    + (" | ".join(detail) or "no output"))

    def tmpdir_for(self, name: str) -> str:
        """The remote agent's private directory for process ``name``."""
        return str(PurePosixPath(self.remote_tmp) / f"bgl-{name}")

    def start(self, name: str, host: Host, argv: Sequence[str], env: Mapping[str, str],
              secret_env: Mapping[str, str], spec: ClusterSpec) -> Launched:
        """Start ``argv`` on ``host`` over ssh under the agent; forwarded and given ``env`` set there,
        secrets through stdin.
        """
        tmpdir = self.tmpdir_for(name)
        remote_env = {k: os.environ[k] for k in FORWARD_ENV if k in os.environ}
        remote_env.update(env)
        assignments = " ".join(shlex.quote(f"{k}={v}") for k, v in remote_env.items())
        remote = (f"cd {shlex.quote(spec.workdir)} && exec env {assignments} "
                  + shlex.join(agent_argv(spec.python, tmpdir, self.grace, argv)))
        popen = spawn_agent(self.ssh_argv(host, remote), None, None, secret_env)
        return Launched(name=name, host=host, popen=popen, tmpdir=tmpdir)

    def explain_exit(self, proc: Launched, status: int) -> str | None:
        """A hint for an exit status only ssh gives: 255 = connection failed or lost."""
        if status == SSH_CONNECTION_LOST:
            return (f"ssh exit 255: the connection to {proc.host.ip} failed or was lost; "
                    "the host may be down or unreachable")
        return None

    def stop(self, proc: Launched) -> None:
        """Polite stop: close the ssh channel's stdin, so the remote agent tears down."""
        # EOF on the channel reaches the remote agent's stdin.
        close_stdin(proc.popen)

    def kill_remote(self, proc: Launched, sig: str = "TERM") -> None:
        """The "kill command": signal the remote agent (pid from its pid file) over a new
        connection; on SIGTERM the agent tears its command's process tree down."""
        pidfile = shlex.quote(str(PurePosixPath(proc.tmpdir) / "agent.pid"))
        command = f"test -f {pidfile} && kill -{sig} $(cat {pidfile}) 2>/dev/null; true"
        try:
            subprocess.run(self.ssh_argv(proc.host, command), stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=self.connect_timeout + 10)
        except (subprocess.TimeoutExpired, OSError) as e:
            log.warning("kill command to %s failed: %s", proc.host.ip, e)

    def kill(self, proc: Launched) -> None:
        """Last resort: signal the remote agent and kill the local ssh client's process group."""
        self.kill_remote(proc)
        # Dropping the connection is the second, independent path to the remote agent.
        try:
            os.killpg(proc.popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def make_backend(kind: str, **options) -> LocalBackend | SshBackend:
    """``"local"`` or ``"ssh"`` backend; ``options`` are the backend's fields."""
    if kind == "local":
        return LocalBackend(grace=options.get("grace", 5.0))
    if kind == "ssh":
        return SshBackend(**options)
    raise LaunchError(f"unknown backend {kind!r}; expected 'local' or 'ssh'")

