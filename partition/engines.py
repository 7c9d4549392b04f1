"""The distributed partitioning engines (``--distributed --engine NAME``), by name.

One table maps an engine's name to the module that calls it (:mod:`.ptscotch`, :mod:`.parhip_engine`)
and to its modes; the CLI's ``--engine`` / ``--engine-mode`` choices, the argument checks and the
call that assigns parts all read it.  This module imports nothing but the standard library, so
``bgl partition --help`` lists the engines without loading numpy, MPI or an engine's library; the
engine's module is imported when the checks run (:func:`check`), before any rank reads data.

Every engine module has ``load()`` (the library, once; :class:`EngineMissing` naming the fix) and
``part_kway(comm, vtxdist, xadj, adjncy, num_parts, *, imbalance, seed, mode, vwgt, adjwgt)`` (each own vertex's
part, int64; collective) over ParMETIS's 64-bit distributed CSR.
"""
from __future__ import annotations

import importlib
import logging
from typing import NamedTuple


class EngineMissing(RuntimeError):
    """A distributed partitioning engine (or MPI) is not installed; the message says how to get it."""


class Engine(NamedTuple):
    module: str  #: under ``bgl.partition``
    modes: tuple[str, ...]  #: the engine's presets, its default first; () = none to choose
    summary: str  #: for ``--help``


_TABLE = {
    "ptscotch": Engine("ptscotch", (), "PT-Scotch through its ParMETIS API (apt: libptscotch-dev)"),
    # The social presets coarsen by label propagation, made for the power-law graphs GNNs train on.
    # The eco presets are left out: in 3.25 they did not finish on a 2,000-node graph (minutes in the
    # sequential initial partitioner's FM loop; bench/results/partition.md).
    "parhip": Engine("parhip_engine", ("fastsocial", "ultrafastsocial", "fastmesh", "ultrafastmesh"),
                     "ParHIP, KaHIP's distributed partitioner (built by .ci/setup-parhip.sh)"),
}
#: ``--engine auto`` (the default): the first of these whose library loads on every rank.  ParHIP
#: first: on R-MAT 16-20 its remote-sample share was level with one-machine KaMinPar's in seconds to a
#: minute, where PT-Scotch's stayed near a random split's after up to 18 min (bench/results/partition.md).
PREFERENCE = ("parhip", "ptscotch")
AUTO = "auto"
ENGINES = tuple(_TABLE)
#: Every engine's modes, for ``--engine-mode``'s choices (each engine checks its own).
ALL_MODES = tuple(dict.fromkeys(m for e in _TABLE.values() for m in e.modes))


def help_text() -> str:
    """``--engine``'s help: each engine's one line."""
    return "; ".join([f"{AUTO} = the first of {', '.join(PREFERENCE)} installed on every rank (the default)",
                      *(f"{name} = {e.summary}" for name, e in _TABLE.items())])


def resolve(engine: str, comm) -> str:
    """``engine`` itself, or for ``"auto"`` the first engine of :data:`PREFERENCE` whose library loads
    on every rank of ``comm`` (collective: ranks on hosts with different installs still agree), else
    the last one, whose :func:`check` then names what to install.  Every rank calls it, before
    :func:`check`."""
    if engine != AUTO:
        return engine
    from mpi4py import MPI

    for name in PREFERENCE:
        try:
            _module(name).load()
            here = 1
        except (EngineMissing, ImportError, OSError):
            here = 0
        if comm.allreduce(here, op=MPI.MIN) == 1:
            if comm.Get_rank() == 0:
                logging.getLogger(__name__).info("--engine auto: %s (installed on every rank)", name)
            return name
    return PREFERENCE[-1]


def mode_help() -> str:
    """``--engine-mode``'s help: each engine's modes and default."""
    return "; ".join(f"{name}: {', '.join(e.modes)} (default {e.modes[0]})" for name, e in _TABLE.items() if e.modes)


def _module(engine: str):
    return importlib.import_module(f"{__package__}.{_TABLE[engine].module}")


def check(engine: str, mode: str | None = None) -> str | None:
    """The mode ``engine`` will run in (its default for None; None for an engine without modes),
    after loading its library; cheap, and every rank runs it before reading any data.

    Raises ValueError for an unknown engine or a mode the engine has not, :class:`EngineMissing`
    (naming the setup script) when its library is not installed.
    """
    if engine not in _TABLE:
        raise ValueError(f"unknown distributed engine {engine!r}; choose one of {', '.join(ENGINES)}")
    modes = _TABLE[engine].modes
    if mode is not None and mode not in modes:
        if not modes:
            raise ValueError(f"--engine {engine} has no modes; --engine-mode {mode} applies to "
                             f"{', '.join(n for n, e in _TABLE.items() if e.modes)}")
        raise ValueError(f"--engine {engine} has no mode {mode!r}; choose one of {', '.join(modes)}")
    _module(engine).load()
    return mode if mode is not None else (modes[0] if modes else None)


def part_kway(engine: str, comm, vtxdist, xadj, adjncy, num_parts: int, *, imbalance: float, seed: int,
              mode: str | None, vwgt=None, adjwgt=None):
    """Each own vertex's part from ``engine`` (int64 [local n]; collective over ``comm``): the
    engine module's ``part_kway`` on ParMETIS's distributed CSR (see :func:`.ptscotch.part_kway`);
    ``vwgt`` : int64 [local n] vertex weights or None (:mod:`.distributed.weights`); ``adjwgt`` : int64
    [xadj[-1]] edge weights or None (a coarsened graph's, :mod:`.distributed.coarsen`)."""
    return _module(engine).part_kway(comm, vtxdist, xadj, adjncy, num_parts, imbalance=imbalance, seed=seed,
                                     mode=mode, vwgt=vwgt, adjwgt=adjwgt)
