"""Hosts files in DistDGL's ``ip_config.txt`` format.

One machine per line: ``IP [PORT]``.  ``#`` starts a comment; blank lines
are skipped.  ``PORT`` (optional) is the first port that machine's graph
servers bind; without it the launcher's ``--port-base`` is used.  The
first host is the rendezvous host (``torch.distributed`` master).

Every problem is reported with the file name and line number, because a
typo in a hosts file otherwise surfaces minutes later as a connection
timeout on some remote machine.
"""
from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from bgl.errors import LaunchError


@dataclass(frozen=True)
class Host:
    """One machine of the cluster.

    Attributes
    ----------
    ip : the address as written (IPv4 or IPv6); servers on this host bind it.
    port : first graph-server port on this host, or ``None`` for ``--port-base``.
    line : 1-based line number in the hosts file (for error messages).
    name : the machine's name where it has one the user knows it by (a Slurm node name);
        messages then say ``node NAME (IP)``.
    """

    ip: str
    port: int | None = None
    line: int = 0
    name: str | None = None

    @property
    def label(self) -> str:
        """How messages name this machine: ``node bgla (10.0.0.2)`` or ``host 10.0.0.2``."""
        return f"node {self.name} ({self.ip})" if self.name else f"host {self.ip}"

    @property
    def is_loopback(self) -> bool:
        """True for a loopback address (127.0.0.0/8, ::1)."""
        return ipaddress.ip_address(self.ip).is_loopback

    @property
    def tag(self) -> str:
        """The machine in output prefixes (``[tag:server:0]``): its name if it has one, else its IP."""
        return self.name or self.ip

    def url_host(self) -> str:
        """The host part of a URL: IPv6 addresses need brackets (``tcp://[::1]:5000``)."""
        return f"[{self.ip}]" if ":" in self.ip else self.ip


def this_machine() -> list[Host]:
    """The hosts of ``--backend local`` without ``--hosts``: this machine alone, on loopback, as
    ``torchrun --standalone`` runs (servers bind 127.0.0.1; nothing is reachable from elsewhere)."""
    return [Host(ip="127.0.0.1")]


def parse_port(text: str, where: str) -> int:
    """A TCP port 1..65535 from ``text``; ``where`` prefixes the error message."""
    try:
        port = int(text, 10)
    except ValueError:
        raise LaunchError(f"{where}: port must be an integer 1..65535, got {text!r}") from None
    if not 1 <= port <= 65535:
        raise LaunchError(f"{where}: port must be in 1..65535, got {port}")
    return port


def parse_hosts_text(text: str, source: str = "<hosts>") -> list[Host]:
    """Parse hosts-file text.

    Parameters
    ----------
    text : file contents.
    source : name used in error messages (the file path).

    Returns
    -------
    list of :class:`Host`, in file order (at least one).

    Raises
    ------
    LaunchError
        for a bad IP address, a bad port, extra fields, a duplicate
        ``IP PORT`` pair, or a file with no hosts; the message names the
        file, the line number and the offending text.
    """
    hosts: list[Host] = []
    seen: dict[tuple[str, int | None], int] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{source}:{lineno}"
        fields = line.split()
        if len(fields) > 2:
            raise LaunchError(f"{where}: expected 'IP [PORT]', got {line!r}")
        try:
            ip = str(ipaddress.ip_address(fields[0]))
        except ValueError:
            raise LaunchError(
                f"{where}: {fields[0]!r} is not an IP address (hosts files list IPs, "
                "as DistDGL's ip_config does)") from None
        port = parse_port(fields[1], where) if len(fields) == 2 else None
        key = (ip, port)
        if key in seen:
            raise LaunchError(f"{where}: duplicate host {line!r} (first on line {seen[key]})")
        seen[key] = lineno
        hosts.append(Host(ip=ip, port=port, line=lineno))
    if not hosts:
        raise LaunchError(f"{source}: no hosts (every line is blank or a comment)")
    return hosts


def parse_hosts_file(path: str | os.PathLike) -> list[Host]:
    """Read and parse a hosts file (see :func:`parse_hosts_text`)."""
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise LaunchError(f"hosts file {str(p)!r} does not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        raise LaunchError(f"hosts file {str(p)!r} cannot be read: {e}") from None
    return parse_hosts_text(text, source=str(p))
