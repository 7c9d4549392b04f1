"""Cache-miss path: gather feature rows that live in host memory onto the training device.

Two ways to move missed rows to a GPU:

``"uva"``
    The feature table sits in pinned (page-locked) host memory.  On a 64-bit
    CUDA system pinned memory is mapped into the GPU's unified address space,
    so a CUDA tensor can alias it and ``index_select`` runs *on the GPU*,
    pulling only the requested rows over PCIe/NVLink-C2C.  No CPU gather, no
    staging copy, and the CPU cores stay free for sampling — the reason BGL
    and DGL's ``UnifiedTensor`` use zero-copy access for misses.
``"cpu"``
    The CPU gathers the rows (``torch.index_select``, multi-threaded) into a
    pinned staging buffer and a ``non_blocking`` copy sends them; the
    fallback when UVA is unavailable.  Two staging buffers alternate so the
    gather of batch ``k+1`` never overwrites a buffer still being copied.

On a CPU device both reduce to a plain ``index_select`` (mode ``"plain"``).
:class:`HostFeatureSource` is a callable ``ids -> rows`` usable as the
``miss_source`` of a :class:`bgl.cache.FeatureCache`.
"""
from __future__ import annotations

import logging
import time
import warnings
from typing import Optional, Union

import numpy as np
import torch

log = logging.getLogger(__name__)

MODES = ("auto", "uva", "cpu")
_PIN_CHUNK_BYTES = 64 << 20  # copy memmaps into pinned memory 64 MiB at a time


def resolve_mode(device: Union[str, torch.device], mode: str = "auto",
                 uva_available: Optional[bool] = None) -> str:
    """Which miss path runs for ``device``: ``"plain"``, ``"uva"`` or ``"cpu"``.

    Parameters
    ----------
    device : target device of the gathered rows
    mode : ``"auto"`` (UVA when it works, else CPU gather), ``"uva"`` or ``"cpu"``
    uva_available : override the probe (:func:`uva_supported`); for tests and callers
        that already probed

    Raises
    ------
    ValueError
        unknown mode, or ``"uva"`` asked for on a CUDA device where it cannot work.
    """
    if mode not in MODES:
        raise ValueError(f"gather mode must be one of {MODES}, got {mode!r}")
    device = torch.device(device)
    if device.type != "cuda":
        return "plain"  # host rows are already where the model runs
    if uva_available is None:
        uva_available = uva_supported(device)
    if mode == "uva" and not uva_available:
        raise ValueError(f"gather mode 'uva' is not supported on {device} (no unified addressing / pinning)")
    if mode == "auto":
        return "uva" if uva_available else "cpu"
    return mode


def uva_supported(device: Union[str, torch.device] = "cuda") -> bool:
    """True if a CUDA tensor can alias pinned host memory on ``device`` (probed once per call)."""
    device = torch.device(device)
    if device.type != "cuda" or not torch.cuda.is_available():
        return False
    try:
        probe = torch.arange(8, dtype=torch.float32).pin_memory()
        view = uva_view(probe, device)
        ok = bool(torch.equal(view.index_select(0, torch.tensor([1, 6], device=device)).cpu(),
                              torch.tensor([1.0, 6.0])))
        return ok
    except Exception as e:  # any failure means: use the CPU path
        log.info("UVA gather unavailable on %s: %s", device, e)
        return False


class _CudaArrayInterface:
    """Presents pinned host memory as a CUDA array (``__cuda_array_interface__`` v3).

    Holds a reference to the host tensor so the memory outlives every view.
    """

    def __init__(self, host: torch.Tensor, device_ptr: int):
        self._host = host
        self.__cuda_array_interface__ = {
            "shape": tuple(host.shape),
            "strides": tuple(s * host.element_size() for s in host.stride()),
            "typestr": _typestr(host.dtype),
            "data": (device_ptr, False),
            "version": 3,
        }


_TYPESTR = {torch.float32: "<f4", torch.float16: "<f2", torch.float64: "<f8", torch.int64: "<i8",
            torch.int32: "<i4", torch.int16: "<i2", torch.int8: "|i1", torch.uint8: "|u1"}


def _typestr(dtype: torch.dtype) -> str:
    if dtype not in _TYPESTR:
        raise TypeError(f"UVA gather supports {sorted(map(str, _TYPESTR))}, got {dtype}")
    return _TYPESTR[dtype]


def uva_view(host: torch.Tensor, device: Union[str, torch.device] = "cuda") -> torch.Tensor:
    """A CUDA tensor aliasing the pinned host tensor ``host`` (zero-copy).

    Kernels reading the view fetch the bytes from host memory over the bus.
    The device pointer comes from ``cudaHostGetDevicePointer`` (through cupy
    when installed); with unified addressing it equals the host pointer.

    Raises
    ------
    ValueError
        ``host`` is not pinned.
    """
    if not host.is_pinned():
        raise ValueError("uva_view needs a pinned host tensor (tensor.pin_memory())")
    device = torch.device(device)
    ptr = host.data_ptr()
    try:  # the documented way to get the device address of mapped host memory
        import cupy

        with cupy.cuda.Device(device.index or 0):
            ptr = int(cupy.cuda.runtime.hostGetDevicePointer(ptr, 0))
    except ImportError:
        pass  # unified addressing: the host pointer is valid on the device
    except Exception as e:  # cupy present but the runtime refused: keep the host pointer
        log.info("cudaHostGetDevicePointer failed (%s); using the host pointer (UVA)", e)
    with torch.cuda.device(device):
        view = torch.as_tensor(_CudaArrayInterface(host, ptr), device=device)
    if view.data_ptr() != ptr:
        raise RuntimeError("torch copied the host memory instead of aliasing it")
    return view


def to_host_tensor(feat: Union[np.ndarray, torch.Tensor], pin: bool) -> torch.Tensor:
    """The feature table as a CPU tensor; pinned (copied in chunks) when ``pin``.

    A read-only memmap is wrapped without a copy when not pinning, so a table
    larger than RAM still works on the CPU path.
    """
    if isinstance(feat, np.ndarray):
        if feat.ndim != 2:
            raise ValueError(f"features must be 2-D [num_nodes, dim], got shape {feat.shape}")
        with warnings.catch_warnings():  # read-only memmaps: we never write through the tensor
            warnings.simplefilter("ignore", UserWarning)
            host = torch.from_numpy(feat)
    elif isinstance(feat, torch.Tensor):
        if feat.dim() != 2:
            raise ValueError(f"features must be 2-D [num_nodes, dim], got shape {tuple(feat.shape)}")
        host = feat.cpu()
    else:
        raise TypeError(f"features must be a numpy array or torch tensor, got {type(feat).__name__}")
    if not pin or host.is_pinned():
        return host
    pinned = torch.empty(host.shape, dtype=host.dtype, pin_memory=True)
    rows = max(1, _PIN_CHUNK_BYTES // max(1, host.shape[1] * host.element_size()))
    for start in range(0, host.shape[0], rows):
        pinned[start:start + rows].copy_(host[start:start + rows])
    return pinned


class HostFeatureSource:
    """Callable ``ids -> rows`` gathering from a host-resident feature table.

    Parameters
    ----------
    feat : [num_nodes, dim] numpy array / memmap or CPU tensor
    device : device the rows are returned on
    mode : ``"auto"`` | ``"uva"`` | ``"cpu"`` (see :func:`resolve_mode`)
    node_offset : global id of row 0 (for a partition part's feature table)
    staging_rows : initial rows of each pinned staging buffer (CPU path; grows on demand)

    Notes
    -----
    ``stats()`` reports ``calls``, ``rows`` and ``bytes`` gathered and the
    seconds spent in ``__call__`` (GPU work of the UVA path is asynchronous,
    so that time excludes it unless the caller synchronises).
    """

    def __init__(self, feat: Union[np.ndarray, torch.Tensor], device: Union[str, torch.device] = "cpu",
                 mode: str = "auto", node_offset: int = 0, staging_rows: int = 1 << 14):
        self.device = torch.device(device)
        if self.device.type == "cuda" and self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        self.mode = resolve_mode(self.device, mode)
        # Only UVA needs the whole table pinned; the CPU path gathers straight from the
        # (possibly larger-than-RAM) memmap into small pinned staging buffers.
        self.host = to_host_tensor(feat, pin=self.mode == "uva")
        self.num_nodes, self.dim = int(self.host.shape[0]), int(self.host.shape[1])
        self.dtype = self.host.dtype
        self.node_offset = int(node_offset)
        self._view = uva_view(self.host, self.device) if self.mode == "uva" else None
        self._staging: list[torch.Tensor] = []
        self._events: list[Optional[torch.cuda.Event]] = [None, None]
        self._turn = 0
        if self.mode == "cpu":
            self._staging = [self._new_staging(staging_rows) for _ in range(2)]
        self.reset_stats()
        log.debug("HostFeatureSource: %d x %d %s rows, mode=%s, device=%s",
                  self.num_nodes, self.dim, self.dtype, self.mode, self.device)

    def _new_staging(self, rows: int) -> torch.Tensor:
        return torch.empty((rows, self.dim), dtype=self.dtype, pin_memory=True)

    def reset_stats(self) -> None:
        """Zero the counters reported by :meth:`stats`."""
        self._calls = self._rows = 0
        self._seconds = 0.0

    def stats(self) -> dict:
        """Counters since the last reset: ``{mode, calls, rows, bytes, seconds}`` (bytes = rows x dim x
        element size).
        """
        return {"mode": self.mode, "calls": self._calls, "rows": self._rows,
                "bytes": self._rows * self.dim * self.host.element_size(), "seconds": self._seconds}

    def _local_ids(self, ids: torch.Tensor, device: torch.device) -> torch.Tensor:
        ids = torch.as_tensor(ids)
        if ids.dim() != 1:
            raise ValueError(f"ids must be 1-D, got shape {tuple(ids.shape)}")
        if ids.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"ids must be int64 or int32, got {ids.dtype}")
        ids = ids.to(device=device, dtype=torch.int64, non_blocking=True)
        if self.node_offset:
            ids = ids - self.node_offset
        if ids.numel():
            lo, hi = (int(v) for v in torch.aminmax(ids))  # a bad id on the GPU would kill the context
            if lo < 0 or hi >= self.num_nodes:
                bad = lo if lo < 0 else hi
                raise IndexError(f"node id {bad + self.node_offset} outside "
                                 f"[{self.node_offset}, {self.node_offset + self.num_nodes})")
        return ids

    def __call__(self, ids: torch.Tensor) -> torch.Tensor:
        """Rows ``feat[ids - node_offset]`` as a ``[len(ids), dim]`` tensor on ``self.device``."""
        t0 = time.perf_counter()
        if self.mode == "uva":
            out = self._view.index_select(0, self._local_ids(ids, self.device))
        elif self.mode == "cpu":
            out = self._gather_staged(self._local_ids(ids, torch.device("cpu")))
        else:
            out = self.host.index_select(0, self._local_ids(ids, torch.device("cpu")))
        self._calls += 1
        self._rows += int(out.shape[0])
        self._seconds += time.perf_counter() - t0
        return out

    def _gather_staged(self, ids: torch.Tensor) -> torch.Tensor:
        k = self._turn
        self._turn ^= 1
        if self._events[k] is not None:
            self._events[k].synchronize()  # the copy out of this buffer has finished
        n = int(ids.shape[0])
        if self._staging[k].shape[0] < n:
            self._staging[k] = self._new_staging(max(n, 2 * self._staging[k].shape[0]))
        buf = self._staging[k][:n]
        torch.index_select(self.host, 0, ids, out=buf)
        out = buf.to(self.device, non_blocking=True)
        event = torch.cuda.Event()
        event.record(torch.cuda.current_stream(self.device))
        self._events[k] = event
        return out

    def __repr__(self) -> str:
        return (f"HostFeatureSource({self.num_nodes}x{self.dim} {self.dtype}, mode={self.mode!r}, "
                f"device={self.device})")


def pinned_h2d_bandwidth(device: Union[str, torch.device] = "cuda", nbytes: int = 256 << 20,
                         repeats: int = 5) -> float:
    """Measured host-to-device copy bandwidth from pinned memory, bytes/second (best of ``repeats``).

    The ceiling for the CPU-gather miss path: it can never beat this rate.
    """
    device = torch.device(device)
    if device.type != "cuda":
        raise ValueError(f"pinned H2D bandwidth needs a CUDA device, got {device}")
    src = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    dst = torch.empty(nbytes, dtype=torch.uint8, device=device)
    dst.copy_(src, non_blocking=True)  # warm-up
    torch.cuda.synchronize(device)
    best = float("inf")
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src, non_blocking=True)
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3)
    return nbytes / best
