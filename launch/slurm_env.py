"""What a Slurm allocation tells its processes: node lists, counts, and where each node is.

:func:`expand_nodelist` is our own reading of Slurm's hostlist syntax (what
``scontrol show hostnames`` prints one per line):

* comma-separated entries: ``login1,gpu7``;
* a bracketed range set inside a name: ``node[01-03,7]`` -> ``node01 node02
  node03 node7`` (the zero-padding of a range's lower bound is kept, as
  Slurm does: ``n[8-10]`` -> ``n8 n9 n10``, ``n[08-10]`` -> ``n08 n09 n10``);
* text after the brackets: ``gpu[1-2]-ib`` -> ``gpu1-ib gpu2-ib``;
* several bracket groups in one name multiply out, left group outermost:
  ``r[1-2]n[1-2]`` -> ``r1n1 r1n2 r2n1 r2n2``;
* a name listed twice stays twice (as ``scontrol show hostnames`` prints it);
  :meth:`SlurmAllocation.from_environ` rejects such a list.

Costs O(number of nodes) time and memory; nothing here runs per graph node.
"""
from __future__ import annotations

import os
import re
from collections import Counter
import socket
import subprocess
from dataclasses import dataclass
from typing import Mapping

from bgl.errors import LaunchError

from .env_world import env_int

# Ranges larger than this are a typo (node[1-1000000]), not an allocation.
MAX_NODES = 65536
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def _split_top_level(text: str) -> list[str]:
    """Split at commas outside brackets; LaunchError for unbalanced brackets."""
    entries, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
            if depth > 1:
                raise LaunchError(f"node list {text!r}: nested '[' at position {i}")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise LaunchError(f"node list {text!r}: ']' without '[' at position {i}")
        elif ch == "," and depth == 0:
            entries.append(text[start:i])
            start = i + 1
    if depth:
        raise LaunchError(f"node list {text!r}: '[' is never closed")
    entries.append(text[start:])
    return entries


def _expand_ranges(body: str, text: str) -> list[str]:
    """``01-03,7`` -> ``["01", "02", "03", "7"]`` (width of each lower bound kept)."""
    out: list[str] = []
    for item in body.split(","):
        m = _RANGE.match(item.strip())
        if not m:
            raise LaunchError(f"node list {text!r}: {item!r} is not a number or a range like 1-4")
        lo_text, hi_text = m.group(1), m.group(2)
        lo = int(lo_text)
        hi = int(hi_text) if hi_text is not None else lo
        if hi < lo:
            raise LaunchError(f"node list {text!r}: range {item!r} runs backwards")
        if hi - lo + 1 > MAX_NODES:
            raise LaunchError(f"node list {text!r}: range {item!r} has more than {MAX_NODES} nodes")
        width = len(lo_text) if lo_text.startswith("0") else 0
        out.extend(str(n).zfill(width) for n in range(lo, hi + 1))
    return out


def _expand_entry(entry: str, text: str) -> list[str]:
    """One comma-free entry with any number of ``[...]`` groups."""
    names = [""]
    rest = entry
    while rest:
        open_at = rest.find("[")
        if open_at < 0:
            names = [n + rest for n in names]
            break
        close_at = rest.index("]", open_at)  # balanced: checked by _split_top_level
        prefix, body = rest[:open_at], rest[open_at + 1:close_at]
        if not body:
            raise LaunchError(f"node list {text!r}: empty brackets in {entry!r}")
        names = [n + prefix + r for n in names for r in _expand_ranges(body, text)]
        if len(names) > MAX_NODES:
            raise LaunchError(f"node list {text!r} names more than {MAX_NODES} nodes")
        rest = rest[close_at + 1:]
    return names


def expand_nodelist(text: str) -> list[str]:
    """Host names of a Slurm node list (``SLURM_JOB_NODELIST``), in Slurm's order.

    Raises
    ------
    LaunchError
        for an empty list, an empty entry (``a,,b``), unbalanced or empty
        brackets, a bracket item that is not ``N`` or ``N-M``, a backwards range,
        or whitespace inside a name; the message quotes the list.
    """
    text = (text or "").strip()
    if not text:
        raise LaunchError("the Slurm node list is empty (SLURM_JOB_NODELIST is blank)")
    names: list[str] = []
    for entry in _split_top_level(text):
        if not entry:
            raise LaunchError(f"node list {text!r}: empty entry (two commas, or one at an end)")
        if any(ch.isspace() for ch in entry):
            raise LaunchError(f"node list {text!r}: whitespace in entry {entry!r}")
        if entry.startswith("["):
            raise LaunchError(f"node list {text!r}: entry {entry!r} has no host-name prefix")
        names += _expand_entry(entry, text)
    return names


def _gpu_count(env: Mapping[str, str]) -> int | None:
    """GPUs Slurm gave this node: ``SLURM_GPUS_ON_NODE``, else the length of ``CUDA_VISIBLE_DEVICES``
    when Slurm set ``SLURM_JOB_GPUS`` (older setups)."""
    count = env_int(env, "SLURM_GPUS_ON_NODE")
    if count is not None:
        return count
    if env.get("SLURM_JOB_GPUS"):
        return len([g for g in env["SLURM_JOB_GPUS"].split(",") if g])
    return None


@dataclass(frozen=True)
class SlurmAllocation:
    """The allocation a launch runs in (read from the environment by :meth:`from_environ`)."""

    job_id: str
    nodes: tuple[str, ...]
    cpus_on_node: int | None = None
    gpus_on_node: int | None = None

    @classmethod
    def from_environ(cls, env: Mapping[str, str] | None = None) -> "SlurmAllocation":
        """Read ``SLURM_JOB_ID``, ``SLURM_JOB_NODELIST`` (or the older ``SLURM_NODELIST``),
        ``SLURM_NNODES`` (checked against the list), ``SLURM_CPUS_ON_NODE`` and ``SLURM_GPUS_ON_NODE``.

        Raises
        ------
        LaunchError
            outside an allocation (no ``SLURM_JOB_ID``), for a bad node list, or when
            ``SLURM_NNODES`` disagrees with it.
        """
        env = os.environ if env is None else env
        job_id = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
        if not job_id:
            raise LaunchError("--backend slurm runs inside a Slurm allocation (salloc, or an sbatch "
                              "script), but SLURM_JOB_ID is not set")
        if "SLURM_JOB_NODELIST" in env:
            raw = env["SLURM_JOB_NODELIST"]
        elif "SLURM_NODELIST" in env:
            raw = env["SLURM_NODELIST"]
        else:
            raise LaunchError(f"SLURM_JOB_NODELIST is not set (job {job_id})")
        nodes = expand_nodelist(raw)
        twice = sorted(n for n, k in Counter(nodes).items() if k > 1)
        if twice:
            raise LaunchError(f"SLURM_JOB_NODELIST={raw!r} names {', '.join(twice)} more than once")
        nnodes = env_int(env, "SLURM_NNODES") or env_int(env, "SLURM_JOB_NUM_NODES")
        if nnodes is not None and nnodes != len(nodes):
            raise LaunchError(f"SLURM_NNODES={nnodes} but SLURM_JOB_NODELIST={raw!r} names "
                              f"{len(nodes)} node(s): {','.join(nodes)}")
        return cls(job_id=str(job_id), nodes=tuple(nodes),
                   cpus_on_node=env_int(env, "SLURM_CPUS_ON_NODE"),
                   gpus_on_node=_gpu_count(env))

    def default_trainers(self) -> int:
        """Trainers per node when none is asked for: one per GPU Slurm gave the node, else 1."""
        return self.gpus_on_node or 1

    def default_server_threads(self, servers_per_node: int, trainers: int) -> int | None:
        """Sampling threads per graph server: the node's CPUs left after one per trainer, shared by
        its servers (at least 1); None (the server's own default) when Slurm gives no CPU count."""
        if not self.cpus_on_node:
            return None
        return max(1, (self.cpus_on_node - trainers) // max(1, servers_per_node))


def node_addresses(nodes: list[str] | tuple[str, ...], env: Mapping[str, str] | None = None,
                   timeout: float = 30.0) -> dict[str, str]:
    """IP address of each node, as Slurm reaches it.

    Slurm talks to a node at its ``NodeAddr`` (``scontrol show node``; the node
    name itself when the configuration gives none), so that is the address
    its graph servers bind; a ``NodeAddr`` that is a host name is resolved
    through the system resolver.

    Raises
    ------
    LaunchError
        naming the node whose address cannot be found.
    """
    addrs: dict[str, str] = {}
    try:
        done = subprocess.run(["scontrol", "show", "node", "-o", ",".join(nodes)],
                              capture_output=True, text=True, timeout=timeout,
                              env=dict(env) if env is not None else None)
        for line in done.stdout.splitlines():
            fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
            if fields.get("NodeName") in nodes and fields.get("NodeAddr"):
                addrs[fields["NodeName"]] = fields["NodeAddr"]
    except (OSError, subprocess.TimeoutExpired):
        pass  # no scontrol here: fall back to the resolver for every node
    out = {}
    for node in nodes:
        name = addrs.get(node, node)
        try:
            out[node] = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)[0][4][0]
        except (socket.gaierror, UnicodeError) as e:
            raise LaunchError(f"Slurm node {node}: cannot resolve its address {name!r}: {e}") from None
    return out


def allocation_hosts(alloc: SlurmAllocation, num_parts: int, servers_per_node: int,
                     env: Mapping[str, str] | None = None) -> list:
    """The allocation's nodes as launch hosts (``Host(ip=NodeAddr, name=node)``), in Slurm's order.

    Raises
    ------
    LaunchError
        when the partition has more parts than the nodes' server slots (before any address
        look-up or process start), or a node's address cannot be found.
    """
    from .hosts import Host
    from .spec import check_server_slots

    check_server_slots(num_parts, len(alloc.nodes), servers_per_node,
                       f"the allocation ({','.join(alloc.nodes)})")
    addrs = node_addresses(alloc.nodes, env)
    return [Host(ip=addrs[n], name=n, line=i + 1) for i, n in enumerate(alloc.nodes)]
