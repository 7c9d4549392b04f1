"""ParHIP (KaHIP's distributed partitioner, MIT) as a distributed partitioning engine (``--engine parhip``).

``.ci/setup-parhip.sh`` builds ParHIP's shared interface library from the ``kahip`` source
distribution on PyPI (cmake ``-DPARHIP=ON -D64BITMODE=ON``, only the ``parhip_interface`` target)
against the Open MPI that ``.ci/setup-mpi.sh`` installs, into ``~/.cache/bgl/parhip-VERSION/``
(``$BGL_PARHIP_DIR`` names another directory).  bgl calls

    ParHIPPartitionKWay(vtxdist, xadj, adjncy, vwgt, adjwgt, &nparts, &imbalance, suppress_output,
                        seed, mode, &edgecut, part, &comm)

with the same distributed CSR that PT-Scotch gets through ParMETIS's interface (``vtxdist`` int
[R+1], each rank's ``xadj``/``adjncy``: symmetric, no self-loops, global ids), as 64-bit unsigned
``idxtype``.  ``mode`` is one of ParHIP's presets; the social ones (label-propagation coarsening)
are made for the power-law graphs GNNs train on, and ``fastsocial`` is the default.
"""
from __future__ import annotations

import ctypes
import os
from pathlib import Path

import numpy as np

from .engines import _TABLE, EngineMissing

#: The kahip release .ci/setup-parhip.sh builds (its directory name carries it).
VERSION = "3.25"
LIBRARY = "libparhip_interface.so"
#: ParHIP's presets bgl offers (:mod:`.engines`), by name: their ``int mode`` constants in
#: parhip_interface.h (ECOMESH = 2 and ECOSOCIAL = 5 are not offered).
MODES = {"ultrafastmesh": 0, "fastmesh": 1, "ultrafastsocial": 3, "fastsocial": 4}
DEFAULT_MODE = _TABLE["parhip"].modes[0]
_lib = None


def library_dir() -> Path:
    """Where the library is looked for: $BGL_PARHIP_DIR, else ~/.cache/bgl/parhip-VERSION (where
    .ci/setup-parhip.sh puts it, with the same variable)."""
    return Path(os.environ.get("BGL_PARHIP_DIR") or Path.home() / ".cache" / "bgl" / f"parhip-{VERSION}")


def library_path() -> Path | None:
    """The built ``libparhip_interface.so`` in :func:`library_dir`, or None."""
    path = library_dir() / LIBRARY
    return path if path.is_file() else None


def load() -> ctypes.CDLL:
    """ParHIP's interface library (loaded once); :class:`EngineMissing` names the fix."""
    global _lib
    if _lib is not None:
        return _lib
    path = library_path()
    if path is None:
        raise EngineMissing(f"--engine parhip needs ParHIP's library: no {LIBRARY} in {library_dir()} "
                            f"($BGL_PARHIP_DIR, default ~/.cache/bgl/parhip-{VERSION}); run .ci/setup-parhip.sh "
                            f"(it builds it there from PyPI's kahip {VERSION} source with cmake and MPI)")
    lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
    lib.ParHIPPartitionKWay.restype = None
    _lib = lib
    return lib


def _ptr(a: np.ndarray) -> ctypes.c_void_p:
    return a.ctypes.data_as(ctypes.c_void_p)


def part_kway(comm, vtxdist: np.ndarray, xadj: np.ndarray, adjncy: np.ndarray, num_parts: int, *,
              imbalance: float = 0.03, seed: int = 0, mode: str | None = None,
              vwgt: np.ndarray | None = None, adjwgt: np.ndarray | None = None) -> np.ndarray:
    """Each own vertex's part, int64 [vtxdist[rank+1] - vtxdist[rank]]; collective over ``comm``.

    The arguments are :func:`bgl.partition.ptscotch.part_kway`'s, plus ``seed`` and ``mode`` (a key
    of :data:`MODES`, None = :data:`DEFAULT_MODE`); ``adjwgt`` (int64 [xadj[-1]] edge weights >= 1,
    symmetric, or None: all 1) is ParHIP's fifth argument (a coarsened graph's, :mod:`.distributed.coarsen`).  ParHIP needs every rank to own at least one
    vertex (the caller's node ranges do).  The int64 arrays go in as uint64 views, not copies: the
    adjacency is the largest array a rank holds.  ParHIP's own ``edgecut`` is a C ``int`` (it wraps
    past 2^31) and is not used; bgl counts the cut itself.
    """
    from mpi4py import MPI

    mode = DEFAULT_MODE if mode is None else mode
    if mode not in MODES:
        raise ValueError(f"ParHIP mode must be one of {', '.join(MODES)}, got {mode!r}")
    lib = load()
    rank = comm.Get_rank()
    n_local = int(vtxdist[rank + 1] - vtxdist[rank])
    u64 = lambda a: np.ascontiguousarray(a, np.int64).view(np.uint64)  # noqa: E731 - ids are >= 0
    vtxdist, xadj = u64(vtxdist), u64(xadj)
    adjncy = u64(adjncy if len(adjncy) else np.zeros(1))  # a valid pointer without edges
    vw = None if vwgt is None else u64(vwgt)
    aw = None if adjwgt is None else u64(adjwgt if len(adjwgt) else np.ones(1))
    part = np.zeros(max(n_local, 1), np.uint64)
    nparts, eps, edgecut = ctypes.c_int(int(num_parts)), ctypes.c_double(float(imbalance)), ctypes.c_int(0)
    lib.ParHIPPartitionKWay(_ptr(vtxdist), _ptr(xadj), _ptr(adjncy), None if vw is None else _ptr(vw),
                            None if aw is None else _ptr(aw), ctypes.byref(nparts), ctypes.byref(eps), ctypes.c_bool(True), ctypes.c_int(int(seed)),
                            ctypes.c_int(MODES[mode]), ctypes.byref(edgecut), _ptr(part),
                            ctypes.c_void_p(MPI._addressof(comm)))
    part = part[:n_local].astype(np.int64)
    if n_local and int(part.max()) >= num_parts:
        raise RuntimeError(f"ParHIP returned parts outside [0, {num_parts}) on rank {rank}")
    return part
