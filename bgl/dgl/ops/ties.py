"""Which of several edges tied at a node's max / min gets the gradient: the one DGL 2.1 picks on
this machine.

DGL's CPU max / min SpMM has two kernels that disagree on ties.  Its libxsmm kernel, taken only
on a CPU with AVX-512, for float32 (not float64) operands that do not broadcast, while libxsmm
is switched on (:func:`use_libxsmm`), keeps the LAST tied edge of a row (CSR order: edge-id
order within a row for bgl's graphs).  Only ``copy_u`` / ``copy_e`` and ``u_<op>_e`` messages reach
that SpMM with their own operands; DGL computes every other message (``u_add_v``, ``e_add_u``,
``u_dot_e``) on the edges first and reduces it with ``copy_e``, which never broadcasts, so a
``u_add_v`` of broadcasting shapes keeps the last tied edge too (checked against DGL on an AVX-512
machine).  Its plain kernel, used in every other case (and the
typed kernel behind a heterograph's ``update_all``, which never takes libxsmm), compares
strictly and keeps the FIRST.  DGL's CUDA kernel compares strictly too (one thread per row in
CSR order), so a GPU tensor gets the first; not checked against DGL on a GPU here.  The CPU is
read from ``/proc/cpuinfo`` once per process; elsewhere (not Linux, not x86) no AVX-512 is assumed.
"""
from __future__ import annotations

import functools

import torch

_SWITCH: dict = {}  # "on": the user's use_libxsmm flag; absent: DGL's default


@functools.lru_cache(maxsize=None)
def cpu_flags() -> frozenset:
    """The CPU's feature flags (``avx2``, ``avx512f``, ...) from ``/proc/cpuinfo``; empty where
    there is no such file or no ``flags`` line (non-Linux, non-x86)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.partition(":")[2].split())
    except OSError:
        pass
    return frozenset()


def use_libxsmm(flag: bool) -> None:
    """Set whether bgl.dgl's max / min reducers break ties as DGL's libxsmm kernel does (as
    ``dgl.use_libxsmm``, which switches that kernel itself on or off)."""
    _SWITCH["on"] = bool(flag)


def is_libxsmm_enabled() -> bool:
    """Whether the :func:`use_libxsmm` flag is on; by default when the CPU has AVX2, as DGL's."""
    return _SWITCH.get("on", "avx2" in cpu_flags())


def last_wins(dtype: torch.dtype, device: torch.device, broadcasts: bool, typed: bool = False) -> bool:
    """True when DGL 2.1 gives a tie to the last edge of a row, False when to the first.

    Parameters
    ----------
    dtype, device : the reduced values'; broadcasts : the SpMM's two operands have different
        feature shapes (DGL's ``use_bcast``; never for ``copy_u`` / ``copy_e``, nor for a message DGL
        computes on the edges before reducing it); typed : the
        reduction is a heterograph's ``update_all`` over several relations (DGL's typed kernel)
    """
    return (device.type == "cpu" and dtype != torch.float64 and not broadcasts and not typed
            and is_libxsmm_enabled() and "avx512f" in cpu_flags())
