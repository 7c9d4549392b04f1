"""ZeroMQ endpoint checks shared by graph servers (bind) and their clients (connect).

libzmq reads a TCP port with ``strtol`` into 16 bits, so ``tcp://127.0.0.1:99999``
binds or connects to port 34463 (99999 - 65536) without a word: a server comes up
where no client looks for it.  Every place bgl takes an address (``bgl serve
--bind``, :class:`~bgl.sampler.server.GraphServer`, ``$BGL_SERVERS``, a
:class:`~bgl.sampler.client.SamplingClient`'s addresses) checks it here first.
Only ``tcp://`` endpoints have ports; ``ipc://`` and ``inproc://`` pass unchanged.
"""
from __future__ import annotations

MAX_PORT = 65535


def check_endpoint(endpoint: str, what: str, *, bind: bool = False) -> str:
    """Return ``endpoint`` unchanged if its TCP port is in 1..65535 (or ``*`` when ``bind``).

    Parameters
    ----------
    endpoint : a ZeroMQ endpoint, e.g. ``tcp://127.0.0.1:5000`` or ``tcp://[::1]:*``.
    what : how the error names it (``--bind``, ``$BGL_SERVERS address``, ``bad graph server address``).
    bind : a server's own endpoint, where ``*`` asks the OS for a free port.

    Raises
    ------
    ValueError
        naming ``what``, the endpoint and the port, for a ``tcp://`` endpoint without a
        port, with a port that is not a number, or with one outside 1..65535.
    """
    if not isinstance(endpoint, str):
        raise TypeError(f"{what} must be a string like tcp://HOST:PORT, got {type(endpoint).__name__}")
    if not endpoint.startswith("tcp://"):
        return endpoint
    host, sep, port = endpoint[len("tcp://"):].rpartition(":")
    if not sep or not host or host.endswith("[") or (host.startswith("[") != host.endswith("]")):
        raise ValueError(f"{what} {endpoint!r} has no port (expected tcp://HOST:PORT)")
    if bind and port == "*":
        return endpoint
    wildcard = " or '*' for a free one" if bind else ""
    if not port.isdigit():
        raise ValueError(f"{what} {endpoint!r}: port must be a number in 1..{MAX_PORT}{wildcard}, got {port!r}")
    if not 1 <= int(port) <= MAX_PORT:
        raise ValueError(f"{what} {endpoint!r}: port must be in 1..{MAX_PORT}{wildcard}, got {int(port)}")
    return endpoint
