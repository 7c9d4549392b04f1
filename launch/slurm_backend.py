"""``bgl launch --backend slurm``: every process is one ``srun`` job step inside the allocation.

Inside ``salloc`` or an ``sbatch`` script the launcher runs where the
allocation put it (the login node or the batch node) and starts each graph
server and each node's ``torch.distributed.run`` as its own step::

    srun --jobid=J --nodes=1 --ntasks=1 --nodelist=NODE --overlap --kill-on-bad-exit=1 \\
         --job-name=bgl-<launch id>-<role> python -m bgl.launch.agent ... -- CMD

``--overlap`` lets a node's server and trainer steps share its CPUs (Slurm
would otherwise hold the trainers back until the server step ends).  srun
forwards its stdin to the task, so the agent gets its secrets (SHUTDOWN
token, CURVE keys) and its end-of-file exactly as over ssh, and srun's own
end (killed, or its connection lost) closes the task's stdin too: the agent
tears its command down.  On the far side Slurm's step daemon adds its own
guarantee: when the step is cancelled (``scancel``, time limit, a failed
node) it signals every process of the step.

Lost nodes: Slurm itself notices a dead node only after ``SlurmdTimeout``
(minutes by default), and a step on a node that vanished leaves srun waiting.
So the backend watches every node's slurmd port from the launcher (a TCP
connect per node per second, in a thread): a node whose slurmd has not
answered for ``node_timeout`` seconds is lost, and the supervisor stops the
launch naming it (:meth:`SlurmBackend.lost_host`).  Steps on a lost node get
the end-of-file on their stdin only (srun hands it to the step daemon
directly; signals would go through the dead slurmd), and their srun is killed
if the step has not ended 2 s later: then the node itself is gone.  Killing
srun never stops a step on a node whose step daemon still runs (the step
daemon does not close the task's stdin when srun goes), so the EOF comes
first.
"""
from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from bgl.errors import LaunchError

from .backends import Launched, agent_argv, close_stdin, spawn_agent
from .hosts import Host
from .spec import ClusterSpec

log = logging.getLogger(__name__)

DEFAULT_SLURMD_PORT = 6818
# Seconds a step on a lost node gets to end after the EOF before its srun is killed.
LOST_NODE_WAIT = 2.0
# Variables of the allocation that would override our one-task-per-step request in srun.
_STEP_SHAPE_ENV = ("SLURM_NTASKS", "SLURM_NPROCS", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE",
                   "SLURM_NNODES", "SLURM_NODELIST", "SLURM_DISTRIBUTION", "SLURM_CPU_BIND",
                   "SLURM_MEM_PER_CPU", "SLURM_MEM_PER_NODE", "SLURM_CPUS_PER_TASK")


def slurmd_port(env: Mapping[str, str] | None = None, timeout: float = 15.0) -> int:
    """The cluster's ``SlurmdPort`` (``scontrol show config``), 6818 if it cannot be read."""
    try:
        done = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True,
                              timeout=timeout, env=dict(env) if env is not None else None)
    except (OSError, subprocess.TimeoutExpired):
        return DEFAULT_SLURMD_PORT
    for line in done.stdout.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "SlurmdPort":
            try:
                return int(value.strip())
            except ValueError:
                break
    return DEFAULT_SLURMD_PORT


def answers(ip: str, port: int, timeout: float) -> bool:
    """Does something accept TCP connections at ``ip:port`` within ``timeout`` s?"""
    try:
        socket.create_connection((ip, port), timeout=timeout).close()
        return True
    except OSError:
        return False


class NodeWatch:
    """Background TCP probes of every node's slurmd; :meth:`lost` names a node silent too long."""

    def __init__(self, hosts: Sequence[Host], port: int, timeout: float, interval: float = 1.0):
        self.hosts = list(dict.fromkeys(hosts))
        self.port = port
        self.timeout = timeout
        self.interval = interval
        now = time.monotonic()
        self.last_answer = {h.ip: now for h in self.hosts}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="slurm node watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            for h in self.hosts:
                if answers(h.ip, self.port, min(1.0, self.interval)):
                    self.last_answer[h.ip] = time.monotonic()
            self._stop.wait(self.interval)

    def silent_for(self, host: Host) -> float:
        return time.monotonic() - self.last_answer.get(host.ip, time.monotonic())

    def lost(self) -> Host | None:
        """The first node (allocation order) silent for ``timeout`` s or more, else None."""
        for h in self.hosts:
            if self.silent_for(h) >= self.timeout:
                return h
        return None

    def unreachable_now(self) -> Host | None:
        """A node whose slurmd does not answer a connect right now (checked on the spot)."""
        for h in self.hosts:
            if not answers(h.ip, self.port, 1.0):
                return h
        return None


@dataclass
class SlurmBackend:
    """Runs every process as one ``srun`` step on its node (see the module docstring).

    Parameters
    ----------
    job_id : the allocation (``SLURM_JOB_ID``).
    grace : seconds between SIGTERM and SIGKILL in each agent.
    node_timeout : seconds a node's slurmd may leave connects unanswered before the node is lost.
    srun, scancel : the commands (found on PATH).
    """

    job_id: str
    grace: float = 5.0
    node_timeout: float = 3.0
    slurmd_port: int | None = None
    srun: str = "srun"
    scancel: str = "scancel"
    name: str = "slurm"
    _watch: NodeWatch | None = field(default=None, repr=False)
    _lost: set = field(default_factory=set, repr=False)
    _helpers: list = field(default_factory=list, repr=False)  # threads stopping/cancelling steps
    _job_over: bool = field(default=False, repr=False)

    def preflight(self, spec: ClusterSpec) -> None:
        """srun is here, and every node of the allocation can run our python and import bgl
        (one step over all nodes).  Starts the node watch."""
        for tool in (self.srun, self.scancel):
            if shutil.which(tool) is None:
                raise LaunchError(f"--backend slurm needs {tool!r} on PATH (Slurm's client commands)")
        nodes = [h.name for h in dict.fromkeys(spec.hosts)]
        probe = [self.srun, f"--jobid={self.job_id}", f"--nodes={len(nodes)}",
                 f"--ntasks={len(nodes)}", "--ntasks-per-node=1", f"--nodelist={','.join(nodes)}",
                 "--overlap", "--job-name=bgl-preflight", f"--chdir={spec.workdir}",
                 spec.python, "-c", "import bgl.launch.agent"]
        try:
            done = subprocess.run(probe, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  timeout=120, env=self._step_env({}))
        except subprocess.TimeoutExpired:
            raise LaunchError(f"srun probe on {','.join(nodes)} did not finish within 120 s "
                              f"(is job {self.job_id} running?)") from None
        if done.returncode != 0:
            detail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
            raise LaunchError(f"srun on nodes {','.join(nodes)} of job {self.job_id} failed "
                              f"(exit {done.returncode}) while checking that {spec.python} can import "
                              f"bgl in {spec.workdir}: {detail or 'no output'}")
        port = self.slurmd_port or slurmd_port()
        self._watch = NodeWatch(spec.hosts, port, self.node_timeout)
        self._watch.start()

    def close(self) -> None:
        """Stop the node watch and let step cancels still in flight finish (at most ~10 s; the
        supervisor calls this once the launch is over)."""
        if self._watch is not None:
            self._watch.stop()
        deadline = time.monotonic() + 10.0
        for thread in self._helpers:
            thread.join(max(0.0, deadline - time.monotonic()))

    def _in_background(self, target, *args) -> None:
        thread = threading.Thread(target=target, args=args, name=f"slurm {target.__name__}", daemon=True)
        self._helpers.append(thread)
        thread.start()

    def _step_env(self, env: Mapping[str, str]) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if k not in _STEP_SHAPE_ENV}
        return {**base, **env}

    def tmpdir_for(self, name: str) -> str:
        """The agent's private directory for process ``name`` on its node (removed when it exits)."""
        return os.path.join(tempfile.gettempdir(), f"bgl-{name}")

    def step_argv(self, name: str, host: Host, argv: Sequence[str], spec: ClusterSpec) -> list[str]:
        """The ``srun`` command line of one step running ``argv`` under the agent on ``host``."""
        return [self.srun, f"--jobid={self.job_id}", "--nodes=1", "--ntasks=1",
                f"--nodelist={host.name}", "--overlap", "--kill-on-bad-exit=1",
                f"--job-name=bgl-{name}", f"--chdir={spec.workdir}", "--quiet",
                *agent_argv(spec.python, self.tmpdir_for(name), self.grace, argv)]

    def start(self, name: str, host: Host, argv: Sequence[str], env: Mapping[str, str],
              secret_env: Mapping[str, str], spec: ClusterSpec) -> Launched:
        """Start ``argv`` on ``host``'s node as a step; ``env`` travels with srun's environment,
        secrets through its stdin."""
        popen = spawn_agent(self.step_argv(name, host, argv, spec), self._step_env(env), spec.workdir,
                       secret_env)
        return Launched(name=name, host=host, popen=popen, tmpdir=self.tmpdir_for(name))

    def lost_host(self) -> str | None:
        """A message naming a node whose slurmd has been silent for ``node_timeout`` s, else None."""
        host = self._watch.lost() if self._watch is not None else None
        return self._mark_lost(host, f"stopped answering on port {{port}} "
                                     f"{self._watch.silent_for(host) if host else 0:.1f} s ago; "
                                     "the node is lost (or its slurmd died)")

    def lost_host_now(self) -> str | None:
        """Like :meth:`lost_host`, but probes every node now (used when a process fails, to blame
        a node that just vanished rather than the peers that failed because of it)."""
        host = self._watch.unreachable_now() if self._watch is not None else None
        return self._mark_lost(host, "does not answer on port {port}; the node is lost")

    def _mark_lost(self, host: Host | None, what: str) -> str | None:
        if host is None:
            return None
        self._lost.add(host.ip)
        return f"{host.label}: slurmd " + what.format(port=self._watch.port)

    def explain_exit(self, proc: Launched, status: int) -> str | None:
        """Say what Slurm did to the job when a step ends: cancelled, timed out, node failure.

        Asked for every server step that ends, exit status 0 included: a graph server stopped by
        scancel's SIGTERM exits 0, and must not be restarted while Slurm takes the job down.
        """
        try:
            done = subprocess.run(["squeue", "-h", "-j", self.job_id, "-o", "%T %r"],
                                  capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        state = done.stdout.strip()
        if done.returncode != 0 or not state:
            self._job_over = True
            return f"job {self.job_id} is no longer running (cancelled or finished)"
        job_state, _, reason = state.partition(" ")
        if job_state != "RUNNING":
            self._job_over = True
            why = f", reason {reason}" if reason and reason != "None" else ""
            return (f"job {self.job_id} is {job_state}{why}: Slurm is ending it "
                    "(scancel, time limit or a failed node)")
        return None

    def allocation_over(self) -> bool:
        """Did :meth:`explain_exit` find the job cancelled, timed out or ended?  Then a step that
        died is not restarted: Slurm is taking the whole job down."""
        return self._job_over

    def stop(self, proc: Launched) -> None:
        """Polite stop: EOF on srun's stdin reaches the agent, SIGTERM to srun is forwarded to it.

        On a lost node only the EOF: srun hands it straight to the step daemon (not through
        slurmd, which may be the part that died), while a forwarded signal needs slurmd.  If
        srun is still there ``LOST_NODE_WAIT`` s later the node is really gone: kill srun.
        """
        close_stdin(proc.popen)
        if proc.host.ip in self._lost:
            self._in_background(self._kill_unless_gone, proc)
            return
        try:
            proc.popen.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass

    def _kill_unless_gone(self, proc: Launched) -> None:
        try:
            proc.popen.wait(timeout=LOST_NODE_WAIT)
        except subprocess.TimeoutExpired:
            self.kill(proc)

    def kill(self, proc: Launched) -> None:
        """Last resort: SIGKILL srun, and on a node that is not lost cancel its step with SIGKILL
        through slurmctld too: only that reaches the step's processes (the step daemon keeps
        them running when srun dies).  In the background, so the other steps need not wait;
        never for a lost node, whose step only its own (dead) slurmd could reach."""
        close_stdin(proc.popen)
        try:
            os.killpg(proc.popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if proc.host.ip not in self._lost:
            self._in_background(self._cancel_step, f"bgl-{proc.name}")

    def _cancel_step(self, step_name: str) -> None:
        try:
            done = subprocess.run(["squeue", "-h", "-s", "-j", self.job_id, "-o", "%i %j"],
                                  capture_output=True, text=True, timeout=10)
            steps = [line.split()[0] for line in done.stdout.splitlines()
                     if line.split()[1:] == [step_name]]
            if steps:
                subprocess.run([self.scancel, "--signal=KILL", *steps], capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired, IndexError) as e:
            log.warning("cancelling step %s failed: %s", step_name, e)
