"""Proximity orders kept on disk, so a restarted trainer reads its epoch's order instead of recomputing it.

An epoch's proximity order is a deterministic function of the graph, the seed items, the number
of BFS sequences and the epoch's seed, and it costs a few BFS passes over the trainer's part
(plus building the part's local view): measured at 3.5-5 s per trainer on R-MAT 20 and the
largest share of a resume on R-MAT 22 (bench/results/launch.md).  A trainer killed mid-epoch and
restarted resumes that same epoch, whose order its previous life already computed.  So each order
is written once computed, as a plain ``.npy`` (8 bytes per seed item), and a loader built the same
way reads it back: the resumed epoch costs a file read, and its batches are bit for bit the ones
the BFS would give, because the file *is* that BFS's output.

Files are named ``proximity-<key>-<seed>-<crc>.npy``: ``key`` hashes everything the order depends
on besides the seed (:func:`order_key`), ``crc`` is the CRC-32 of the array's bytes, checked on
read, so a truncated or damaged file is recomputed, never used.  Writes go to a temporary name
and are renamed into place (an interrupted write leaves no file under the final name).  Only the
newest :data:`KEEP` files of a key are kept: the epoch being trained and the next one (prefetched
during it), plus one spare.  Nothing here is required for correctness: a missing, unreadable or
unwritable directory costs the BFS, as without it.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import zlib
from pathlib import Path
from typing import Optional

import numpy as np

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
KEEP = 3


def array_crc32(values: Optional[np.ndarray]) -> Optional[int]:
    """CRC-32 of an int64 view of ``values`` (None stays None): a cheap identity of a seed array."""
    if values is None:
        return None
    return int(zlib.crc32(np.ascontiguousarray(values, dtype=np.int64).tobytes()))


def graph_identity(partition_dir: Optional[str], store_path: Optional[str]) -> Optional[dict]:
    """What names the graph an order was computed on: the directory, and the CRC-32 and modification
    time of its description file (``partition.json`` or a store's ``meta.json``, rewritten whenever the
    graph is written again); None when neither can be read (an in-memory graph), which turns saving off."""
    for root, name in ((partition_dir, "partition.json"), (store_path, "meta.json")):
        if root is None:
            continue
        try:
            path = Path(root) / name
            text, mtime = path.read_bytes(), path.stat().st_mtime_ns
        except OSError:
            return None
        return {"dir": os.path.realpath(root), "file": name, "crc32": int(zlib.crc32(text)), "mtime_ns": int(mtime)}
    return None


def order_key(graph: dict, ids: np.ndarray, order_nodes: Optional[np.ndarray], num_sequences: int) -> str:
    """A short hex digest of everything an epoch's proximity order depends on besides its seed."""
    parts = {"version": FORMAT_VERSION, "graph": graph, "num_ids": int(np.asarray(ids).shape[0]),
             "ids_crc32": array_crc32(ids), "order_nodes_crc32": array_crc32(order_nodes),
             "num_sequences": int(num_sequences)}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:20]


class SavedOrders:
    """The orders of one loader's key in ``directory`` (created on the first save).

    Parameters
    ----------
    directory : where the ``.npy`` files live (e.g. beside the training checkpoints).
    key : :func:`order_key` of the loader's order.
    """

    _NAME = re.compile(r"^proximity-(?P<key>[0-9A-Za-z]+)-(?P<seed>\d+)-(?P<crc>[0-9a-f]{8})\.npy$")

    def __init__(self, directory: str | os.PathLike, key: str):
        self.directory = Path(directory)
        self.key = key

    def _files(self, seed: Optional[int] = None) -> list[Path]:
        pattern = f"proximity-{self.key}-{'*' if seed is None else int(seed)}-*.npy"
        try:
            return [p for p in self.directory.glob(pattern) if self._NAME.match(p.name)]
        except OSError:
            return []

    def load(self, seed: int, num_ids: int) -> Optional[np.ndarray]:
        """The saved order of ``seed`` (int64 [num_ids]), or None when there is none that checks out."""
        for path in self._files(seed):
            try:
                order = np.load(path, allow_pickle=False)
            except (OSError, ValueError) as e:
                log.warning("ignoring unreadable saved order %s (%s); computing it again", path, e)
                continue
            crc = int(self._NAME.match(path.name).group("crc"), 16)
            if order.dtype != np.int64 or order.shape != (num_ids,) or array_crc32(order) != crc:
                log.warning("ignoring saved order %s: damaged (shape %s, dtype %s or checksum differ); "
                            "computing it again", path, order.shape, order.dtype)
                continue
            return order
        return None

    def save(self, seed: int, order: np.ndarray) -> None:
        """Write ``order`` under its final name through a temporary file, then keep the newest
        :data:`KEEP` of this key.  A failure is logged, not raised: the order was computed anyway."""
        order = np.ascontiguousarray(order, dtype=np.int64)
        name = f"proximity-{self.key}-{int(seed)}-{array_crc32(order):08x}.npy"
        tmp = self.directory / f".{name}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as fh:
                np.save(fh, order, allow_pickle=False)
            os.replace(tmp, self.directory / name)
        except OSError as e:
            log.warning("could not save the proximity order to %s (%s); a restart will compute it again",
                        self.directory, e)
            try:
                tmp.unlink(missing_ok=True)
            except OSError:  # the directory itself is what failed
                pass
            return
        self._prune()

    def _prune(self) -> None:
        """Remove this key's files but the newest :data:`KEEP`, and temporaries other processes left."""
        def age(p: Path) -> float:
            try:
                return p.stat().st_mtime
            except OSError:
                return 0.0

        stale = sorted(self._files(), key=age, reverse=True)[KEEP:]
        own = f".{os.getpid()}."
        try:
            # A SIGKILLed writer's temporary: same key, another (dead or finished) process.
            stale += [p for p in self.directory.glob(f".proximity-{self.key}-*.tmp") if own not in p.name]
        except OSError:
            pass
        for path in stale:
            try:
                path.unlink()
            except OSError:
                pass
