"""The CURVE keys of one launch, and the warm-up request the launcher sends with them.

Security: every launch makes fresh CURVE key pairs (:class:`RunKeys`): one
for the graph servers, one for each trainer host and one for the launcher
itself.  Each process receives only what it needs over its agent's stdin
(the ssh channel for remote hosts), and its agent writes them, mode 0600,
into the process's private run directory as ``$BGL_CURVE_DIR``: servers get
their pair and the allow-list of the run's client public keys; trainers get
the servers' public key and their host's pair.  Nobody outside the run can
read from or talk to its servers, and the keys vanish with the run.

:func:`warm_up_servers` is the launcher's first real request through those
keys: it makes the servers compile their numba kernels before any trainer
starts (see :meth:`~bgl.launch.supervisor.Supervisor.run`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from bgl.sampler import curve_keys

from .spec import ClusterSpec


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

    def to_text(self) -> str:
        """Every pair as JSON (secret keys included: for a channel as trusted as this run's
        rendezvous, never for a log)."""
        def pair(p: curve_keys.KeyPair) -> list[str]:
            return [p.public.decode(), p.secret.decode()]

        return json.dumps({"server": pair(self.server), "launcher": pair(self.launcher),
                           "hosts": {ip: pair(p) for ip, p in self.hosts.items()}})

    @classmethod
    def from_text(cls, text: str) -> "RunKeys":
        """The keys :meth:`to_text` wrote; CurveKeyError for anything malformed."""
        def pair(v: list, what: str) -> curve_keys.KeyPair:
            return curve_keys.check_pair(v[0], v[1], what)

        try:
            data = json.loads(text)
            return cls(pair(data["server"], "server"), pair(data["launcher"], "launcher"),
                       {ip: pair(v, f"trainers on {ip}") for ip, v in data["hosts"].items()})
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as e:
            raise curve_keys.CurveKeyError(f"malformed run keys: {type(e).__name__}") from None

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


def keys_env(keys: RunKeys | None, trainer_host: str | None) -> dict[str, str]:
    """Secret variables carrying a server's (``trainer_host`` None) or a trainer host's keys;
    none without CURVE (``keys`` None)."""
    if keys is None:
        return {}
    bundle = keys.server_bundle() if trainer_host is None else keys.trainer_bundle(trainer_host)
    return {curve_keys.ENV_CURVE_KEYS: bundle}


def plain_env(keys: RunKeys | None) -> dict[str, str]:
    """Without CURVE, blank ``BGL_CURVE_DIR`` so a value in the launcher's env is not inherited."""
    return {} if keys is not None else {curve_keys.ENV_CURVE_DIR: ""}


def spread_ids(n: int, k: int):
    """int64 tensor of ``k`` ids spread evenly over ``[0, n)``, first and last included, distinct.

    Integer arithmetic: a float32 ``linspace`` rounds ids past 2^24 (R-MAT 25's last node,
    33,554,431, became 33,554,432, outside the graph, and failed the launch's warm-up)."""
    import torch

    steps = torch.arange(k, dtype=torch.int64)
    return (steps * (n - 1) // max(k - 1, 1)).unique()


def warm_up_servers(addresses: list[str], timeout: float, curve=None) -> None:
    """Sample 2 hops from a few seeds spread over all servers and read their features/labels;
    also one LABOR sample and one weighted sample per 1-D edge array the servers hold, so
    those kernels (and each weight array's one-pass check) are ready before trainers ask.

    Raises whatever the client raises (``ServerUnavailable``, ``ServerError``); an edge array
    that is not valid as weights (a feature with negative values) is skipped.
    """
    import torch

    from bgl.errors import ServerError
    from bgl.sampler import SamplingClient
    from bgl.sampler.multilayer import Labor

    with SamplingClient(addresses, timeout=timeout, curve=curve) as client:
        n = client.num_nodes
        seeds = spread_ids(n, min(n, 8 * len(addresses)))
        blocks = client.sample_blocks(seeds, [2, 2], seed=0)
        client.sample_blocks(seeds, [2], seed=0, labor=Labor())
        for name, spec in client.infos[0].get("edata", {}).items():
            if len(spec.get("shape", ())) == 1:
                try:
                    client.sample_blocks(seeds, [2], seed=0, prob=name)
                except ServerError:
                    pass  # not weights: sampling by it will fail with this message, by name
        if client.feat_dim:
            client.fetch_features(blocks[0].src_ids)
        if client.num_classes:
            client.fetch_labels(seeds)
