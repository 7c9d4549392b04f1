"""Prefault a memory-mapped array: map its pages into this process before the first batches.

A first touch of a memmap page is a page fault even when the file is in the page cache; the
sample and fetch stages prefault the CSC and the feature rows they read at random, when the
array fits comfortably in RAM.
"""
from __future__ import annotations

import logging

log = logging.getLogger(__name__)

# Linux 5.14+ madvise advice that maps (and reads if needed) every page of a range now;
# Python 3.11's mmap module does not name it.
_MADV_POPULATE_READ = 22
# Prefault a memmap only while it takes at most this share of the available memory.
PREFAULT_MAX_MEM_FRACTION = 0.25


def prefault_memmap(arr, max_fraction: float = PREFAULT_MAX_MEM_FRACTION) -> bool:
    """Map every page of a read-only memmap into this process now, when it fits comfortably in RAM.

    Each first touch of a memmap page is a page fault, even when the file sits
    in the page cache.  Random feature rows of a fresh R-MAT 2^20 store
    (512 MiB) cost ~5-8 ms per 1024-seed batch in faults during the first
    epochs, more than the gather itself (~1.2 ms); populating the mapping up
    front took 40 ms.  Arrays larger than ``max_fraction`` of MemAvailable
    are left to fault on demand (a billion-node store must not be read whole).
    Returns True when the mapping was populated; any failure (old kernel,
    not a memmap) only logs and returns False.
    """
    mm = getattr(arr, "_mmap", None)
    if mm is None or arr.nbytes == 0:
        return False
    import psutil

    avail = psutil.virtual_memory().available  # Linux: MemAvailable
    if not avail or arr.nbytes > max_fraction * avail:
        return False
    try:
        mm.madvise(_MADV_POPULATE_READ)
    except (OSError, ValueError, AttributeError) as e:
        log.debug("could not prefault a %d-byte memmap: %s", arr.nbytes, e)
        return False
    return True
