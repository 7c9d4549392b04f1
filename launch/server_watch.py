"""Graph servers are supervised apart from trainers: a dead or hung one is restarted in place.

While trainers run, the launcher checks every graph server each pass of its
watch loop (:meth:`~bgl.launch.supervisor.Supervisor.run`, step 6).  A server
that exits (or answers no health PING for ``hang_timeout`` s, then is
stopped) is restarted on its host at the same address with the same CURVE
keys and token, and the launcher logs how long restart-to-serving (answering
PING) took.  A server holds no state beyond its partition files, and
trainers' clients re-send what the dead one never answered (their retry
window, ``$BGL_SERVER_RETRY_TIMEOUT``, is ``server_timeout``), so the run
carries on with the same batches.  A server that dies more than
``server_restarts`` times within ``restart_window`` seconds stops the launch,
the message naming it and how often it died.
"""
from __future__ import annotations

import logging
import time
from typing import Callable

from bgl.errors import LaunchError

from .members import Member
from .spec import ServerPlacement

log = logging.getLogger(__name__)

# Health check of running servers: a PING (waiting PING_TIMEOUT s) every ``health_interval`` s
# (default HEALTH_INTERVAL); none answered for ``hang_timeout`` s (default HANG_TIMEOUT) and the
# server counts as hung.  PINGs queue behind the server's sampling requests, so a busy server
# may miss a few; the hang timeout is long enough that only a stuck one is replaced.
HEALTH_INTERVAL = 5.0
PING_TIMEOUT = 2.0
HANG_TIMEOUT = 30.0


class ServerWatch:
    """Health PINGs and restarts of one launch's graph servers (see module docstring).

    Parameters
    ----------
    ping : ``ping(address, timeout) -> bool``, a PING with the launcher's keys.
    restart : ``restart(placement, n) -> Member`` starts the ``n``-th restart of a server.
    stop : ``stop(member)`` stops one process and reaps it.
    server_timeout : seconds a restarted server has to answer PING.
    server_restarts : restarts allowed per server within ``restart_window`` seconds.
    health_interval : seconds between health PINGs to each running server.
    hang_timeout : seconds without an answered health PING after which a server is replaced.

    Raises
    ------
    LaunchError
        a setting out of range, named by its ``bgl launch`` flag.
    """

    def __init__(self, ping: Callable[[str, float], bool],
                 restart: Callable[[ServerPlacement, int], Member], stop: Callable[[Member], None], *,
                 server_timeout: float, server_restarts: int = 3, restart_window: float = 600.0,
                 health_interval: float = HEALTH_INTERVAL, hang_timeout: float = HANG_TIMEOUT):
        if server_restarts < 0:
            raise LaunchError(f"--server-restarts must be >= 0, got {server_restarts}")
        if restart_window <= 0:
            raise LaunchError(f"--server-restart-window must be > 0, got {restart_window:g}")
        if health_interval <= 0:
            raise LaunchError(f"--server-ping-interval must be > 0, got {health_interval:g}")
        if hang_timeout <= 0:
            raise LaunchError(f"--server-hang-timeout must be > 0, got {hang_timeout:g}")
        self.ping = ping
        self.restart = restart
        self.stop = stop
        self.server_timeout = server_timeout
        self.health_interval = health_interval
        self.hang_timeout = hang_timeout
        self.server_restarts = server_restarts
        self.restart_window = restart_window
        self.deaths: dict[int, list[float]] = {}  # part -> monotonic times its server died

    def check(self, m: Member) -> tuple[str, int] | None:
        """A live server: a restarted one is PINGed until it serves (logging how long that took);
        a serving one gets a health PING every ``health_interval`` s and is restarted after
        ``hang_timeout`` s without an answer."""
        now = time.monotonic()
        if not m.ready:  # restarted, not serving yet
            if self.ping(m.placement.address, 0.5):
                m.ready = True
                m.next_ping = m.last_answer = time.monotonic()
                log.warning("%s restarted (restart %d): serving again %.2f s after it was found dead",
                            m.what, m.restart, time.monotonic() - m.restarted_at)
            elif now - m.restarted_at > self.server_timeout:
                log.error("%s restarted but did not answer PING within %g s", m.what, self.server_timeout)
                return (f"{m.launched.host.label}: {m.what} was restarted but did not answer PING "
                        f"within {self.server_timeout:g} s", 1)
            return None
        if now < m.next_ping:
            return None
        if self.ping(m.placement.address, PING_TIMEOUT):
            m.last_answer = time.monotonic()
        else:
            log.warning("%s missed a health PING (none answered for %.1f s)", m.what,
                        time.monotonic() - m.last_answer)
        m.next_ping = time.monotonic() + self.health_interval
        silent = time.monotonic() - m.last_answer
        if silent < self.hang_timeout or m.launched.popen.poll() is not None:
            return None  # (one that exited meanwhile is handled as an exit on the next pass)
        self.stop(m)
        return self.died(m, f"{m.launched.host.label}: {m.what} stopped answering PING "
                            f"(none answered for {silent:.0f} s)")

    def died(self, m: Member, why: str) -> tuple[str, int] | None:
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
        new = self.restart(m.placement, restart)
        new.restarted_at = now
        return None
