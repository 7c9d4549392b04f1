"""CURVE key files for graph servers and their clients (authentication + encryption).

ZeroMQ's CURVE (CurveZMQ) gives every server and every client a Curve25519
key pair.  A client must know the server's public key to connect (so it
cannot be fooled by an impostor), the server admits only clients whose
public keys are on its allow-list (so only a run's own trainers get data),
and every message is encrypted.  A plaintext server, by contrast, serves
whoever can reach its port.

Files (the czmq/``zmq.auth`` certificate format, so ``zmq.auth`` tools read them):

* ``NAME.key_secret`` -- a key pair: ``public-key`` and ``secret-key``, mode 0600;
* ``NAME.key`` -- a public key alone (safe to share).

A key directory (``BGL_CURVE_DIR``, written by ``bgl launch`` in each
process's private run directory, or by :func:`write_key_dir`) holds::

    server.key           the servers' public key        (clients need it)
    server.key_secret    the servers' key pair          (servers only)
    client.key_secret    this client's key pair         (clients only)
    allowed_clients/*.key  public keys the servers admit (servers only)

Every loader validates what it reads (40-character Z85 keys, the public key
matching the secret key) and raises :class:`CurveKeyError` naming the file
and the problem.  Writes go through a temp file + rename, created 0600, so a
reader never sees half a key and a key is never world-readable, not even
for a moment.

This module imports zmq only when a key pair must be made or checked, so
the launch agent (which materializes keys it receives over ssh) stays light.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from bgl.errors import BglError

ENV_CURVE_DIR = "BGL_CURVE_DIR"
# Secret variable through which `bgl launch` hands a process its keys (agent stdin, never argv).
ENV_CURVE_KEYS = "BGL_CURVE_KEYS"

SERVER_PUBLIC = "server.key"
SERVER_SECRET = "server.key_secret"
CLIENT_SECRET = "client.key_secret"
ALLOWED_DIR = "allowed_clients"

Z85_CHARS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_KEY = re.compile("^[" + re.escape(Z85_CHARS) + "]{40}$")
_LINE = re.compile(r'^\s*(public-key|secret-key)\s*=\s*"([^"]*)"\s*$')


class CurveKeyError(BglError):
    """A CURVE key file is missing, malformed, or its public and secret keys do not match."""


@dataclass(frozen=True)
class KeyPair:
    """A Curve25519 key pair, both halves as 40-byte Z85 text."""

    public: bytes
    secret: bytes

    def __repr__(self) -> str:  # never print a secret key into a log
        return f"KeyPair(public={self.public.decode()!r}, secret=<hidden>)"


@dataclass(frozen=True)
class ServerKeys:
    """What a CURVE graph server needs: its own pair and the client public keys it admits."""

    pair: KeyPair
    allowed_clients: frozenset[bytes]


@dataclass(frozen=True)
class ClientKeys:
    """What a CURVE client needs: the server's public key and its own pair."""

    server_public: bytes
    pair: KeyPair


def new_keypair() -> KeyPair:
    """A fresh random key pair (libzmq's ``zmq_curve_keypair``)."""
    import zmq

    if not zmq.has("curve"):
        raise CurveKeyError("this libzmq was built without CURVE support; cannot make keys")
    public, secret = zmq.curve_keypair()
    return KeyPair(public, secret)


def check_key(key: bytes | str, what: str) -> bytes:
    """``key`` as bytes if it is 40 Z85 characters; CurveKeyError naming ``what`` otherwise."""
    text = key.decode("ascii", errors="replace") if isinstance(key, bytes) else str(key)
    if not _Z85_KEY.match(text):
        raise CurveKeyError(f"{what}: not a CURVE key (need 40 Z85 characters, got {len(text)} "
                            f"characters{'' if len(text) != 40 else ' outside the Z85 alphabet'})")
    return text.encode("ascii")


def check_pair(public: bytes | str, secret: bytes | str, what: str) -> KeyPair:
    """A validated KeyPair: both keys well formed and ``public`` derived from ``secret``."""
    import zmq

    pub, sec = check_key(public, f"{what} public key"), check_key(secret, f"{what} secret key")
    if zmq.curve_public(sec) != pub:
        raise CurveKeyError(f"{what}: the public key does not belong to the secret key")
    return KeyPair(pub, sec)


# ---------------------------------------------------------------------- files
def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically; the file is 0600 from its first byte."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)  # O_CREAT's mode is masked by umask; a reused name keeps its mode
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _certificate(public: bytes, secret: bytes | None, comment: str) -> str:
    lines = [f"#   ****  {comment}  ****", "#   written by bgl; the czmq/zmq.auth certificate format",
             "", "metadata", "curve", f'    public-key = "{public.decode()}"']
    if secret is not None:
        lines.append(f'    secret-key = "{secret.decode()}"')
    return "\n".join(lines) + "\n"


def write_public(path: str | os.PathLike, public: bytes) -> Path:
    """Write a public-key file (``NAME.key``) atomically, mode 0600."""
    path = Path(path)
    _write_private(path, _certificate(check_key(public, str(path)), None, "CURVE public key"))
    return path


def write_pair(path: str | os.PathLike, pair: KeyPair) -> Path:
    """Write a key-pair file (``NAME.key_secret``) atomically, mode 0600."""
    path = Path(path)
    _write_private(path, _certificate(pair.public, pair.secret, "CURVE key pair: keep private"))
    return path


def _read_fields(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="ascii")
    except FileNotFoundError:
        raise CurveKeyError(f"{path}: CURVE key file missing") from None
    except UnicodeDecodeError:
        raise CurveKeyError(f"{path}: not a CURVE key file (not ASCII text)") from None
    except OSError as e:
        raise CurveKeyError(f"{path}: cannot read CURVE key file: {e.strerror or e}") from None
    fields: dict[str, str] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            if m.group(1) in fields:
                raise CurveKeyError(f"{path}: {m.group(1)} appears twice")
            fields[m.group(1)] = m.group(2)
    return fields


def load_public(path: str | os.PathLike) -> bytes:
    """The public key of a ``.key`` (or ``.key_secret``) file, validated."""
    path = Path(path)
    fields = _read_fields(path)
    if "public-key" not in fields:
        raise CurveKeyError(f'{path}: no public-key = "..." line (not a CURVE key file)')
    return check_key(fields["public-key"], f"{path}: public-key")


def load_pair(path: str | os.PathLike) -> KeyPair:
    """The key pair of a ``.key_secret`` file, validated (the halves must match).

    Refuses a file that others may read: a secret key readable by the world
    is not secret.
    """
    path = Path(path)
    fields = _read_fields(path)
    if "secret-key" not in fields:
        raise CurveKeyError(f'{path}: no secret-key = "..." line (a public-key file? a server '
                            "needs its .key_secret file)")
    if "public-key" not in fields:
        raise CurveKeyError(f'{path}: no public-key = "..." line')
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        raise CurveKeyError(f"{path}: secret key file has mode {mode:04o}; others can read it "
                            f"(chmod 600 {path})")
    return check_pair(fields["public-key"], fields["secret-key"], str(path))


def load_allowed(directory: str | os.PathLike) -> frozenset[bytes]:
    """Public keys of every ``*.key`` file in ``directory`` (the client allow-list)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise CurveKeyError(f"{directory}: client key directory missing (it must hold the "
                            "allowed clients' .key files)")
    keys = frozenset(load_public(p) for p in sorted(directory.glob("*.key")))
    if not keys:
        raise CurveKeyError(f"{directory}: no client .key files; no client could connect")
    return keys


def load_server_keys(secret_file: str | os.PathLike, clients_dir: str | os.PathLike) -> ServerKeys:
    """A server's pair (``secret_file``) and allow-list (``clients_dir``), validated."""
    return ServerKeys(load_pair(secret_file), load_allowed(clients_dir))


def load_client_keys(key_dir: str | os.PathLike) -> ClientKeys:
    """A client's keys from a key directory: ``server.key`` and ``client.key_secret``."""
    key_dir = Path(key_dir)
    if not key_dir.is_dir():
        raise CurveKeyError(f"{key_dir}: CURVE key directory missing (${ENV_CURVE_DIR})")
    return ClientKeys(load_public(key_dir / SERVER_PUBLIC), load_pair(key_dir / CLIENT_SECRET))


def client_keys_from_env(environ: Mapping[str, str] = os.environ) -> ClientKeys | None:
    """The client keys in ``$BGL_CURVE_DIR`` (set by ``bgl launch``), or None when it is unset."""
    key_dir = environ.get(ENV_CURVE_DIR)
    return load_client_keys(key_dir) if key_dir else None


def write_key_dir(key_dir: str | os.PathLike, *, server: KeyPair | None = None,
                  server_public: bytes | None = None, client: KeyPair | None = None,
                  allowed: Iterable[bytes] = ()) -> Path:
    """Write the files of a key directory (see the module docstring); the directory is 0700.

    ``server`` writes both ``server.key_secret`` and ``server.key``;
    ``server_public`` only ``server.key`` (what a client host gets).
    """
    key_dir = Path(key_dir)
    key_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(key_dir, 0o700)
    if server is not None:
        write_pair(key_dir / SERVER_SECRET, server)
        server_public = server.public
    if server_public is not None:
        write_public(key_dir / SERVER_PUBLIC, server_public)
    if client is not None:
        write_pair(key_dir / CLIENT_SECRET, client)
    allowed = list(allowed)
    if allowed:
        adir = key_dir / ALLOWED_DIR
        adir.mkdir(mode=0o700, exist_ok=True)
        for i, key in enumerate(allowed):
            write_public(adir / f"client-{i}.key", key)
    return key_dir


# ------------------------------------------------- handing keys over (launch)
def encode_bundle(*, server: KeyPair | None = None, server_public: bytes | None = None,
                  client: KeyPair | None = None, allowed: Iterable[bytes] = ()) -> str:
    """One line carrying keys to a launched process (the value of ``BGL_CURVE_KEYS``).

    Entries ``role,public[,secret]`` joined by ``;`` (neither character is in
    the Z85 alphabet).  It travels on the agent's stdin, never on a command line.
    """
    entries = []
    if server is not None:
        entries.append(f"server,{server.public.decode()},{server.secret.decode()}")
    elif server_public is not None:
        entries.append(f"server-public,{check_key(server_public, 'server public key').decode()}")
    if client is not None:
        entries.append(f"client,{client.public.decode()},{client.secret.decode()}")
    entries += [f"allow,{check_key(k, 'allowed client key').decode()}" for k in allowed]
    return ";".join(entries)


def materialize_bundle(bundle: str, key_dir: str | os.PathLike) -> Path:
    """Write the keys of an :func:`encode_bundle` line as a key directory (0700, files 0600).

    Runs in the launch agent, so it checks the format without zmq; the
    server and client loaders check the keys themselves when they load them.
    """
    parts: dict = {"allowed": []}
    for entry in filter(None, bundle.split(";")):
        role, *keys = entry.split(",")
        keys = [check_key(k, f"${ENV_CURVE_KEYS} entry {role!r}") for k in keys]
        if role in ("server", "client") and len(keys) == 2:
            parts[role] = KeyPair(keys[0], keys[1])
        elif role == "server-public" and len(keys) == 1:
            parts["server_public"] = keys[0]
        elif role == "allow" and len(keys) == 1:
            parts["allowed"].append(keys[0])
        else:
            raise CurveKeyError(f"${ENV_CURVE_KEYS}: malformed entry {role!r} with {len(keys)} key(s)")
    return write_key_dir(key_dir, **parts)


def main(argv: list[str] | None = None) -> int:
    """``python -m bgl.sampler.curve_keys DIR``: a fresh key directory for one server and one client."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m bgl.sampler.curve_keys",
        description="Write a fresh CURVE key directory: server.key_secret + server.key (server pair), "
                    "client.key_secret (a client pair) and allowed_clients/client-0.key, all mode 0600. "
                    "Serve with `bgl serve --curve-dir DIR`; clients use BGL_CURVE_DIR=DIR. Copy only "
                    "server.key and client.key_secret to a client machine.")
    parser.add_argument("dir", help="directory to create (must not hold keys already)")
    args = parser.parse_args(argv)
    d = Path(args.dir)
    existing = [n for n in (SERVER_SECRET, CLIENT_SECRET) if (d / n).exists()]
    if existing:
        print(f"{d}: already holds {', '.join(existing)}; not overwriting keys", file=sys.stderr)
        return 1
    client = new_keypair()
    write_key_dir(d, server=new_keypair(), client=client, allowed=[client.public])
    print(f"wrote CURVE keys to {d}/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
